"""Give the Alpaca pairs of a mismatch pair file their full question: the instruction and its input.

    python results/train/heldout_inputs.py src/j1/assets/data/heldout_mismatch.jsonl \
        ../shared/data/alpaca_en_demo_llamafactory.json

`j1 synth mismatch` once took an Alpaca row's `instruction` alone as the question, so "Sort the
following list." lost its list. This rewrites, in place, the prompt of every pair whose
`meta.where` names a row of the Alpaca file as `j1.data.sources.chat_prompt` reads that row (the
question the synth commands now use), and the pair's id with it (and `meta.rejected_from`, the
id of the row whose output is the rejected answer). The responses, the other pairs and the order are
kept, so the pairs stay the same items.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from j1.data.sources import chat_prompt, pair_id
from j1.runs.atomic import write_jsonl_atomic
from j1.schema import read_pairs


def main(pairs_path: Path, alpaca_path: Path) -> int:
    rows = json.loads(alpaca_path.read_text(encoding="utf-8"))
    new_id = {pair_id(alpaca_path.name, r["instruction"]): pair_id(alpaca_path.name, chat_prompt(r, "")) for r in rows}
    pairs = read_pairs(pairs_path)
    changed = 0
    for p in pairs:
        file, line = p.meta["where"].rsplit(":", 1)
        if file != alpaca_path.name:
            continue
        row = rows[int(line) - 1]
        if row["instruction"].strip() != p.prompt.strip():
            raise SystemExit(f"{pairs_path}: pair {p.id}: {p.meta['where']} holds another instruction")
        prompt = chat_prompt(row, p.meta["where"])
        p.meta["rejected_from"] = new_id.get(p.meta["rejected_from"], p.meta["rejected_from"])
        if prompt != p.prompt:
            p.prompt, p.id = prompt, pair_id(p.source, prompt)
            changed += 1
    write_jsonl_atomic(pairs_path, pairs)
    print(f"{changed} of {len(pairs)} prompts completed with their input -> {pairs_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
