"""LLMBar's instructions with their better output, as question/answer rows for ``j1 synth mismatch``.

    python results/train/llmbar_answers.py ../shared/data runs/card/llmbar_answers.jsonl
    j1 synth mismatch --source runs/card/llmbar_answers.jsonl --prompt_field instruction --answer_field output \
      --kind chat-mismatch --pairs 70 --max_words 60 --seed 3 --out src/j1/assets/data/llmbar_mismatch.jsonl

Reads llmbar_dev.jsonl and llmbar_processed_dev.jsonl (LLMBar, MIT; ``label`` names the better of
``output_1``/``output_2``) and writes one row per line of input, in file order.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(shared: Path, out: Path) -> int:
    rows = []
    for name in ("llmbar_dev.jsonl", "llmbar_processed_dev.jsonl"):
        for line in (shared / name).read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            rows.append({"instruction": r["input"], "output": r["output_1"] if r["label"] == 1 else r["output_2"]})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} rows -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
