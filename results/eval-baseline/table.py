"""Print the baseline table (markdown) from results/eval-baseline/*/metrics.json.

    .venv/bin/python results/eval-baseline/table.py
"""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def pct(x):
    return "–" if x is None else f"{100 * x:.1f}"


def main():
    print("| run | benchmark | format | n | accuracy [95% CI] | consistent | AB / BA | flip | tie | invalid | extra |")
    print("|---|---|---|---:|---|---:|---|---:|---:|---:|---|")
    for path in sorted(HERE.glob("*/metrics.json")):
        m = json.loads(path.read_text())
        o = m["overall"]
        order = o["order_accuracy"]
        extra = ""
        if "easy" in o:
            extra = f"easy {pct(o['easy'])} / normal {pct(o['normal'])} / hard {pct(o['hard'])}"
        ci = o["accuracy_ci"]
        print(f"| {path.parent.name} | {m['benchmark']} | {m['format']} | {m['n']} | {pct(o['accuracy'])} "
              f"[{pct(ci[0])}, {pct(ci[1])}] | {pct(o['consistent_accuracy'])} | "
              f"{pct(order['AB']) + ' / ' + pct(order['BA']) if order else '–'} | {pct(o['flip_rate'])} | "
              f"{pct(o['tie_rate'])} | {pct(o['invalid_rate'])} | {extra} |")


if __name__ == "__main__":
    main()
