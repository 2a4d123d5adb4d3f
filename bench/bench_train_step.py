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
(``j1.backends.sharedprefix``: each distinct prompt encoded once for its G rollouts, in generation and in
the loss pass) and its step time is reported beside the other two.

    flock /tmp/j1-heavy.lock .venv/bin/python bench/bench_train_step.py --steps 3
    .venv/bin/python bench/bench_train_step.py --model tests-tiny   # tiny random model, seconds
    # real judge prompts (~600 tokens), a verdict-sized completion, 8 rollouts per prompt:
    .venv/bin/python bench/bench_train_step.py --llmbar 2 --num_generations 8 --batch 32 --max_completion_length 8
    # the Llama-3.1-8B shape on a GPU: a weightless config folder (random weights built on the GPU), LoRA,
    # ~1,000-token judge prompts from the shipped GSM8K pairs, 8 rollouts, one prompt per micro-batch:
    python bench/bench_train_step.py --device cuda --dtype bfloat16 --model CONFIG_DIR --use_peft \\
        --prompt_tokens 1000 --num_generations 8 --batch 16 --micro_batch 8 --max_completion_length 8

The device and dtype are fixed when each trainer's config is built (``GRPOConfig(use_cpu=...)``: setting
it afterwards leaves the run where it was); on CUDA every step is timed between two synchronisations
(``*_wall_step_s``) and each trainer's peak GPU memory is reported.
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
GSM8K_PAIRS = REPO / "src" / "j1" / "assets" / "data" / "gsm8k_mismatch.jsonl"  # ships with j1
WEIGHT_FILES = ("*.safetensors", "*.bin", "*.pt")


def llmbar_pairs(n: int, out: Path) -> Path:
    """The first ``n`` LLMBar dev items as a chosen/rejected pair file (real, long judge prompts)."""
    with LLMBAR.open() as src, out.open("w") as dst:
        for i, line in zip(range(n), src, strict=False):
            row = json.loads(line)
            good, bad = (row["output_1"], row["output_2"]) if row["label"] == 1 else (row["output_2"], row["output_1"])
            dst.write(json.dumps({"id": f"llmbar-{i}", "prompt": row["input"], "chosen": good, "rejected": bad,
                                  "kind": "bench", "source": "llmbar_dev", "meta": {}}) + "\n")
    return out


def long_pairs(n: int, target_tokens: int, tokenizer, out: Path) -> Path:
    """``n`` pairs from the shipped GSM8K pairs whose pav judge prompt is about ``target_tokens`` tokens:
    each request is its question after as many other worked problems (real text) as bring it there."""
    from j1.train.data import Pair, build_rows, prompt_tokens

    with GSM8K_PAIRS.open() as fh:
        rows = [json.loads(line) for line in fh]
    with out.open("w") as dst:
        for i in range(n):
            row, context, k = rows[i], [], i + 1
            while True:
                request = ("Worked problems for reference:\n\n" + "\n\n".join(context) + "\n\nQuestion: " if context
                           else "") + row["prompt"]
                judge_rows, _ = build_rows([Pair(f"long-{i}", request, row["chosen"], row["rejected"], "A")], "pav")
                if prompt_tokens(tokenizer, judge_rows[0]["prompt"]) >= target_tokens or k - i > len(rows) - 1:
                    break
                other = rows[k % len(rows)]
                context.append(other["prompt"] + "\n" + other["chosen"])
                k += 1
            dst.write(json.dumps({"id": f"long-{i}", "prompt": request, "chosen": row["chosen"],
                                  "rejected": row["rejected"], "kind": "bench", "source": "gsm8k_mismatch",
                                  "meta": {}}) + "\n")
    return out


def weightless(folder: str) -> bool:
    """A model folder with a config but no weights: the bench builds random weights from the config."""
    path = Path(folder)
    return (path / "config.json").is_file() and not any(next(path.glob(g), None) for g in WEIGHT_FILES)


