"""Copy a trained LoRA judge into the package as a shipped judge (src/j1/assets/judges/NAME).

    .venv/bin/python results/train/ship_judge.py runs/j1-135m/train --checkpoint checkpoint-180 --name j1-135m

Takes the adapter of ``--checkpoint`` (a ``checkpoint-N`` folder of the run, or ``final`` when it holds
an adapter), writes its manifest from the run's ``run.json`` (the settings it was trained with; the
base as ``smollm2-135m`` when it is the embedded model) and copies ``run.json`` beside it. The base's
tokenizer is used, so none is shipped. MODEL_CARD.md and the metrics are added by hand after
``j1 eval`` (``j1 eval --model runs/.../shipped-copy`` records them in a copy's judge.json).
``--warmup FILE`` adds a JSON record of the stage the run's ``--init_adapter`` came from to run.json.

    .venv/bin/python results/train/ship_judge.py runs/sftmix/grpo --name j1-135m \
        --warmup results/train/sft-warmup/warmup-stage.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from j1.judges import SHIPPED_DIR, trained_manifest, write_manifest
from j1.models import EMBEDDED_NAME, embedded_model_dir

ADAPTER_FILES = ("adapter_model.safetensors", "adapter_config.json")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path, help="the j1 train output_dir")
    ap.add_argument("--checkpoint", default="final")
    ap.add_argument("--name", required=True)
    ap.add_argument("--dest", type=Path, default=SHIPPED_DIR)
    ap.add_argument("--warmup", type=Path, default=None, help="JSON record of the stage --init_adapter came from")
    args = ap.parse_args(argv)
    src = args.run / args.checkpoint
    missing = [f for f in ADAPTER_FILES if not (src / f).is_file()]
    if missing:
        sys.stderr.write(f"{src}: no {missing[0]}; a shipped judge is a LoRA adapter\n")
        return 2
    run = json.loads((args.run / "run.json").read_text())
    j1, grpo, model = run["config"]["j1"], run["config"]["grpo"], run["config"]["model"]
    base = model.get("model_name_or_path") or EMBEDDED_NAME
    if Path(base).resolve() == embedded_model_dir().resolve():
        base = EMBEDDED_NAME
    dest = args.dest / args.name
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src / "adapter_model.safetensors", dest)
    config = json.loads((src / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = base  # informative only: the manifest names the base
    (dest / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
    step = json.loads((src / "trainer_state.json").read_text())["global_step"] if (src / "trainer_state.json").is_file() \
        else run.get("global_step")
    write_manifest(dest, trained_manifest(
        formulation=j1["formulation"], template=j1["template"], prefill=j1["assistant_prefill"],
        max_new_tokens=grpo["max_completion_length"], base_model=base, judge_dir=dest, trained_by="j1 train"))
    warmup = {"warmup": json.loads(args.warmup.read_text())} if args.warmup else {}
    (dest / "run.json").write_text(json.dumps({**run, **warmup, "shipped": {"checkpoint": args.checkpoint,
                                                                            "step": step}}, indent=2) + "\n")
    print(f"{dest}: adapter of {src} (step {step}), base {base}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
