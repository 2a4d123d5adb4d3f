"""Does SmolLM2-135M rewrite x (rather than answer it), per rewrite prompt variant (issue 4)?

Takes the first ``--prompts`` pairs of an earlier chat run (their chosen answers are reused, so
only the rewrites are generated), writes ``--samples`` candidate rewrites per prompt with each
variant, runs the prompt checks of :mod:`j1.data.filters` on every candidate (with and without the
answer-likeness check) and prints the verdict counts. ``zero_shot`` is the instruction alone (the
first real run); ``examples`` adds the worked examples of :data:`j1.data.synth_chat.REWRITE_EXAMPLES`
as earlier turns (what ``j1 synth chat`` sends now).

    OMP_NUM_THREADS=1 flock /tmp/j1-heavy.lock .venv/bin/python results/synth/measure_chat_rewrites.py \
        --pairs runs/synth/chat.jsonl --out runs/synth2/measure_chat.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

from j1.backends import SamplingParams, make_backend
from j1.data import filters
from j1.data.synth_chat import REWRITE_EXAMPLES, rewrite_messages
from j1.schema import read_pairs

VARIANTS = {"zero_shot": (), "examples": REWRITE_EXAMPLES}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", default="runs/synth/chat.jsonl")
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--max_new_tokens", type=int, default=80)
    ap.add_argument("--variants", default="zero_shot,examples")
    ap.add_argument("--out", default=None, help="JSONL of every candidate (optional)")
    args = ap.parse_args()
    pairs = read_pairs(args.pairs)[: args.prompts]
    backend = make_backend(None, batch_rows=32)
    embedder = filters.Embedder()
    bands = filters.Bands()
    params = SamplingParams(n=args.samples, temperature=0.8, top_p=0.95, max_new_tokens=args.max_new_tokens, seed=0)
    fh = open(args.out, "w") if args.out else None
    for name in args.variants.split(","):
        t0 = time.time()
        outs = backend.generate([rewrite_messages(p.prompt, VARIANTS[name]) for p in pairs], params)
        flat = [(p, c, filters.clean_rewrite(c.text)) for p, comps in zip(pairs, outs, strict=True) for c in comps]
        cos = embedder.cosine([(p.prompt, x2) for p, _, x2 in flat] + [(x2, p.chosen) for p, _, x2 in flat])
        with_check, without = Counter(), Counter()
        for (p, c, x2), emb, aemb in zip(flat, cos[:len(flat)], cos[len(flat):], strict=True):
            lex = round(filters.lexical_similarity(p.prompt, x2), 4)
            truncated = c.finish_reason == "length" and "</request>" not in c.text.lower()
            v = filters.rewrite_verdict(p.prompt, x2, lex, emb, bands, truncated, answer_embedding=aemb) or "kept"
            v0 = filters.rewrite_verdict(p.prompt, x2, lex, emb, bands, truncated) or "kept"
            with_check[v] += 1
            without[v0] += 1
            if fh:
                fh.write(json.dumps({"variant": name, "prompt": p.prompt, "rewrite": x2, "lexical": lex,
                                     "embedding": emb, "answer_embedding": aemb, "verdict": v,
                                     "verdict_without_answer_check": v0, "raw": c.text}) + "\n")
        print(f"{name}: {len(flat)} candidates, {time.time() - t0:.0f}s", flush=True)
        print(f"  with the answer-likeness check:    {dict(sorted(with_check.items()))}", flush=True)
        print(f"  without the answer-likeness check: {dict(sorted(without.items()))}", flush=True)
    if fh:
        fh.close()


if __name__ == "__main__":
    main()
