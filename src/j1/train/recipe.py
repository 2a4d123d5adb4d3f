"""The ``j1 train`` recipe: pairs -> judge prompts in both orders -> J1GRPOTrainer -> a saved judge.

``run_train`` is what the command runs; ``build_trainer`` is the part tests and benchmarks reuse.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import signal
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trl import GRPOConfig, ModelConfig

    from j1.train.spec import TrainSpec

log = logging.getLogger(__name__)


def resolve_checkpoint(value: str | None, output_dir: str) -> str | None:
    """``--resume_from_checkpoint``: a checkpoint folder, or ``latest``/``true`` for the newest complete
    one in ``output_dir`` (a kill while saving leaves a folder without ``trainer_state.json``, which is
    skipped); None to start fresh."""
    if value is None or str(value).lower() in {"", "false", "none"}:
        return None
    if str(value).lower() in {"latest", "true"}:
        last = latest_checkpoint(output_dir)
        if last is None:
            raise FileNotFoundError(f"--resume_from_checkpoint {value}: no complete checkpoint-* folder in {output_dir}")
        return last
    if not os.path.isdir(value):
        raise FileNotFoundError(f"--resume_from_checkpoint {value}: not a folder")
    return value


def latest_checkpoint(output_dir: str | os.PathLike) -> str | None:
    """The highest-numbered ``checkpoint-N`` in ``output_dir`` that holds a whole ``trainer_state.json``
    (the trainer writes it last, so it marks a complete checkpoint; a kill while writing it tears it)."""
    from j1.train.resume import whole_json

    found = []
    for path in Path(output_dir).glob("checkpoint-*"):
        step = path.name.removeprefix("checkpoint-")
        if step.isdigit() and whole_json(path / "trainer_state.json"):
            found.append((int(step), str(path)))
    return max(found)[1] if found else None


def agreed_resume(value: str | None, output_dir: str, device=None) -> tuple[str | None, dict]:
    """The checkpoint a start resumes from and what it holds (``j1.train.resume.checkpoint_progress``), as
    the main process reads them, the same on every process (issue 52). Only the main process writes
    ``trainer_state.json``, so with storage per node the others cannot tell which checkpoint is whole and
    would each resume elsewhere. Every process must then hold the folder; when one does not, all stop
    with the same error instead of some waiting for it."""
    from j1.train.ranks import from_main, max_over_processes
    from j1.train.resume import checkpoint_progress

    resume, held = from_main(lambda: (lambda r: (r, checkpoint_progress(r)))(resolve_checkpoint(value, output_dir)))
    if resume is not None and max(max_over_processes([not os.path.isdir(resume)], device)):
        raise FileNotFoundError(f"--resume_from_checkpoint {value}: {resume} is missing on some process (storage per "
                                "node: copy the checkpoint there, or train with --save_on_each_node true)")
    return resume, held


def restrict_lora_layers(peft_config, model_path: str, last: int):
    """Limit a LoRA config to the linear layers of the last ``last`` decoder blocks of ``model_path``.

    peft refuses ``layers_to_transform`` with ``target_modules="all-linear"``, so "all-linear" is
    expanded here to the names of the linear layers inside one decoder block (read from an empty,
    weightless copy of the model).
    """
    import torch.nn as nn
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(model_path)
    n_layers = config.num_hidden_layers
    if not 1 <= last <= n_layers:
        raise ValueError(f"--lora_last_layers {last}: the model has {n_layers} decoder blocks")
    targets = peft_config.target_modules
    if targets in ("all-linear", {"all-linear"}, ["all-linear"]):
        with init_empty_weights():
            model = AutoModelForCausalLM.from_config(config)
        block = model.model.layers[0]
        targets = sorted({name.rsplit(".", 1)[-1] for name, mod in block.named_modules() if isinstance(mod, nn.Linear)})
    peft_config.target_modules = list(targets)
    peft_config.layers_to_transform = list(range(n_layers - last, n_layers))
    return peft_config


def lora_config(model_args, model_path: str, last_layers: int | None, init_adapter: str | None = None):
    """The LoRA config of a run (TRL's ``get_peft_config``; None without ``--use_peft``), limited to the
    last ``last_layers`` decoder blocks when given (``restrict_lora_layers``); an ``init_adapter`` to start
    from needs a LoRA to load into."""
    from trl import get_peft_config

    peft_config = get_peft_config(model_args)
    if init_adapter is not None and peft_config is None:
        raise ValueError("--init_adapter needs --use_peft")
    if last_layers is not None:
        if peft_config is None:
            raise ValueError("--lora_last_layers needs --use_peft")
        peft_config = restrict_lora_layers(peft_config, model_path, last_layers)
    return peft_config


def init_lora(model, name: str, base_path: str) -> None:
    """Copy the LoRA weights of the adapter ``name`` (a judge folder or a shipped judge) into ``model``'s
    fresh LoRA: every LoRA weight must be set and every adapter tensor used, so only a matching
    adapter (same rank, targets and layers) on the same base loads."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    from j1.judging.judges import judge_weights

    found = judge_weights(name)
    weights = Path(found.adapter) / "adapter_model.safetensors" if found.adapter else None
    if weights is None or not weights.is_file():
        raise ValueError(f"--init_adapter {name}: no adapter_model.safetensors there (a LoRA judge folder or name)")
    if Path(found.weights).resolve() != Path(base_path).resolve():
        raise ValueError(f"--init_adapter {name}: an adapter of {found.weights}, not of {base_path}")
    mismatch = (f"--init_adapter {name}: its LoRA does not match this run's (lora_r, lora_target_modules, "
                "lora_last_layers)")
    state = load_file(weights)
    try:
        result = set_peft_model_state_dict(model, state)
    except RuntimeError as exc:  # torch's size mismatch: another rank
        raise ValueError(f"{mismatch}: {str(exc).count('size mismatch')} tensors of another shape") from None
    missing = [k for k in result.missing_keys if "lora_" in k]
    if result.unexpected_keys or missing:
        raise ValueError(f"{mismatch}: {len(missing)} LoRA weights unset, {len(result.unexpected_keys)} adapter "
                         "tensors unused")
    log.info("LoRA initialised from %s (%d tensors)", weights, len(state))


def build_trainer(j1cfg: TrainSpec, grpo_args: GRPOConfig, model_args: ModelConfig, *, callbacks=()):
    """A J1GRPOTrainer from the three parsed configs of ``j1 train``.

    Args:
        j1cfg: ``j1.train.spec.TrainSpec`` (formulation, rewards, data, the J1 options).
        grpo_args: ``trl.GRPOConfig``; its ``reward_weights`` are set from the J1 section.
        model_args: ``trl.ModelConfig``; ``model_name_or_path`` None means the embedded model,
            ``use_peft`` trains a LoRA adapter.

    Returns:
        (trainer, info) with info = data counts and the resolved model path.
    """
    from datasets import Dataset
    from transformers import AutoConfig

    from j1.device import describe
    from j1.judging.limits import config_context
    from j1.models import load_tokenizer, resolve_model
    from j1.rewards import make_reward_funcs
    from j1.train.callbacks import JsonlLogCallback
    from j1.train.data import build_rows, dropped_message, engine_context, load_pairs, prompt_cap
    from j1.train.rollout_correction import trl_settings
    from j1.train.trl_grpo import J1GRPOTrainer

    pairs = load_pairs(j1cfg.train_file, pair_seed=j1cfg.pair_seed)  # bad data fails before a model loads
    path = resolve_model(model_args.model_name_or_path)
    tokenizer = load_tokenizer(path)
    if j1cfg.max_pairs is not None:
        pairs = pairs[: j1cfg.max_pairs]
    # Prompts that would leave their rollouts less than max_completion_length are dropped here, counted
    # with the recipe's own tokenizer (issue 52): the engine would cut or fail them mid-run.
    context = engine_context(grpo_args.use_vllm, grpo_args.vllm_max_model_length,
                             config_context(AutoConfig.from_pretrained(path)))
    cap, cap_from = prompt_cap(j1cfg.max_prompt_tokens, *context, grpo_args.max_completion_length)
    rows, counts = build_rows(
        pairs, j1cfg.formulation, tokenizer=tokenizer, max_prompt_tokens=cap, cap_from=cap_from,
        template=j1cfg.template, prefill=j1cfg.assistant_prefill, inputs=j1cfg.judge_inputs,
    )
    if dropped_message(counts):
        log.warning(dropped_message(counts))
    log.info("training rows: %s", counts)
    funcs, weights = make_reward_funcs(
        j1cfg.formulation, consistency=j1cfg.consistency, w_correct=j1cfg.correctness_weight,
        w_consistency=j1cfg.consistency_weight, w_format=j1cfg.format_weight,
    )
    if grpo_args.reward_weights is not None and list(grpo_args.reward_weights) != weights:
        raise ValueError("set reward weights in the J1 section (correctness_weight, consistency_weight, "
                         "format_weight), not with --reward_weights")
    grpo_args.reward_weights = weights
    # ModelConfig's model settings reach the model TRL loads (and its reference copy)
    init = {"dtype": model_args.dtype if model_args.dtype and model_args.dtype != "auto" else None,
            "attn_implementation": model_args.attn_implementation}
    grpo_args.model_init_kwargs = {**(grpo_args.model_init_kwargs or {}), **{k: v for k, v in init.items() if v}}
    # One J1 choice owns TRL's importance-sampling keys (j1.train.rollout_correction).
    grpo_args.vllm_importance_sampling_correction, grpo_args.vllm_importance_sampling_mode = trl_settings(
        j1cfg.importance_sampling, grpo_args.vllm_importance_sampling_correction,
        grpo_args.vllm_importance_sampling_mode)
    peft_config = lora_config(model_args, path, j1cfg.lora_last_layers, j1cfg.init_adapter)
    device = grpo_args.device  # set when GRPOConfig was built (use_cpu, CUDA present): the device decides below
    options = j1cfg.options(device.type, use_vllm=grpo_args.use_vllm)  # run.json records it as in effect
    if grpo_args.use_vllm and j1cfg.share_prompt_prefix == "true":
        log.warning("--share_prompt_prefix true has no effect with --use_vllm: vLLM generates the rollouts")
    trainer = J1GRPOTrainer(
        model=path,
        reward_funcs=funcs,
        args=grpo_args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[JsonlLogCallback(Path(grpo_args.output_dir) / "log.jsonl"), *callbacks],
        options=options,
        reward_trace_dir=grpo_args.output_dir if j1cfg.reward_trace else None,
    )
    if j1cfg.init_adapter is not None:
        init_lora(trainer.model, j1cfg.init_adapter, path)
        if grpo_args.beta != 0.0:
            reference_adapter(trainer.model)
    info = {"model_path": path, "rows": len(rows), "reward_funcs": [f.__name__ for f in funcs],
            "reward_weights": weights, **counts,
            "device": describe(device, dtype="bfloat16" if grpo_args.bf16 else "float16" if grpo_args.fp16
                               else "float32", share=options.share_prompt_prefix),
            "effective": effective_settings(j1cfg, grpo_args, trainer, options)}
    return trainer, info


def reference_adapter(model) -> None:
    """Add ``ref``, a frozen copy of the LoRA adapter as it starts, to a PEFT ``model``: TRL 1.16's
    GRPOTrainer measures the KL term against an adapter of that name when there is one (and against the
    base model, adapters off, when there is none). TRL makes the copy itself only for a model handed to
    it with its adapter loaded; ``--init_adapter`` is loaded into the trainer's fresh LoRA after, so the
    copy is made here, as TRL makes it."""
    default = model.peft_config["default"]
    model.add_adapter("ref", default)
    for name, param in model.named_parameters():
        if ".default." in name:
            ref = model.get_parameter(name.replace(".default.", ".ref."))
            ref.data.copy_(param.data)
            ref.requires_grad_(False)


def effective_settings(j1cfg: TrainSpec, grpo_args: GRPOConfig, trainer, options) -> dict:
    """What run.json records beside the config: the settings in effect where the config leaves them to
    the device, the engine or TRL (issue 52)."""
    from j1.train.rollout_correction import describe

    model = trainer.accelerator.unwrap_model(trainer.model)
    if grpo_args.beta == 0.0:
        kl = "none (beta 0)"
    elif "ref" in getattr(model, "peft_config", {}):
        kl = f"the starting adapter (--init_adapter {j1cfg.init_adapter})"
    elif hasattr(model, "peft_config"):
        kl = "the base model (adapters off; the fresh LoRA starts there)"
    else:
        kl = "a frozen copy of the starting model"
    return {
        "share_prompt_prefix": options.share_prompt_prefix,
        "generation": f"vllm ({grpo_args.vllm_mode})" if grpo_args.use_vllm else "transformers",
        "importance_sampling": describe(j1cfg.importance_sampling, grpo_args.use_vllm, j1cfg.loss_span,
                                        grpo_args.vllm_importance_sampling_clip_min,
                                        grpo_args.vllm_importance_sampling_clip_max),
        "kl_reference": kl,
        "loss_normaliser": "the tokens the loss trains (the answer span)" if j1cfg.loss_span == "answer"
        else "the completion tokens",
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "signal_grace_seconds": j1cfg.signal_grace_seconds,
    }


def emulated_bf16_warning(bf16: bool, on_cpu: bool, cpu_native: bool) -> str | None:
    """The warning for bf16 training on a CPU that only emulates it (``j1.device.cpu_native_bf16``).

    >>> emulated_bf16_warning(True, True, False).split(":")[0]
    '--bf16 true on a CPU without native bfloat16 (AVX-512 BF16 or AMX)'
    >>> emulated_bf16_warning(True, True, True), emulated_bf16_warning(False, True, False)
    (None, None)
    """
    if not bf16 or not on_cpu or cpu_native:
        return None
    return ("--bf16 true on a CPU without native bfloat16 (AVX-512 BF16 or AMX): its matrix products are "
            "emulated, several times slower than fp32; use --bf16 false here")


def run_train(j1cfg: TrainSpec, grpo_args: GRPOConfig, model_args: ModelConfig) -> dict:
    """Train, save the judge to OUTPUT_DIR/final (a LoRA adapter or a full model, with its manifest
    ``judge.json``) and write OUTPUT_DIR/run.json; returns run.json's content.

    run.json also says what this start resumed (``resumed_step``, ``resumed_trained_minutes``: what the
    checkpoint holds, all a resumed run counts as trained), the training minutes in all
    (``trained_minutes``) and what each kill lost (``interruptions``). On SIGTERM or SIGINT: a checkpoint
    at the step reached (``j1.train.stopping``: within ``signal_grace_seconds``), run.json ``status:
    interrupted``, and ``TrainingInterrupted`` raised on every process."""
    import torch

    from j1.device import cpu_native_bf16
    from j1.judging.chat import fixed_thought
    from j1.judging.judges import trained_manifest, write_manifest
    from j1.models import EMBEDDED_NAME
    from j1.runs.runinfo import RunFolder
    from j1.train.callbacks import CheckpointManifestCallback, ThoughtCollapseCallback, TrainClockCallback
    from j1.train.resume import interruptions, read_progress
    from j1.train.stopping import StopAndSaveCallback, TrainingInterrupted

    run_folder = RunFolder(grpo_args.output_dir, command="j1 train")
    warning = emulated_bf16_warning(grpo_args.bf16, grpo_args.use_cpu or not torch.cuda.is_available(),
                                    cpu_native_bf16())
    if warning:
        log.warning(warning)
    out = run_folder.path
    # The device (and under a launcher the process group) is set up here, before the first collective.
    resume, held = agreed_resume(grpo_args.resume_from_checkpoint, str(out), grpo_args.device)
    # what this start continues, and what the interruption before it lost (redone now, issue 46)
    lost = interruptions(run_folder.recorded().get("interruptions") or [], read_progress(out), held)
    base = model_args.model_name_or_path or EMBEDDED_NAME

    def manifest(folder: Path, lora: bool | None = None):
        lora = (folder / "adapter_config.json").exists() if lora is None else lora
        return trained_manifest(
            formulation=j1cfg.formulation, template=j1cfg.template, prefill=j1cfg.assistant_prefill,
            max_new_tokens=grpo_args.max_completion_length, base_model=base if lora else None,
            judge_dir=folder, trained_by="j1 train", inputs=j1cfg.judge_inputs)

    clock = TrainClockCallback(out)
    stopper = StopAndSaveCallback(max_minutes=j1cfg.max_minutes, save_minutes=j1cfg.save_minutes,
                                  grace_seconds=j1cfg.signal_grace_seconds)
    callbacks = [CheckpointManifestCallback(manifest), clock, stopper]
    # The guard watches sampled thoughts only: a prefill that fixes the thought makes them identical by design.
    guard = None
    if j1cfg.collapse_guard is not None and fixed_thought(j1cfg.assistant_prefill or "") is None:
        guard = ThoughtCollapseCallback(j1cfg.collapse_guard)
        callbacks.append(guard)
    trainer, info = build_trainer(j1cfg, grpo_args, model_args, callbacks=callbacks)
    device = info.pop("device")  # the device's choices (j1.device), beside the config that left them to it
    # the settings in effect where the config leaves them to the device, the engine or TRL
    in_effect = {"effective": info.pop("effective")}
    config = {"j1": dataclasses.asdict(j1cfg), "grpo": grpo_args.to_dict(), "model": dataclasses.asdict(model_args)}
    is_main = trainer.accelerator.is_main_process
    accounting = {"resumed_step": held["global_step"], "resumed_trained_minutes": round(held["trained_seconds"] / 60, 3),
                  "interruptions": lost}
    if is_main:
        run_folder.write(config, status="running", resume_from=resume, data=info, device=device, **in_effect,
                         **accounting)
    try:
        result = trainer.train(resume_from_checkpoint=resume)
    finally:
        stopper.close()
    accounting["trained_minutes"] = round(clock.seconds() / 60, 3)
    # each logged step's thought length and spread, and the collapse if one stopped the run
    spread = {} if guard is None else {"thoughts": {"per_step": guard.spread, "collapsed": guard.collapsed}}
    if stopper.stopped_by is not None:  # every process agrees; final is left to the resumed run
        if is_main:
            run_folder.write(config, status="interrupted", signal=signal.Signals(stopper.stopped_by).name,
                             resume_from=resume, data=info, device=device, global_step=trainer.state.global_step,
                             **in_effect, **accounting, **spread)
        # A process that left now would have the launcher kill the main one before run.json is written.
        trainer.accelerator.wait_for_everyone()
        raise TrainingInterrupted(stopper.stopped_by, trainer.state.global_step, stopper.saved_at_stop)
    model = trainer.accelerator.unwrap_model(trainer.model)
    final = out / "final"
    if is_main and final.exists():  # a resumed run's final replaces the old one whole, no stale weights left
        shutil.rmtree(final)
    # LoRA: the adapter alone (MBs); j1 judge/eval/probe load it on the base its manifest names.
    lora = hasattr(model, "merge_and_unload")
    if lora and not trainer.is_deepspeed_enabled:
        if is_main:
            model.save_pretrained(str(final), selected_adapters=["default"])  # not the KL reference copy
    else:
        # ZeRO-3 shards the weights: the trainer's save gathers them (every process takes part); with
        # LoRA it writes the adapter files, and the manifest names the base (issue 52)
        trainer.save_model(str(final))
    run = {}
    if is_main:
        shutil.rmtree(final / "ref", ignore_errors=True)  # the KL reference adapter (reference_adapter)
        trainer.processing_class.save_pretrained(str(final))
        write_manifest(final, manifest(final, lora))
        run = run_folder.write(config, status="done", resume_from=resume, data=info, device=device,
                           global_step=trainer.state.global_step, train_metrics=result.metrics,
                           **in_effect, **accounting, **spread)
        log.info("done: %d steps; model in %s", trainer.state.global_step, out / "final")
    return run
