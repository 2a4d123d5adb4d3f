"""Development pairs for CPU training runs: GSM8K questions whose chosen response is the question's
own gold solution and whose rejected response is the gold solution of another question (an answer
to a different request: the extreme end of J1's noisy-prompt pairs). Short texts only, so judge
prompts stay ~300 tokens. Seeded; writes a train file and a held-out file (disjoint questions) in
the issue-4 pair line format (id, prompt, chosen, rejected, kind, source, meta).

    .venv/bin/python results/train/make_dev_pairs.py ../shared/data/gsm8k_train.jsonl runs/train/dev
"""

import json
import random
import re
import sys
from pathlib import Path


def clean(solution: str) -> str:
    text = re.sub(r"<<[^>]*>>", "", solution)  # calculator annotations
    return text.replace("#### ", "The answer is ").strip()


def main(src: str, out_dir: str, n_train: int = 400, n_heldout: int = 100, seed: int = 0) -> None:
    rows = [json.loads(line) for line in open(src, encoding="utf-8")]
    short = [r for r in rows if len(r["question"].split()) <= 30 and len(r["answer"].split()) <= 30]
    rng = random.Random(seed)
    rng.shuffle(short)
    picked = short[: n_train + n_heldout]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, part in (("train", picked[:n_train]), ("heldout", picked[n_train:])):
        with (out / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            for i, r in enumerate(part):
                other = part[(i + 1 + rng.randrange(len(part) - 1)) % len(part)]  # never itself
                row = {"id": f"gsm8k-mismatch-{name}-{i}", "prompt": r["question"], "chosen": clean(r["answer"]),
                       "rejected": clean(other["answer"]), "kind": "math-mismatch", "source": src,
                       "meta": {"seed": seed}}
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(name, len(part))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
