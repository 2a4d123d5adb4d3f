"""Copy the small artefacts of the real synth run (runs/synth/) into results/synth/: stats, the mix
stats, and a few examples per outcome (pairs and each drop reason), texts cut to 1,200 characters.

    .venv/bin/python results/synth/summarize.py
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path

from j1.schema import iter_jsonl, write_json_atomic

RUNS = Path("runs/synth")
OUT = Path("results/synth")
PER_OUTCOME = 3
CUT = 1200


def _cut(obj):
    if isinstance(obj, str):
        return obj if len(obj) <= CUT else obj[:CUT] + f" …[{len(obj) - CUT} more chars]"
    if isinstance(obj, dict):
        return {k: _cut(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_cut(v) for v in obj]
    return obj


def examples(kind: str) -> dict[str, list]:
    by_outcome: dict[str, list] = defaultdict(list)
    for name, key in ((f"{kind}.jsonl", None), (f"{kind}.dropped.jsonl", "reason")):
        path = RUNS / name
        if not path.exists():
            continue
        for _, rec in iter_jsonl(path, allow_torn_tail=True):
            outcome = rec[key] if key else "pair"
            if len(by_outcome[outcome]) < PER_OUTCOME:
                by_outcome[outcome].append(_cut(rec))
    return dict(by_outcome)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name in ("math.stats.json", "chat.stats.json", "mix.stats.json"):
        if (RUNS / name).exists():
            shutil.copy(RUNS / name, OUT / name)
    for kind in ("math", "chat"):
        write_json_atomic(OUT / f"{kind}_examples.json", examples(kind))


if __name__ == "__main__":
    main()
