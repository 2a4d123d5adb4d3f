"""How often SmolLM2-135M writes a checkable ``\\boxed{}`` answer, per math prompt variant (issue 4).

Runs the first ``--problems`` GSM8K train problems x ``--samples`` samples through each variant and
prints, per variant: samples with a box, right, wrong, no_answer, and stopped-vs-truncated counts.
``current`` is whatever :func:`j1.data.synth_math.math_messages` builds now; the other variants are
the candidates compared when it was written (kept here so the comparison can be rerun).

    OMP_NUM_THREADS=1 flock /tmp/j1-heavy.lock .venv/bin/python results/synth/measure_math_prompts.py
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

from j1.backends import SamplingParams, make_backend
from j1.data.mathcheck import check_answer, parse_gold
from j1.data.sources import load_math_problems
from j1.data.synth_math import math_messages

PLAIN = ("Solve the following problem. Reason step by step, then write the final answer inside "
         "\\boxed{{}} at the end.\n\nProblem: {problem}")
EXAMPLE_Q = ("A library has 3 shelves with 14 books on each shelf. It lends out 15 books. "
             "How many books are still on the shelves?")
EXAMPLE_A = ("The shelves hold 3 * 14 = 42 books.\nAfter lending out 15, 42 - 15 = 27 books are left.\n"
             "The answer is \\boxed{27}.")
ASK = "Solve this problem step by step. End with \"The answer is \\boxed{{N}}.\"\n\nProblem: {problem}"


def plain(problem):
    return [{"role": "user", "content": PLAIN.format(problem=problem)}]


def oneshot_turns(problem):
    return [{"role": "user", "content": ASK.format(problem=EXAMPLE_Q)},
            {"role": "assistant", "content": EXAMPLE_A},
            {"role": "user", "content": ASK.format(problem=problem)}]


def oneshot_inline(problem):
    text = (ASK.split("\n\n")[0].format() + "\n\nExample problem: " + EXAMPLE_Q + "\nExample solution:\n"
            + EXAMPLE_A + "\n\nProblem: " + problem)
    return [{"role": "user", "content": text}]


def system_ask(problem):
    return [{"role": "system", "content": "You solve math word problems. Always finish with the line "
             "\"The answer is \\boxed{N}.\" where N is the final number."},
            {"role": "user", "content": ASK.format(problem=problem)}]


VARIANTS = {"plain": plain, "system_ask": system_ask, "oneshot_turns": oneshot_turns, "oneshot_inline": oneshot_inline,
            "current": math_messages}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default="../shared/data/gsm8k_train.jsonl")
    ap.add_argument("--problems", type=int, default=8)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--max_new_tokens", type=int, default=200)
    ap.add_argument("--variants", default="oneshot_turns,oneshot_inline,system_ask,plain")
    ap.add_argument("--out", default=None, help="JSONL of every sample (optional)")
    args = ap.parse_args()
    problems = load_math_problems(args.source, limit=args.problems)
    backend = make_backend(None, batch_rows=32)
    params = SamplingParams(n=args.samples, temperature=0.8, top_p=0.95, max_new_tokens=args.max_new_tokens, seed=0)
    fh = open(args.out, "w") if args.out else None
    for name in args.variants.split(","):
        t0 = time.time()
        outs = backend.generate([VARIANTS[name](p.prompt) for p in problems], params)
        counts: Counter = Counter()
        for p, comps in zip(problems, outs, strict=True):
            gold = parse_gold(p.answer)
            for c in comps:
                chk = check_answer(gold, c.text)
                counts[chk.status] += 1
                counts["finish_" + c.finish_reason] += 1
                counts["tokens"] += c.completion_tokens
                if fh:
                    fh.write(json.dumps({"variant": name, "id": p.id, "gold": gold.text, "status": chk.status,
                                         "answer": chk.answer, "finish": c.finish_reason, "text": c.text}) + "\n")
        n = len(problems) * args.samples
        boxed = counts["right"] + counts["wrong"]
        print(f"{name:15s} boxed {boxed}/{n}  right {counts['right']}  wrong {counts['wrong']}  "
              f"no_answer {counts['no_answer']}  stop {counts['finish_stop']}  length {counts['finish_length']}  "
              f"tokens {counts['tokens']}  {time.time() - t0:.0f}s", flush=True)
    if fh:
        fh.close()


if __name__ == "__main__":
    main()
