"""Verdict agreement of two j1 eval runs on the same pairs: each (pair, order)'s verdict in one run against
the other's. Used for the export trip (the local judge against its GGUF served by llama.cpp, a merged
export against its adapter).

    .venv/bin/python results/export/agreement.py RUN_A RUN_B
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from j1.formats import get_format
from j1.judging.judge import to_sample


def verdicts(run: Path) -> dict[tuple[str, str], str]:
    config = json.loads((run / "run.json").read_text())["config"]
    fmt = get_format(config["format"], config["template"])
    out = {}
    for line in (run / "judgments.jsonl").read_text().splitlines():
        row = json.loads(line)
        texts = row.get("texts") or []
        out[(row["item"], row["slot"])] = to_sample(fmt, texts[0], row["slot"]).verdict if texts else "error"
    return out


def main(a: str, b: str) -> None:
    va, vb = verdicts(Path(a)), verdicts(Path(b))
    keys = sorted(set(va) & set(vb))
    same = sum(va[k] == vb[k] for k in keys)
    differ = [(k, va[k], vb[k]) for k in keys if va[k] != vb[k]]
    print(json.dumps({"orders": len(keys), "agree": same, "agreement": round(same / len(keys), 4),
                      "only_in_a": len(set(va) - set(vb)), "only_in_b": len(set(vb) - set(va)),
                      "differ": [{"item": k[0], "order": k[1], "a": x, "b": y} for k, x, y in differ]}, indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:3])
