"""j1's GRPO step against plain TRL's, same settings; prints both step times and their ratio.

Both trainers see the same model, rows, seed and sampling settings. With ``shuffle_dataset=False``
TRL's RepeatSampler and j1's PairRepeatSampler yield the same rows in the same order, so the two runs
generate the same completions and differ only by j1's additions: the pair sampler, the unit check,
the J1 rewards (parse + correctness + consistency + metrics) and the pair-level advantages. The
plain run uses TRL's own ``think_format_reward``.

Step-time differences between two runs on a shared CPU are noisy, so the j1 additions are also
timed directly (wall time inside them, summed) and reported as a share of j1's step time: that
share is the number the 5% budget of issue #5 is checked against. That j1 run leaves TRL's
per-rollout encoding in place (``share_prompt_prefix=False``); a third run turns it on
(``j1.sharedprefix``: each distinct prompt encoded once for its G rollouts, in generation and in
the loss pass) and its step time is reported beside the other two.

    flock /tmp/j1-heavy.lock .venv/bin/python bench/bench_train_step.py --steps 3
    .venv/bin/python bench/bench_train_step.py --model tests-tiny   # tiny random model, seconds
    # real judge prompts (~600 tokens), a verdict-sized completion, 8 rollouts per prompt:
    .venv/bin/python bench/bench_train_step.py --llmbar 2 --num_generations 8 --batch 32 --max_completion_length 8
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LLMBAR = REPO.parent / "shared" / "data" / "llmbar_dev.jsonl"


def llmbar_pairs(n: int, out: Path) -> Path:
    """The first ``n`` LLMBar dev items as a chosen/rejected pair file (real, long judge prompts)."""
    with LLMBAR.open() as src, out.open("w") as dst:
        for i, line in zip(range(n), src, strict=False):
            row = json.loads(line)
            good, bad = (row["output_1"], row["output_2"]) if row["label"] == 1 else (row["output_2"], row["output_1"])
            dst.write(json.dumps({"id": f"llmbar-{i}", "prompt": row["input"], "chosen": good, "rejected": bad,
                                  "kind": "bench", "source": "llmbar_dev", "meta": {}}) + "\n")
    return out


class Timer:
    """Wraps callables and sums the wall time spent inside them."""

    def __init__(self):
        self.seconds = 0.0
        self.calls = 0

    def wrap(self, fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        return timed


class TimedReward:
    """A reward function with its time counted (keeps TRL's name)."""

    def __init__(self, fn, timer: Timer):
        self.fn, self.timer, self.__name__ = fn, timer, fn.__name__
        self.scorer = fn.scorer  # the batch parse the trainer's advantage step reads

    def __call__(self, *args, **kwargs):
        return self.timer.wrap(self.fn)(*args, **kwargs)


def grpo_args(out: str, a) -> object:
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=out, num_generations=a.num_generations, per_device_train_batch_size=a.batch,
        max_completion_length=a.max_completion_length, temperature=1.0, learning_rate=1e-6, beta=0.0,
        max_steps=a.steps + 1, logging_steps=1, save_strategy="no", report_to="none", bf16=False,
        use_cpu=True, shuffle_dataset=False, seed=0, gradient_checkpointing=False,
        dataloader_num_workers=0,
    )


