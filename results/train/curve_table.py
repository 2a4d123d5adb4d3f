"""Window means of a j1 train log (sampled rollouts): invalid rate, accuracy, consistency, first-shown share,
thought length and step time, the table README.md gives for a run.

    .venv/bin/python results/train/curve_table.py runs/free-thought/train/log.jsonl 10
"""

import sys

from j1.demo.report import curve_points
from j1.schema import iter_jsonl

COLUMNS = [
    ("j1/invalid_rate", "invalid"),
    ("rewards/correctness/mean", "accuracy"),
    ("rewards/consistency/mean", "consistent"),
    ("j1/shown_A_share", "first-shown share"),
    ("j1/thought_words", "thought words"),
    ("completions/mean_length", "tokens"),
    ("step_time", "s/step"),
]


def main(log_path: str, window: int) -> None:
    # the training steps (a final summary line has no loss); a torn last line, as a killed run leaves, is skipped
    rows = [r for _, r in iter_jsonl(log_path, allow_torn_tail=True) if "loss" in r]
    print("| steps | " + " | ".join(name for _, name in COLUMNS) + " |")
    print("|---|" + "---:|" * len(COLUMNS))
    for start in range(0, len(rows), window):
        chunk = rows[start : start + window]
        cells = []
        for key, _ in COLUMNS:
            _, xs = curve_points(chunk, key)
            mean = sum(xs) / len(xs) if xs else float("nan")
            cells.append(f"{mean:.1f}" if key in ("step_time", "j1/thought_words", "completions/mean_length")
                         else f"{100 * mean:.1f}%" if key != "j1/shown_A_share" else f"{mean:.2f}")
        print(f"| {chunk[0]['step']}-{chunk[-1]['step']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10)
