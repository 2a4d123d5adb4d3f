"""``j1 train``: J1 GRPO training on TRL (GRPOConfig + ModelConfig keys pass through)."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from pathlib import Path

from j1.cli.common import setup_logging
from j1.cli.configs import TrainConfig

log = logging.getLogger(__name__)


def parse_train(argv: Sequence[str], prog: str = "j1 train"):
    """(TrainConfig, GRPOConfig, ModelConfig) from ``--config FILE.yaml`` and flags."""
    from trl import GRPOConfig, ModelConfig, TrlParser

    parser = TrlParser([TrainConfig, GRPOConfig, ModelConfig], prog=prog)
    try:
        return parser.parse_args_and_config(list(argv))
    except ValueError as exc:
        parser.error(str(exc))


def main(argv: Sequence[str]) -> int:
    j1cfg, grpo_args, model_args = parse_train(argv)
    setup_logging()
    from j1.runinfo import write_run_json
    from j1.train.trl_grpo import build_trainer, resolve_checkpoint

    started = time.time()
    out = Path(grpo_args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    resume = resolve_checkpoint(grpo_args.resume_from_checkpoint, str(out))
    trainer, info = build_trainer(j1cfg, grpo_args, model_args)
    config = {"j1": dataclasses.asdict(j1cfg), "grpo": grpo_args.to_dict(), "model": dataclasses.asdict(model_args)}
    is_main = trainer.accelerator.is_main_process
    if is_main:
        write_run_json(out / "run.json", command="j1 train", config=config, started=started,
                       status="running", resume_from=resume, data=info)
    result = trainer.train(resume_from_checkpoint=resume)
    model = trainer.accelerator.unwrap_model(trainer.model)
    if hasattr(model, "merge_and_unload") and not trainer.is_deepspeed_enabled:
        # LoRA: save the merged model, so j1 eval/judge load OUTPUT_DIR/final as a plain model
        # (checkpoints keep the adapter for resuming).
        if is_main:
            model.merge_and_unload().save_pretrained(str(out / "final"))
    else:
        trainer.save_model(str(out / "final"))
    if is_main:
        trainer.processing_class.save_pretrained(str(out / "final"))
        write_run_json(out / "run.json", command="j1 train", config=config, started=started,
                       status="done", resume_from=resume, data=info, global_step=trainer.state.global_step,
                       train_metrics=result.metrics)
        log.info("done: %d steps; model in %s", trainer.state.global_step, out / "final")
    return 0