def step_times(trainer) -> list[float]:
    """Per-step wall times logged by TRL (``step_time``), first (warm-up) step dropped."""
    times = [h["step_time"] for h in trainer.state.log_history if "step_time" in h]
    return times[1:]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="model folder; default the embedded SmolLM2-135M; "
                   "'tests-tiny' builds the tests' tiny random model")
    p.add_argument("--steps", type=int, default=3, help="timed steps per trainer (plus one warm-up step)")
    p.add_argument("--num_generations", type=int, default=4)
    p.add_argument("--batch", type=int, default=16, help="rows per step (pairs x 2 orders x G)")
    p.add_argument("--max_completion_length", type=int, default=64)
    p.add_argument("--llmbar", type=int, default=0,
                   help="use this many LLMBar dev pairs (../shared/data) instead of the short test pairs")
    p.add_argument("--json", default=None, help="also write the numbers here")
    a = p.parse_args(argv)

    from datasets import Dataset
    from trl import GRPOTrainer
    from trl.rewards import think_format_reward

    import j1.train.trl_grpo as tg
    from j1.models import load_tokenizer, resolve_model
    from j1.rewards import make_reward_funcs
    from j1.train.data import build_rows, load_pairs, prompt_tokens
    from j1.train.options import J1Options

    tmp = Path(tempfile.mkdtemp(prefix="j1-bench-"))
    if a.model == "tests-tiny":
        sys.path.insert(0, str(REPO / "tests" / "train"))
        from tiny import build_tiny_model

        model = str(build_tiny_model(tmp / "tiny"))
    else:
        model = resolve_model(a.model)
    tokenizer = load_tokenizer(model)
    pairs = load_pairs(llmbar_pairs(a.llmbar, tmp / "pairs.jsonl") if a.llmbar
                       else REPO / "tests" / "train" / "fixtures" / "pairs.jsonl")
    rows, _ = build_rows(pairs, "pav")
    data = Dataset.from_list(rows)

    # plain TRL
    plain = GRPOTrainer(model=model, reward_funcs=[think_format_reward], args=grpo_args(str(tmp / "plain"), a),
                        train_dataset=data, processing_class=tokenizer)
    plain.train()
    t_plain = step_times(plain)
    del plain

    # j1: same settings, J1 rewards, pair sampler, pair-level advantages; j1's additions timed
    timer = Timer()
    funcs, weights = make_reward_funcs("pav")
    args = grpo_args(str(tmp / "j1"), a)
    args.reward_weights = weights
    orig = (tg.check_units, tg.verdict_advantages)
    tg.check_units, tg.verdict_advantages = timer.wrap(tg.check_units), timer.wrap(tg.verdict_advantages)
    try:
        j1 = tg.J1GRPOTrainer(model=model, reward_funcs=[TimedReward(f, timer) for f in funcs], args=args,
                              train_dataset=data, processing_class=tokenizer,
                              options=J1Options(share_prompt_prefix=False))
        j1.train()
    finally:
        tg.check_units, tg.verdict_advantages = orig
    t_j1 = step_times(j1)
    steps_total = len(t_j1) + 1
    overhead_per_step = timer.seconds / steps_total
    del j1

    # j1 with each prompt encoded once for its rollouts (the default)
    args = grpo_args(str(tmp / "j1-shared"), a)
    args.reward_weights = weights
    shared = tg.J1GRPOTrainer(model=model, reward_funcs=funcs, args=args, train_dataset=data,
                              processing_class=tokenizer, options=J1Options(share_prompt_prefix=True))
    shared.train()
    t_shared = step_times(shared)

    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    result = {
        "model": a.model or "smollm2-135m", "pairs": f"llmbar_dev[:{a.llmbar}]" if a.llmbar else "tests",
        "prompt_tokens_mean": round(sum(prompt_tokens(tokenizer, r["prompt"]) for r in rows) / len(rows), 1),
        "rows_per_step": a.batch, "num_generations": a.num_generations,
        "max_completion_length": a.max_completion_length, "timed_steps": a.steps,
        "plain_trl_step_s": round(mean(t_plain), 3), "j1_step_s": round(mean(t_j1), 3),
        "ratio_j1_over_plain": round(mean(t_j1) / mean(t_plain), 4),
        "j1_shared_prompt_step_s": round(mean(t_shared), 3),
        "ratio_shared_over_j1": round(mean(t_shared) / mean(t_j1), 4),
        "j1_logic_s_per_step": round(overhead_per_step, 5),
        "j1_logic_share_of_step": round(overhead_per_step / mean(t_j1), 5),
    }
    print(f"plain TRL GRPO step : {result['plain_trl_step_s']:.2f} s")
    print(f"j1 GRPO step        : {result['j1_step_s']:.2f} s")
    print(f"ratio j1 / plain    : {result['ratio_j1_over_plain']:.3f}")
    print(f"j1, prompts shared  : {result['j1_shared_prompt_step_s']:.2f} s "
          f"({result['ratio_shared_over_j1']:.3f} of the j1 step)")
    print(f"j1 pairing+reward logic: {overhead_per_step * 1000:.1f} ms/step = "
          f"{100 * result['j1_logic_share_of_step']:.2f}% of the j1 step (budget 5%)")
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
