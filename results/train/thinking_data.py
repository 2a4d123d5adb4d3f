"""The evaluation pairs of results/train/thinking.md, each with its group as ``category``: 60 MATH pairs with
their gold answer as ``reference`` (an unseen source), 60 Alpaca pairs (other items of a trained source) and 70
LLMBar mismatch pairs (an unseen source); and the 60 MATH pairs alone. Usage (after heldout_references.py):

    python results/eval/heldout_references.py src/j1/assets/data/heldout_mismatch.jsonl \
      ../shared/data/math_train.jsonl runs/think/heldout_ref.jsonl
    python results/train/thinking_data.py runs/think/heldout_ref.jsonl src/j1/assets/data/llmbar_mismatch.jsonl \
      runs/think/eval
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(heldout: str, llmbar: str, out: str) -> None:
    rows = []
    for line in open(heldout, encoding="utf-8"):
        row = json.loads(line)
        row["category"] = "MATH" if row["kind"] == "math-mismatch" else "Alpaca"
        rows.append(row)
    rows += [{**json.loads(line), "category": "LLMBar"} for line in open(llmbar, encoding="utf-8")]
    Path(out).mkdir(parents=True, exist_ok=True)
    for name, keep in (("bar", rows), ("math", [r for r in rows if r["category"] == "MATH"]),
                       ("unseen", [r for r in rows if r["category"] != "Alpaca"])):
        with open(f"{out}/{name}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in keep)
        print(f"{out}/{name}.jsonl: {len(keep)} pairs")


if __name__ == "__main__":
    main(*sys.argv[1:])
