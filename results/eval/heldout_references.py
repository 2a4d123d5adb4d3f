"""The shipped held-out pairs with the gold answer of each MATH pair as its ``reference`` (results/eval/README.md).

src/j1/assets/data/heldout_mismatch.jsonl holds 60 MATH and 60 Alpaca pairs; a MATH pair's ``meta.where`` names
its problem's line in math_train.jsonl, whose ``answer`` is the gold answer (the content of the solution's last
box, which the pair's chosen response is). Alpaca pairs have no gold answer beyond their chosen response, and
keep none. The shipped file stays as it is (j1 demo and the model card read it). Usage:

    python results/eval/heldout_references.py src/j1/assets/data/heldout_mismatch.jsonl \
      ../shared/data/math_train.jsonl OUT.jsonl
"""

from __future__ import annotations

import json
import sys

from j1.data.mathcheck import last_boxed


def main(pairs: str, math: str, out: str) -> None:
    answers = {i: json.loads(line)["answer"] for i, line in enumerate(open(math, encoding="utf-8"), start=1)}
    rows, kept = [], 0
    for line in open(pairs, encoding="utf-8"):
        row = json.loads(line)
        where = row.get("meta", {}).get("where", "")
        if where.startswith("math_train.jsonl:"):
            gold = answers[int(where.rsplit(":", 1)[1])]
            if last_boxed(row["chosen"]) != gold:  # the chosen response is that problem's own solution
                raise ValueError(f"{where}: the chosen solution's box is not the gold answer {gold!r}")
            row["reference"] = gold
            kept += 1
        rows.append(row)
    with open(out, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    print(f"{len(rows)} pairs, {kept} with a reference -> {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
