"""Sample a trained judge on training prompts and show its invalid outputs (results/train/LOG.md).

    OMP_NUM_THREADS=2 .venv/bin/python results/train/sample_invalid.py runs/train/warmup-pav-compact \
        runs/train/pav-learn14-keep/checkpoint-200 [--data F] [--rows 24] [--samples 4]

Prints each invalid completion, then a count of (verdict, first letter written) pairs. Sampling is
T = 1 with no top-k/top-p, as in training, from a fixed seed.
"""

import argparse
import collections
import re

import torch

from j1.formats.grammar import Verdict
from j1.models import load_tokenizer
from j1.probe import load_judge
from j1.rewards.core import Rollout, judge_rollout
from j1.train.data import build_rows, load_pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base")
    ap.add_argument("adapter")
    ap.add_argument("--data", default="runs/train/learn8-data/train.jsonl")
    ap.add_argument("--template", default="digest")
    ap.add_argument("--rows", type=int, default=24)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--max-prompt-tokens", type=int, default=360)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    a = ap.parse_args()
    torch.manual_seed(0)
    tok = load_tokenizer(a.base)
    model, _ = load_judge(a.adapter, base=a.base)
    model.eval()
    rows, _ = build_rows(load_pairs(a.data), "pav", tokenizer=tok, max_prompt_tokens=a.max_prompt_tokens,
                         template=a.template)
    counts = collections.Counter()
    for r in rows[: a.rows]:
        text = tok.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=False)
        ids = tok(text, return_tensors="pt", add_special_tokens=False).input_ids
        with torch.no_grad():
            out = model.generate(ids.repeat(a.samples, 1), attention_mask=torch.ones_like(ids).repeat(a.samples, 1),
                                 do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                                 max_new_tokens=a.max_new_tokens, pad_token_id=tok.pad_token_id)
        for c in out[:, ids.shape[1]:]:
            s = tok.decode(c, skip_special_tokens=True)
            verdict = judge_rollout(Rollout("p", r["order"], r["label"], s, "pav")).verdict
            first = re.findall(r"\[\[([AB])", s)[:1]
            counts[(str(verdict), tuple(first))] += 1
            if verdict is Verdict.INVALID:
                print(repr(s))
    print(counts)


if __name__ == "__main__":
    main()
