"""j1 warmup's SFT step (``j1.train.sft.CompletionSFTTrainer``) against TRL's own SFTTrainer, side by side.

Both trainers get the same model, LoRA, rows (the gold warm-up of the shipped recipe on the shipped GSM8K
mismatch pairs: the prefill in the prompt, the verdict and closing tags as the completion), seed and
batches; they differ only in the loss pass: TRL's fused LM head projects every position, j1's only the
trained ones. Prints each step time, the step-1 losses (they must agree) and the ratio.

    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_warmup_step.py --steps 3
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(kind: str, steps: int, batch: int, out: Path) -> dict:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    from j1.cli.warmup_cmd import parse_warmup
    from j1.judging.judges import ASSETS
    from j1.models import load_tokenizer, resolve_model
    from j1.train.data import build_rows, load_pairs
    from j1.train.recipe import lora_config
    from j1.train.sft import CompletionSFTTrainer
    from j1.train.warmup import sft_rows

    cfg, _, model_args = parse_warmup(["--config", str(ASSETS / "recipes" / "j1_135m_warmup.yaml"),
                                       "--train_file", str(ASSETS / "data" / "gsm8k_mismatch.jsonl")])
    path = resolve_model(None)
    tok = load_tokenizer(path)
    pairs = load_pairs(cfg.train_file)[: steps * batch]
    rows, _ = build_rows(pairs, "pav", tokenizer=tok, template=cfg.template, prefill=cfg.assistant_prefill)
    data = Dataset.from_list(sft_rows(rows, 0, verdicts="gold", tokenizer=tok))
    args = SFTConfig(output_dir=str(out / kind), per_device_train_batch_size=batch, max_steps=steps, learning_rate=1e-3,
                     lr_scheduler_type="constant", logging_steps=1, save_strategy="no", report_to="none",
                     use_cpu=True, bf16=False, seed=0, dataloader_num_workers=0)
    times: list[float] = []
    losses: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *a, **k):
            self.t0 = time.perf_counter()

        def on_step_end(self, *a, **k):
            times.append(time.perf_counter() - self.t0)

        def on_log(self, _args, _state, _control, logs=None, **k):
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))

    import torch

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    peft = lora_config(model_args, path, cfg.lora_last_layers)
    cls = CompletionSFTTrainer if kind == "j1" else SFTTrainer
    trainer = cls(model=model, args=args, train_dataset=data, processing_class=tok, peft_config=peft, callbacks=[Clock()])
    trainer.train()
    return {"trainer": cls.__name__, "step_seconds": [round(t, 2) for t in times], "losses": losses}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8, help="rows per step (the recipe: 8, 4 pairs x 2 orders)")
    ap.add_argument("--out", type=Path, default=None, help="write the result as JSON here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        res = {kind: run(kind, args.steps, args.batch, Path(tmp)) for kind in ("trl", "j1")}
    # the first step of each warms caches up: the ratio is over the steps after it
    mean = {k: sum(v["step_seconds"][1:]) / max(1, len(v["step_seconds"]) - 1) for k, v in res.items()}
    res["ratio_trl_over_j1"] = round(mean["trl"] / mean["j1"], 2)
    res["step1_loss_diff"] = abs(res["trl"]["losses"][0] - res["j1"]["losses"][0])
    print(json.dumps(res, indent=1))
    if args.out:
        args.out.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
