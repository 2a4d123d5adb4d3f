"""Reward curve of a j1 train run: reads OUTPUT_DIR/log.jsonl, writes a PNG.

    .venv/bin/python results/train/plot_curve.py runs/train/pav-dev/log.jsonl results/train/reward_curve.png
"""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from j1.demo.report import curve_points  # noqa: E402
from j1.schema import iter_jsonl  # noqa: E402

SERIES = [
    ("reward", "total reward (mean)"),
    ("rewards/correctness/mean", "correctness"),
    ("rewards/consistency/mean", "consistency"),
    ("j1/invalid_rate", "invalid rate"),
    ("j1/flip_rate", "flip rate (rollout k, AB vs BA)"),
    ("j1/shown_A_share", "share of verdicts = first shown"),
]


def smooth(xs, k=5):
    return [sum(xs[max(0, i - k + 1) : i + 1]) / len(xs[max(0, i - k + 1) : i + 1]) for i in range(len(xs))]


def main(log_path: str, png: str) -> None:
    rows = [r for _, r in iter_jsonl(log_path, allow_torn_tail=True) if "loss" in r]
    fig, axes = plt.subplots(2, 3, figsize=(13, 6.5), sharex=True)
    for ax, (key, title) in zip(axes.flat, SERIES, strict=True):
        steps, vals = curve_points(rows, key)
        if steps:
            ax.plot(steps, vals, alpha=0.35, label="per step")
            ax.plot(steps, smooth(vals), label="mean of last 5")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("GRPO step")
    axes[0][0].legend()
    fig.suptitle(log_path)
    fig.tight_layout()
    fig.savefig(png, dpi=90)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
