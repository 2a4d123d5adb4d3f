"""Specs of ``j1 train`` (the J1 section beside TRL's GRPOConfig) and ``j1 warmup``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from j1.device import parse_setting, share_prompt
from j1.formats.base import INPUTS
from j1.formats.spec import check_template, template_field

# The choices live with the rewards and the trainer's options object (light modules: no torch import).
from j1.rewards.core import CONSISTENCY_MODES, FORMULATIONS
from j1.train.options import VERDICT_KINDS, J1Options
from j1.train.options import check_choice as _check_choice
from j1.train.rollout_correction import IMPORTANCE_SAMPLING

if TYPE_CHECKING:  # TRL (and torch) load only where training runs
    from trl import GRPOConfig, ModelConfig

JUDGE_INPUTS_HELP = ("Also show the judge each pair's criteria and/or reference (a gold answer; j1 synth keeps the "
                     "source's) where it has one; judge.json records them (inputs). Default: none, J1's prompt.")


def judge_inputs_field():
    return field(default_factory=list, metadata={"help": JUDGE_INPUTS_HELP})


def check_judge_inputs(values: list[str]) -> None:
    """``--judge_inputs``: distinct names of ``j1.formats.base.INPUTS``.

    >>> check_judge_inputs(["reference", "gold"])
    Traceback (most recent call last):
    ...
    ValueError: --judge_inputs gold: choose from criteria, reference
    """
    for value in values:
        if value not in INPUTS:
            raise ValueError(f"--judge_inputs {value}: choose from {', '.join(INPUTS)}")
    if len(set(values)) != len(values):
        raise ValueError(f"--judge_inputs {' '.join(values)}: an input is named twice")


@dataclass
class TrainSpec:
    """``j1 train``: the J1 section. GRPOConfig (TRL) and ModelConfig keys are parsed beside it, so
    every TRL option works in the YAML or as a flag (``--learning_rate 1e-6``, ``--use_peft``)."""

    # Fields that `--help` leaves to `--help-all`: diagnostics, and the multi-GPU launch settings a GPU recipe
    # states once (its process count, ZeRO stage and signal grace), not choices made run by run.
    # judge_inputs is a recipe choice, but --help is kept to 150 lines: it is in --help-all and docs/training.md.
    ADVANCED: ClassVar[frozenset[str]] = frozenset({"reward_trace", "world_size", "zero_stage",
                                                    "signal_grace_seconds", "judge_inputs"})

    formulation: str = field(
        default="pav", metadata={"help": f"Judge formulation: {', '.join(FORMULATIONS)} (multitask = pas + pos)."}
    )
    train_file: str | None = field(
        default=None,
        metadata={"help": "Training pairs: `j1 synth mix` rows (both orders), or a prompt/chosen/rejected pair file."},
    )
    template: str = template_field()
    judge_inputs: list[str] = judge_inputs_field()
    assistant_prefill: str | None = field(
        default=None,
        metadata={"help": "Fixed start of every answer (e.g. a thought and '<answer>[['): only the rest is sampled and "
                  "trained; the rewards read prefill + continuation."},
    )
    consistency: str = field(
        default="expected",
        metadata={"help": "Consistency reward: expected (x mean correctness of the other order) or index (rollout k "
                  "with rollout k)."})
    correctness_weight: float = field(default=1.0, metadata={"help": "Weight of the correctness reward."})
    consistency_weight: float | None = field(
        default=None, metadata={"help": "Weight of the consistency reward (default 1 for pav/pavs, 0 otherwise)."}
    )
    format_weight: float = field(
        default=0.0, metadata={"help": "Weight of a format reward (the paper's ablation; 0 = off)."}
    )
    advantage_groups: str = field(
        default="pair",
        metadata={"help": "Rollouts that share a GRPO baseline: prompt (TRL's own), pair (both orders' 2G "
                  "rollouts) or couple (rollout k of AB with rollout k of BA)."},
    )
    loss_span: str = field(
        default="all",
        metadata={"help": "Completion tokens the policy loss trains: all, or answer (the answer span alone, "
                  "normalised by its tokens; the thought conditions it)."},
    )
    importance_sampling: str = field(
        default="none",
        metadata={"help": "vLLM rollouts' importance-sampling correction: none (the J1 paper's GRPO), token_truncate, "
                  "token_mask, sequence_truncate or sequence_mask (TRL's default; drops long rollouts first)."},
    )
    invalid_advantage: float | None = field(
        default=None,
        metadata={"help": "pair/couple groups: a rollout with no parseable verdict leaves the baseline and gets "
                  "this advantage (e.g. -1). Unset = scored 0 like a wrong verdict (the paper)."},
    )
    position_balance: float = field(
        default=0.0,
        metadata={"help": "Strength of a restoring force on the judge's position preference (leave-one-out batch "
                  "imbalance); 0 = off."},
    )
    max_pairs: int | None = field(default=None, metadata={"help": "Use at most this many training pairs."})
    max_prompt_tokens: int | None = field(
        default=None,
        metadata={"help": "Drop pairs whose judge prompt exceeds this many tokens. Prompts that cannot fit the "
                  "engine's context with max_completion_length are dropped in any case (counted in the log, "
                  "run.json and --dry_run)."},
    )
    share_prompt_prefix: str = field(
        default="auto",
        metadata={"help": "Encode each judge prompt once for its G rollouts (TRL's numbers at 1/G of the prompt "
                  "cost): auto = on a CPU only (run.json records it); true; false = TRL's own passes."},
    )
    pair_seed: int = field(
        default=0, metadata={"help": "Seed of the side the chosen response is placed on (chosen/rejected input)."}
    )
    lora_last_layers: int | None = field(
        default=None,
        metadata={"help": "With --use_peft: LoRA on the last N decoder blocks only (backward stops there: a "
                  "cheaper CPU step)."},
    )
    init_adapter: str | None = field(
        default=None,
        metadata={"help": "With --use_peft: start the LoRA from this adapter (a judge folder or a shipped judge's "
                  "name, e.g. j1-135m) instead of from zero; its LoRA settings must match this run's. With beta > 0 "
                  "the KL term is measured against this starting adapter (a frozen copy)."},
    )
    max_minutes: float | None = field(
        default=None,
        metadata={"help": "Stop and save after this many minutes (continue with --resume_from_checkpoint latest)."},
    )
    collapse_guard: float | None = field(
        default=0.9,
        metadata={"help": "Stop when this share of thoughts repeat across prompts."},
    )
    save_minutes: float | None = field(
        default=None,
        metadata={"help": "Also checkpoint every M minutes of training, so a kill loses at most M; SIGTERM and "
                  "SIGINT always checkpoint."},
    )
    signal_grace_seconds: float | None = field(
        default=None,
        metadata={"help": "Seconds between a SIGTERM and the kill that follows it: under torchrun (accelerate launch "
                  "on several processes) TORCH_ELASTIC_SHUTDOWN_TIMEOUT, which the GPU launch commands set to this "
                  "(a launch with less stops at start). On a signal j1 saves at the end of the optimizer step when "
                  "the rest of the step and a save fit inside it, else at the next micro-step (the steps done so "
                  "far). Unset = torchrun's timeout under torchrun (30 s unless set), else the end of the step."},
    )
    world_size: int | None = field(
        default=None,
        metadata={"help": "Training processes (GPUs) the recipe is written for: --dry_run checks it, and a launch "
                  "with another count stops (prompts per step would change). Unset = any."},
    )
    zero_stage: int | None = field(
        default=None, metadata={"help": "DeepSpeed ZeRO stage of the recipe's accelerate config (0-3), for "
                                "--dry_run's memory estimate. Unset = no DeepSpeed."},
    )
    dry_run: bool = field(
        default=False,
        metadata={"help": "Check the recipe on the CPU without generating: data, prompt lengths, pair geometry, "
                  "rollouts per step, memory per GPU."},
    )
    reward_trace: bool = field(
        default=False,
        metadata={"help": "Write the (pair_id, order) rows of every reward call per process to "
                  "OUTPUT_DIR/reward_trace-RANK.jsonl (shows both orders are rewarded together)."},
    )

    def __post_init__(self) -> None:
        _check_choice("formulation", self.formulation, FORMULATIONS)
        _check_choice("consistency", self.consistency, CONSISTENCY_MODES)
        _check_choice("importance_sampling", self.importance_sampling, IMPORTANCE_SAMPLING)
        check_template(self.template)
        check_judge_inputs(self.judge_inputs)
        if not self.train_file:
            raise ValueError("j1 train needs --train_file (pairs from `j1 synth mix`)")
        for name in ("max_pairs", "max_prompt_tokens", "lora_last_layers", "world_size"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name} {value}: must be >= 1 (or unset)")
        check_save_minutes(self.save_minutes)
        if self.collapse_guard is not None and not 0 < self.collapse_guard <= 1:
            raise ValueError(f"--collapse_guard {self.collapse_guard}: must be in (0, 1] (or unset for no guard)")
        if self.signal_grace_seconds is not None and not 0 < self.signal_grace_seconds < float("inf"):
            raise ValueError(f"--signal_grace_seconds {self.signal_grace_seconds}: must be > 0 (or unset)")
        if self.zero_stage is not None and self.zero_stage not in (0, 1, 2, 3):
            raise ValueError(f"--zero_stage {self.zero_stage}: choose 0, 1, 2 or 3 (or unset)")
        if self.formulation == "pos" and self.consistency_weight:
            raise ValueError("--consistency_weight: pos has no consistency reward; leave it unset")
        self.share_prompt_prefix = parse_setting("share_prompt_prefix", self.share_prompt_prefix)
        self.options()  # the named choices, checked here once

    def options(self, device: str = "cpu", use_vllm: bool = False) -> J1Options:
        """The frozen options object the trainer takes, with the device's choices made for ``device``;
        under vLLM the prompts are not shared (vLLM generates, and TRL's passes stay its own).

        >>> spec = TrainSpec(train_file="x.jsonl", share_prompt_prefix="true")
        >>> spec.options("cuda").share_prompt_prefix, spec.options("cuda", use_vllm=True).share_prompt_prefix
        (True, False)
        """
        return J1Options(
            formulation=self.formulation, advantage_groups=self.advantage_groups, loss_span=self.loss_span,
            invalid_advantage=self.invalid_advantage, position_balance=self.position_balance,
            share_prompt_prefix=share_prompt(self.share_prompt_prefix, device) and not use_vllm,
        )


def check_save_minutes(value: float | None) -> None:
    """``--save_minutes``: unset, or a positive number of minutes.

    >>> check_save_minutes(0)
    Traceback (most recent call last):
    ...
    ValueError: --save_minutes 0: must be > 0 (or unset: checkpoints by steps only)
    """
    if value is not None and not 0 < value < float("inf"):
        raise ValueError(f"--save_minutes {value}: must be > 0 (or unset: checkpoints by steps only)")


# torchrun's default wait between forwarding a signal to its workers and killing them (torch.distributed.run)
TORCHRUN_SHUTDOWN_TIMEOUT = 30.0


def launcher_grace(value: float | None, env: Mapping[str, str]) -> float | None:
    """The grace period of a run (``--signal_grace_seconds``) checked against its launcher, from the
    launcher's environment ``env``: under torchrun (``TORCHELASTIC_RUN_ID`` set) the agent SIGKILLs its
    workers ``TORCH_ELASTIC_SHUTDOWN_TIMEOUT`` seconds (30 by default) after forwarding a signal, so the
    grace is that when unset, and may not exceed it.

    >>> launcher_grace(None, {}), launcher_grace(None, {"TORCHELASTIC_RUN_ID": "r"})
    (None, 30.0)
    >>> launcher_grace(600, {"TORCHELASTIC_RUN_ID": "r", "TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "900"})
    600
    >>> launcher_grace(600, {"TORCHELASTIC_RUN_ID": "r"})
    Traceback (most recent call last):
    ...
    ValueError: --signal_grace_seconds 600: torchrun kills the processes 30 s after a signal (TORCH_ELASTIC_SHUTDOWN_TIMEOUT unset: its default); launch with TORCH_ELASTIC_SHUTDOWN_TIMEOUT=600
    """
    if "TORCHELASTIC_RUN_ID" not in env:
        return value
    raw = env.get("TORCH_ELASTIC_SHUTDOWN_TIMEOUT")
    try:
        agent = float(raw) if raw else TORCHRUN_SHUTDOWN_TIMEOUT
    except ValueError:
        raise ValueError(f"TORCH_ELASTIC_SHUTDOWN_TIMEOUT={raw!r}: not a number of seconds") from None
    if value is None:
        return agent
    if value > agent:
        where = f"TORCH_ELASTIC_SHUTDOWN_TIMEOUT={raw}" if raw else "TORCH_ELASTIC_SHUTDOWN_TIMEOUT unset: its default"
        raise ValueError(f"--signal_grace_seconds {value:g}: torchrun kills the processes {agent:g} s after a signal "
                         f"({where}); launch with TORCH_ELASTIC_SHUTDOWN_TIMEOUT={value:g}")
    return value


class TrainRun(NamedTuple):
    """What ``j1 train`` parses and :func:`j1.train.recipe.run_train` takes: the J1 section and TRL's
    two argument objects (GRPOConfig and ModelConfig keys pass through)."""

    spec: TrainSpec
    grpo: GRPOConfig
    model: ModelConfig


@dataclass
class WarmupSpec:
    """``j1 warmup``: a short SFT (TRL SFTTrainer; every SFTConfig key works) before J1 GRPO. Label-free
    by default (random verdicts/scores and short thoughts: the output format), or on gold verdicts
    (the better response named: the task); reports the valid-output rate and accuracy before and
    after on held-out prompts."""

    formulation: str = field(default="pav", metadata={"help": f"Format to teach: {', '.join(FORMULATIONS)}."})
    template: str = template_field()
    judge_inputs: list[str] = judge_inputs_field()
    train_file: str | None = field(default=None, metadata={"help": "Pairs to build prompts from (same as j1 train)."})
    max_pairs: int | None = field(default=None, metadata={"help": "Use at most this many pairs."})
    max_prompt_tokens: int | None = field(default=None, metadata={"help": "Drop pairs with longer judge prompts."})
    heldout_pairs: int = field(
        default=16, metadata={"help": "Pairs kept out of the SFT data to measure the valid-output rate on."}
    )
    check_samples: int = field(default=2, metadata={"help": "Samples per held-out prompt for the valid rate."})
    check_temperature: float = field(default=1.0, metadata={"help": "Sampling temperature for the valid rate."})
    check_max_new_tokens: int = field(default=64, metadata={"help": "Token budget per check sample."})
    warmup_seed: int = field(default=0, metadata={"help": "Seed of the random verdicts, scores and thoughts."})
    pair_seed: int = field(default=0, metadata={"help": "Seed for which side the chosen response is shown on."})
    verdicts: str = field(
        default="random", metadata={"help": "random (label-free: the format only), gold (the better response "
                                    "named, scores ranking it first; pairwise formulations) or rationale (gold, "
                                    "after the pair's own thought: pairs with thoughts, j1 synth thoughts)."})
    assistant_prefill: str | None = field(
        default=None,
        metadata={"help": "Fixed start of every answer, as in j1 train: the prompt ends with it and only the rest "
                  "is trained (a prefill that closes the thought fixes the thought)."},
    )
    lora_last_layers: int | None = field(
        default=None, metadata={"help": "With --use_peft: LoRA on the last N decoder blocks only."})
    loss_tokens: int | None = field(
        default=None,
        metadata={"help": "Train only the first N tokens of each completion (after the recipe's prefill, 1 = the "
                  "verdict letter). Unset = the whole completion."},
    )
    max_minutes: float | None = field(
        default=None,
        metadata={"help": "Stop after this many minutes of training and save the judge as if done (a CPU time box); "
                  "a killed run continues with --resume_from_checkpoint latest."},
    )
    save_minutes: float | None = field(
        default=None,
        metadata={"help": "Also checkpoint every M minutes of training (besides --save_steps), as j1 train."},
    )
    init_adapter: str | None = field(
        default=None,
        metadata={"help": "With --use_peft: start the LoRA from this adapter (a judge folder or a shipped judge's "
                  "name, e.g. j1-135m) instead of from zero, as j1 train; its LoRA settings must match."},
    )
    merge_lora: bool = field(
        default=True,
        metadata={"help": "With --use_peft: save the model with the LoRA merged (true; j1 train "
                  "--model_name_or_path DIR) or the adapter alone with its base in judge.json (false; j1 train "
                  "--init_adapter DIR continues it)."},
    )

    def __post_init__(self) -> None:
        _check_choice("formulation", self.formulation, FORMULATIONS)
        _check_choice("verdicts", self.verdicts, VERDICT_KINDS)
        if self.verdicts in ("gold", "rationale") and self.formulation not in ("pav", "pas", "pavs"):
            raise ValueError(f"--verdicts {self.verdicts}: --formulation {self.formulation!r} has no verdict to name; "
                             "use pav, pas or pavs")
        if self.verdicts == "rationale" and self.assistant_prefill and "</think>" in self.assistant_prefill:
            raise ValueError("--verdicts rationale: --assistant_prefill closes the thought, so the pair's own thought "
                             "cannot be trained; use '<think>' or none")
        for name in ("lora_last_layers", "loss_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name} {value}: must be >= 1 (or unset)")
        check_save_minutes(self.save_minutes)
        if self.max_minutes is not None and self.max_minutes <= 0:
            raise ValueError(f"--max_minutes {self.max_minutes}: must be > 0 (or unset)")
        check_template(self.template)
        check_judge_inputs(self.judge_inputs)
        if not self.train_file:
            raise ValueError("j1 warmup needs --train_file (pairs from `j1 synth mix`)")
        if not 0 <= self.check_temperature < float("inf"):
            raise ValueError(f"--check_temperature {self.check_temperature}: must be >= 0 (0 = greedy)")
        if self.heldout_pairs < 0 or self.check_samples < 1 or self.check_max_new_tokens < 1:
            raise ValueError("--heldout_pairs must be >= 0, --check_samples and --check_max_new_tokens >= 1")
