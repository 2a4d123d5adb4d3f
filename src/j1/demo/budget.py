"""How ``j1 demo`` spends its minutes: the stages around training, what is left to train, the plan it
makes before training and the warning for a budget fp32 training will not learn in. Pure arithmetic,
tested by tables (tests/test_demo.py)."""

from __future__ import annotations

import math

# Loading the trained judge, the trainer's set-up and final save (outside its time limit) and the report.
OVERHEAD_MINUTES = 0.5
# A budget too small for the stages around training still trains this long: a demo of J1 needs some steps.
MIN_TRAIN_MINUTES = 0.5

# The budget the shipped recipe needs to learn in fp32 on a small CPU, stages included (measured in
# results/demo/README.md, "Without native bf16").
FP32_MINUTES = 150


def budget_warning(minutes: float, bf16: bool) -> str | None:
    """The warning for a budget that fp32 training (no native bf16, or ``--bf16 false``) is unlikely to learn in.

    >>> budget_warning(90, bf16=False)
    'training runs in fp32 (no native bf16, or --bf16 false), where the recipe needs more steps to learn than in \
bf16; 90 min will likely stop before that: give --minutes 150 or more (results/demo/README.md)'
    >>> budget_warning(90, bf16=True), budget_warning(0, bf16=False), budget_warning(150, bf16=False)
    (None, None, None)
    """
    if bf16 or minutes <= 0 or minutes >= FP32_MINUTES:
        return None
    return (f"training runs in fp32 (no native bf16, or --bf16 false), where the recipe needs more steps to learn "
            f"than in bf16; {minutes:g} min will likely stop before that: give --minutes {FP32_MINUTES} or more "
            "(results/demo/README.md)")


def reserve_minutes(eval_before: float, example_before: float) -> float:
    """Minutes kept for the stages after training: eval-after asks the same prompts the same way of a
    same-size model, so it takes about as long as eval-before; likewise the example; plus the overhead.

    >>> reserve_minutes(2.0, 0.25)  # 2 + 0.25 + 0.5
    2.75
    """
    return eval_before + example_before + OVERHEAD_MINUTES


def plan_minutes(minutes: float, seconds_per_prompt: float, eval_prompts: int, example_minutes: float) -> dict:
    """The demo's plan before training starts: each evaluation's minutes (its prompts at the speed measured
    on a warm batch of them, ``j1.demo.runner.warm_batch``), the stages around training (the examples as long as
    the first one took, with its model's load), and what is left to train.

    Raises:
        ValueError: ``minutes`` leaves less than ``MIN_TRAIN_MINUTES`` to train, naming a budget that fits.

    >>> plan_minutes(30, 1.5, 80, 0.2)  # 80 prompts at 1.5 s: 2 min an evaluation
    {'eval': 2.0, 'around': 4.9, 'train': 25.1}
    >>> plan_minutes(5, 1.5, 80, 0.2)
    Traceback (most recent call last):
    ...
    ValueError: --minutes 5 leaves no time to train: the evaluations before and after it (80 prompts each) and the examples need about 4.9 min here; give --minutes 6 or more, fewer --heldout_pairs, or --minutes 0 for the quick demo
    """
    evaluation = seconds_per_prompt * eval_prompts / 60
    around = 2 * evaluation + 2 * example_minutes + OVERHEAD_MINUTES
    left = minutes - around
    if left < MIN_TRAIN_MINUTES:
        need = math.ceil(around + MIN_TRAIN_MINUTES)
        raise ValueError(f"--minutes {minutes:g} leaves no time to train: the evaluations before and after it "
                         f"({eval_prompts} prompts each) and the examples need about {around:.1f} min here; give "
                         f"--minutes {need} or more, fewer --heldout_pairs, or --minutes 0 for the quick demo")
    return {"eval": round(evaluation, 2), "around": round(around, 2), "train": round(left, 2)}


def train_budget(total: float, spent: float, reserve: float, trained: float = 0.0) -> float:
    """Minutes to give ``j1 train --max_minutes``: the budget less the stages done, the reserve and what
    training already took (a resumed run), but at least ``MIN_TRAIN_MINUTES``.

    >>> train_budget(10, 1.5, 2.75), train_budget(10, 1.5, 2.75, trained=4), train_budget(3, 1.5, 2.75)
    (5.75, 1.75, 0.5)
    """
    return max(MIN_TRAIN_MINUTES, total - spent - reserve - trained)