def random_model(folder: str, device: str, dtype: str, seed: int = 0):
    """A model of ``folder``'s config with random weights, made directly on ``device`` in ``dtype`` (an
    8B model is never built on the CPU first); the same seed gives every trainer the same weights."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(folder)
    torch.manual_seed(seed)
    with torch.device(device):
        return AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))


class StepClock:
    """Wall time of each optimizer step (generation, loss passes, optimizer), between two CUDA
    synchronisations on a GPU, so queued kernels are counted in the step that launched them."""

    def __init__(self, cuda: bool):
        from transformers import TrainerCallback

        clock = self

        class _Callback(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                clock.begin = clock.now()

            def on_step_end(self, args, state, control, **kwargs):
                clock.times.append(clock.now() - clock.begin)

        self.cuda, self.times, self.begin, self.callback = cuda, [], 0.0, _Callback()

    def now(self) -> float:
        if self.cuda:
            import torch

            torch.cuda.synchronize()
        return time.perf_counter()


def sharing(on: bool):
    """``J1Options.share_prompt_prefix`` set explicitly: a bool, or "true"/"false" where the field takes
    ``auto|true|false`` (its default is then a string)."""
    import dataclasses

    from j1.train.options import J1Options

    default = next(f.default for f in dataclasses.fields(J1Options) if f.name == "share_prompt_prefix")
    return ("true" if on else "false") if isinstance(default, str) else on


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
    """The GRPO config of every trainer. The device is set here, at construction (TRL pins it when the
    config is built), with mixed precision matching ``--dtype``; ``--micro_batch`` rows per forward,
    ``--batch`` rows (one generation) per optimizer step."""
    from trl import GRPOConfig

    micro = a.micro_batch or a.batch
    return GRPOConfig(
        output_dir=out, num_generations=a.num_generations, per_device_train_batch_size=micro,
        gradient_accumulation_steps=a.batch // micro,
        max_completion_length=a.max_completion_length, temperature=1.0, learning_rate=1e-6, beta=0.0,
        max_steps=a.steps + 1, logging_steps=1, save_strategy="no", report_to="none",
        bf16=a.dtype == "bfloat16", fp16=a.dtype == "float16", use_cpu=a.device == "cpu",
        model_init_kwargs=None if a.random_weights else {"dtype": a.dtype}, shuffle_dataset=False, seed=0, gradient_checkpointing=False,
        dataloader_num_workers=0,
    )


def peft_config(a):
    """LoRA on every linear layer (the 8B shape trains adapters, as the GPU recipes do); None without it."""
    if not a.use_peft:
        return None
    from peft import LoraConfig

    return LoraConfig(r=a.lora_r, lora_alpha=2 * a.lora_r, lora_dropout=0.0, target_modules="all-linear",
                      task_type="CAUSAL_LM")


def run_trainer(make, a) -> dict:
    """Build a trainer with ``make(model, callbacks)``, train it, and return its step times (TRL's and the
    synchronised wall times, first step dropped) and, on CUDA, its peak GPU memory in GiB."""
    import torch

    cuda = a.device == "cuda"
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    clock = StepClock(cuda)
    model = random_model(a.model_ref, a.device, a.dtype) if a.random_weights else a.model_ref
    trainer = make(model, [clock.callback])
    trainer.train()
    out = {"trl": step_times(trainer), "wall": clock.times[1:],
           "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None}
    del trainer, model
    if cuda:
        torch.cuda.empty_cache()
    return out


def step_times(trainer) -> list[float]:
    """Per-step wall times logged by TRL (``step_time``), first (warm-up) step dropped."""
    times = [h["step_time"] for h in trainer.state.log_history if "step_time" in h]
    return times[1:]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="model folder; default the embedded SmolLM2-135M; "
                   "'tests-tiny' builds the tests' tiny random model; a folder with a config and tokenizer but "
                   "no weights gets random weights, built on --device in --dtype")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where every trainer runs")
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                   help="weights, and mixed precision when not float32")
    p.add_argument("--use_peft", action="store_true", help="train LoRA adapters on every linear layer")
    p.add_argument("--lora_r", type=int, default=16, help="LoRA rank (alpha = 2 x rank)")
    p.add_argument("--micro_batch", type=int, default=0,
                   help="rows per forward pass (default --batch); --batch rows make one optimizer step")
    p.add_argument("--prompt_tokens", type=int, default=0,
                   help="judge prompts of about this many tokens, built from the shipped GSM8K pairs")
    p.add_argument("--steps", type=int, default=3, help="timed steps per trainer (plus one warm-up step)")
    p.add_argument("--num_generations", type=int, default=4)
    p.add_argument("--batch", type=int, default=16, help="rows per step (pairs x 2 orders x G)")
    p.add_argument("--max_completion_length", type=int, default=64)
    p.add_argument("--llmbar", type=int, default=0,
                   help="use this many LLMBar dev pairs (../shared/data) instead of the short test pairs")
    p.add_argument("--json", default=None, help="also write the numbers here")
    a = p.parse_args(argv)
    if a.micro_batch and a.batch % a.micro_batch:
        p.error(f"--micro_batch {a.micro_batch} must divide --batch {a.batch}")
    if a.llmbar and a.prompt_tokens:
        p.error("--llmbar and --prompt_tokens both choose the pairs: give one")

    import torch

    if a.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: torch sees no CUDA device")
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
    a.model_ref, a.random_weights = model, weightless(model)
    tokenizer = load_tokenizer(model)
    if a.prompt_tokens:
        n_pairs = max(1, a.batch // (2 * a.num_generations)) * (a.steps + 1)
        pair_file = long_pairs(n_pairs, a.prompt_tokens, tokenizer, tmp / "pairs.jsonl")
    elif a.llmbar:
        pair_file = llmbar_pairs(a.llmbar, tmp / "pairs.jsonl")
    else:
        pair_file = REPO / "tests" / "train" / "fixtures" / "pairs.jsonl"
    pairs = load_pairs(pair_file)
    rows, _ = build_rows(pairs, "pav")
    data = Dataset.from_list(rows)
    lora = peft_config(a)

    # plain TRL
    plain = run_trainer(lambda m, cbs: GRPOTrainer(
        model=m, reward_funcs=[think_format_reward], args=grpo_args(str(tmp / "plain"), a), train_dataset=data,
        processing_class=tokenizer, peft_config=lora, callbacks=cbs), a)
    t_plain = plain["trl"]

    # j1: same settings, J1 rewards, pair sampler, pair-level advantages; j1's additions timed
    timer = Timer()
    funcs, weights = make_reward_funcs("pav")
    args = grpo_args(str(tmp / "j1"), a)
    args.reward_weights = weights
    orig = (tg.check_units, tg.verdict_advantages)
    tg.check_units, tg.verdict_advantages = timer.wrap(tg.check_units), timer.wrap(tg.verdict_advantages)
    try:
        j1 = run_trainer(lambda m, cbs: tg.J1GRPOTrainer(
            model=m, reward_funcs=[TimedReward(f, timer) for f in funcs], args=args, train_dataset=data,
            processing_class=tokenizer, peft_config=lora, callbacks=cbs,
            options=J1Options(share_prompt_prefix=sharing(False))), a)
    finally:
        tg.check_units, tg.verdict_advantages = orig
    t_j1 = j1["trl"]
    steps_total = len(t_j1) + 1
    overhead_per_step = timer.seconds / steps_total

    # j1 with each prompt encoded once for its rollouts
    args = grpo_args(str(tmp / "j1-shared"), a)
    args.reward_weights = weights
    shared = run_trainer(lambda m, cbs: tg.J1GRPOTrainer(
        model=m, reward_funcs=funcs, args=args, train_dataset=data, processing_class=tokenizer,
        peft_config=lora, callbacks=cbs, options=J1Options(share_prompt_prefix=sharing(True))), a)
    t_shared = shared["trl"]

    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    wall = {name: mean(run["wall"]) for name, run in (("plain", plain), ("j1", j1), ("shared", shared))}
    pairs_name = (f"gsm8k_mismatch, ~{a.prompt_tokens}-token prompts" if a.prompt_tokens
                  else f"llmbar_dev[:{a.llmbar}]" if a.llmbar else "tests")
    result = {
        "model": a.model or "smollm2-135m", "pairs": pairs_name,
        "prompt_tokens_mean": round(sum(prompt_tokens(tokenizer, r["prompt"]) for r in rows) / len(rows), 1),
        "rows_per_step": a.batch, "num_generations": a.num_generations,
        "max_completion_length": a.max_completion_length, "timed_steps": a.steps,
        "plain_trl_step_s": round(mean(t_plain), 3), "j1_step_s": round(mean(t_j1), 3),
        "ratio_j1_over_plain": round(mean(t_j1) / mean(t_plain), 4),
        "j1_shared_prompt_step_s": round(mean(t_shared), 3),
        "ratio_shared_over_j1": round(mean(t_shared) / mean(t_j1), 4),
        "j1_logic_s_per_step": round(overhead_per_step, 5),
        "j1_logic_share_of_step": round(overhead_per_step / mean(t_j1), 5),
        "device": a.device, "dtype": a.dtype, "random_weights": a.random_weights, "use_peft": a.use_peft,
        "lora_r": a.lora_r if a.use_peft else None, "micro_batch": a.micro_batch or a.batch,
        "prompt_tokens_target": a.prompt_tokens or None,
        "ratio_shared_over_plain": round(mean(t_shared) / mean(t_plain), 4),
        "plain_trl_wall_step_s": round(wall["plain"], 3), "j1_wall_step_s": round(wall["j1"], 3),
        "j1_shared_prompt_wall_step_s": round(wall["shared"], 3),
        "ratio_j1_over_plain_wall": round(wall["j1"] / wall["plain"], 4),
        "ratio_shared_over_plain_wall": round(wall["shared"] / wall["plain"], 4),
        "peak_gpu_gib": {"plain": plain["peak_gib"], "j1": j1["peak_gib"], "j1_shared": shared["peak_gib"]},
    }
    print(f"{a.device} {a.dtype}, {result['prompt_tokens_mean']:.0f}-token prompts, {a.batch} rows a step"
          + (f", LoRA r={a.lora_r}" if a.use_peft else ""))
    print(f"plain TRL GRPO step : {result['plain_trl_step_s']:.2f} s")
    print(f"j1 GRPO step        : {result['j1_step_s']:.2f} s")
    print(f"ratio j1 / plain    : {result['ratio_j1_over_plain']:.3f}")
    print(f"j1, prompts shared  : {result['j1_shared_prompt_step_s']:.2f} s "
          f"({result['ratio_shared_over_j1']:.3f} of the j1 step)")
    print(f"j1 pairing+reward logic: {overhead_per_step * 1000:.1f} ms/step = "
          f"{100 * result['j1_logic_share_of_step']:.2f}% of the j1 step (budget 5%)")
    print(f"wall (synchronised) : plain {wall['plain']:.2f} s, j1 {wall['j1']:.2f} s, shared {wall['shared']:.2f} s "
          f"({result['ratio_shared_over_plain_wall']:.3f} of plain)")
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
