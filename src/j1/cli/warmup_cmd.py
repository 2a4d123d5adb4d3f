"""``j1 warmup``: label-free format SFT on TRL's SFTTrainer (SFTConfig + ModelConfig keys pass through).

Writes the model to OUTPUT_DIR (LoRA merged, so ``j1 train --model_name_or_path OUTPUT_DIR`` loads it
as a plain model), ``warmup.json`` with the valid-output rate before and after, and ``run.json``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from pathlib import Path

from j1.cli.common import setup_logging
from j1.cli.configs import WarmupConfig

log = logging.getLogger(__name__)


def parse_warmup(argv: Sequence[str], prog: str = "j1 warmup"):
    """(WarmupConfig, SFTConfig, ModelConfig) from ``--config FILE.yaml`` and flags."""
    from trl import ModelConfig, SFTConfig, TrlParser

    parser = TrlParser([WarmupConfig, SFTConfig, ModelConfig], prog=prog)
    try:
        return parser.parse_args_and_config(list(argv))
    except ValueError as exc:
        parser.error(str(exc))


def main(argv: Sequence[str]) -> int:
    cfg, sft_args, model_args = parse_warmup(argv)
    setup_logging()
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTTrainer, get_peft_config

    from j1.models import resolve_model
    from j1.runinfo import write_run_json
    from j1.schema import write_json_atomic
    from j1.train.callbacks import JsonlLogCallback
    from j1.train.data import UNIT, build_rows, load_pairs
    from j1.train.trl_grpo import load_tokenizer
    from j1.train.warmup import sft_rows, valid_rate

    started = time.time()
    out = Path(sft_args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = resolve_model(model_args.model_name_or_path)
    tokenizer = load_tokenizer(path)
    pairs = load_pairs(cfg.train_file, pair_seed=cfg.pair_seed)
    if cfg.max_pairs is not None:
        pairs = pairs[: cfg.max_pairs + cfg.heldout_pairs]
    rows, counts = build_rows(pairs, cfg.formulation, tokenizer=tokenizer, max_prompt_tokens=cfg.max_prompt_tokens,
                              template=cfg.template)
    # Held-out units come from the end of the file, whole units only; SFT never sees their prompts.
    n_held = min(cfg.heldout_pairs * UNIT, len(rows) - UNIT)
    train_rows, held_rows = rows[: len(rows) - n_held], rows[len(rows) - n_held :]
    dtype = getattr(torch, model_args.dtype) if model_args.dtype not in (None, "auto") else "auto"
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    check = dict(samples=cfg.check_samples, temperature=cfg.check_temperature,
                 max_new_tokens=cfg.check_max_new_tokens, seed=cfg.warmup_seed)
    before = valid_rate(model, tokenizer, held_rows, **check) if held_rows else None
    if before:
        log.info("valid-output rate before the warm-up: %.3f", before["valid_rate"])
    trainer = SFTTrainer(
        model=model, args=sft_args, train_dataset=Dataset.from_list(sft_rows(
            train_rows, cfg.warmup_seed, thoughts=cfg.thoughts, pairs={p.pair_id: p for p in pairs},
            quote_words=cfg.quote_words)),
        processing_class=tokenizer, peft_config=get_peft_config(model_args),
        callbacks=[JsonlLogCallback(out / "log.jsonl")],
    )
    trainer.train(resume_from_checkpoint=sft_args.resume_from_checkpoint)
    model = trainer.model
    if hasattr(model, "merge_and_unload"):  # LoRA: save a plain model that j1 train/eval can load
        model = model.merge_and_unload()
    after = valid_rate(model, tokenizer, held_rows, **check) if held_rows else None
    if after:
        log.info("valid-output rate after the warm-up: %.3f", after["valid_rate"])
    if trainer.accelerator.is_main_process:
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        report = {"formulation": cfg.formulation, "train_rows": len(train_rows), "heldout_rows": len(held_rows),
                  "check": check, "before": before, "after": after, "data": counts}
        write_json_atomic(out / "warmup.json", report)
        config = {"j1": dataclasses.asdict(cfg), "sft": sft_args.to_dict(), "model": dataclasses.asdict(model_args)}
        write_run_json(out / "run.json", command="j1 warmup", config=config, started=started,
                       model_path=path, global_step=trainer.state.global_step,
                       valid_rate={"before": before and before["valid_rate"], "after": after and after["valid_rate"]})
    return 0
