"""``j1 export judge``: a trained judge as a folder the tools it is for load, and as a GGUF file.

- **adapter** (default for a LoRA judge): the adapter as it is, its ``adapter_config.json`` naming the base
  as a loader finds it (the hub id where one exists, or ``--base PATH``), so PEFT's
  ``AutoPeftModelForCausalLM`` and vLLM's ``--lora-modules`` load it;
- **merged** (``--merged``): the adapter folded into its base, in the base's dtype (bf16 for the embedded
  model, whose original is bf16), with the tokenizer, chat template and generation config: a plain
  transformers model that vLLM and SGLang serve;
- **GGUF** (``--gguf FILE``): the merged judge as one file llama.cpp, Ollama and LM Studio load.

Every folder gets the judge's manifest (``judge.json``: how it is asked, its exact base weights), its
training run's ``run.json`` with an ``exported`` record, and a judge card (README.md) in place of PEFT's
template. A checkpoint's optimizer and trainer state stay behind. Written to a temp folder, then renamed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from pathlib import Path

from j1.judging.judges import (
    GGUF_MANIFEST_KEY,
    MANIFEST,
    Manifest,
    base_reference,
    judge_folder,
    judge_weights,
    load_model,
    write_manifest,
)
from j1.runs.runinfo import RunFolder

log = logging.getLogger(__name__)

# A checkpoint's training state: what resuming needs and judging does not.
TRAINING_STATE = ("optimizer.pt", "scheduler.pt", "scaler.pt", "trainer_state.json", "training_args.bin", "run.json")
CARD = "README.md"  # the judge card; PEFT's own template of that name is never copied


def source_run(folder: Path) -> dict | None:
    """The run.json that describes the judge in ``folder``: its own (a shipped judge), else its run's
    (``final/`` and ``checkpoint-N/`` sit in the ``j1 train`` output_dir beside run.json)."""
    for path in (folder, folder.parent):
        if (path / "run.json").is_file():
            return RunFolder.read(path)
    return None


def _base_path(manifest: Manifest, folder: Path, base: str | None) -> str | None:
    """The base as given: ``base``, else the manifest's, a folder named relative to the judge resolved."""
    name = base or manifest.base_model
    if name is not None and base is None and (folder / name).is_dir():
        return str(folder / name)
    return name


def exported_base(name: str | None, out: Path) -> str | None:
    """How the exported manifest names the adapter's base: a model name or hub id as it was, the embedded
    model by its j1 name (a shipped judge names no path), another folder relative to ``out``."""
    from j1.models import EMBEDDED_NAME, is_embedded

    if name is None:
        return None
    if is_embedded(name):
        return EMBEDDED_NAME
    return base_reference(name, out) if Path(name).is_dir() else name


def loader_base(name: str | None, given: str | None) -> str | None:
    """What ``adapter_config.json`` names as ``base_model_name_or_path``: ``--base`` as given (a folder made
    absolute), else the base's hub id, else its folder's absolute path.

    >>> loader_base("smollm2-135m", None)
    'HuggingFaceTB/SmolLM2-135M-Instruct'
    """
    from j1.models import hub_id

    if given is not None:
        return str(Path(given).expanduser().resolve()) if Path(given).expanduser().is_dir() else given
    hub = hub_id(name)
    if hub is not None:
        return hub
    return None if name is None else str(Path(name).expanduser().resolve())


def merged_dtype(requested: str, base: str | None) -> str:
    """The dtype of a merged export: ``requested``, or for ``auto`` the base's (its config's ``dtype``), the
    embedded base's original bf16 for the embedded model, float32 when the config names none."""
    from j1.models import EMBEDDED_DTYPE, is_embedded, resolve_model

    if requested != "auto":
        return requested
    if base is None or is_embedded(base):
        return EMBEDDED_DTYPE if base is not None else "float32"
    config = Path(resolve_model(base)) / "config.json"
    if config.is_file():
        data = json.loads(config.read_text(encoding="utf-8"))
        found = data.get("dtype") or data.get("torch_dtype")
        if found in ("bfloat16", "float16", "float32"):
            return found
    return "float32"


def _generation_config(lm, manifest: Manifest):
    """The judge's generation defaults as transformers keeps them (greedy when its manifest is)."""
    from transformers import GenerationConfig

    config = GenerationConfig.from_model_config(lm.config)
    config.max_new_tokens = manifest.max_new_tokens
    if manifest.temperature > 0:
        config.do_sample, config.temperature = True, manifest.temperature
    else:
        config.do_sample = False
    return config


def export_judge(model: str, out: str | os.PathLike | None = None, *, merged: bool = False, base: str | None = None,
                 dtype: str = "auto", gguf: str | os.PathLike | None = None, gguf_type: str = "F16") -> dict:
    """Write the judge ``model`` (a shipped name, or a folder with ``judge.json``: a ``j1 train`` run's
    ``final/`` or ``checkpoint-N/``, a ``j1 warmup`` output) to the new folder ``out`` and/or the GGUF file
    ``gguf`` (see the module docstring).

    Args:
        model: the judge to export.
        out: the folder to create; it must not exist yet.
        merged: fold an adapter into its base.
        base: the adapter's base: where it loads from and what ``adapter_config.json`` names.
        dtype: a merged export's weights (``auto``: the base's).
        gguf: the GGUF file to write (merged, ``gguf_type`` weights).

    Returns:
        The ``exported`` record: source, checkpoint, step, kind (adapter, full or merged), and the GGUF
        file's record when one was written.

    Raises:
        ValueError: ``out`` or ``gguf`` exists, or ``model`` is no judge (a folder without ``judge.json``).

    >>> export_judge("j1-135m", ".")
    Traceback (most recent call last):
    ...
    ValueError: --out . exists; remove it or name a new folder
    """
    from j1.models import hub_id

    out = None if out is None else Path(out)
    if out is not None and out.exists():
        raise ValueError(f"--out {out} exists; remove it or name a new folder")
    if gguf is not None and Path(gguf).exists():
        raise ValueError(f"--gguf {gguf} exists; remove it or name a new file")
    where = judge_weights(model, base)
    folder = judge_folder(model)
    if where.manifest is None or folder is None:
        raise ValueError(f"{model}: no {MANIFEST}; export takes a judge j1 train or j1 warmup wrote "
                         "(its final/ or a checkpoint-N/ folder) or a shipped one")
    adapter = where.adapter is not None
    base_name = _base_path(where.manifest, folder, base) if adapter else None
    run = source_run(folder) or {}
    state = folder / "trainer_state.json"
    step = json.loads(state.read_text(encoding="utf-8"))["global_step"] if state.is_file() else run.get("global_step")
    kind = ("merged" if merged else "adapter") if adapter else "full"
    record = {"source": str(model), "checkpoint": folder.name, "step": step, "kind": kind}
    manifest = where.manifest
    if adapter and manifest.base_weights is None:
        from j1.models import base_weights

        manifest = dataclasses.replace(manifest, base_weights=base_weights(base_name))
    lm = tokenizer = None
    if gguf is not None or (merged and adapter):
        torch_dtype = merged_dtype(dtype, base_name) if adapter else dtype if dtype != "auto" else "float32"
        # Merged in float32, then cast: the adapter's small updates are not lost to bf16 rounding twice.
        lm, tokenizer, _ = load_model(model, base=base, dtype="float32", merge=True)
        if merged:
            import torch

            lm = lm.to(getattr(torch, torch_dtype))
    if gguf is not None:
        from j1.export.gguf import write_gguf

        gguf_manifest = dataclasses.replace(manifest, name=manifest.name or Path(gguf).stem, kind="full",
                                            base_model=None)
        record["gguf"] = write_gguf(lm, tokenizer, gguf, qtype=gguf_type, name=gguf_manifest.name,
                                    extra={GGUF_MANIFEST_KEY: json.dumps(gguf_manifest.to_json())})
    if out is not None:
        _write_folder(out, folder, manifest, run, record, lm=lm if merged and adapter else None, tokenizer=tokenizer,
                      base_name=base_name, base=base, hub=hub_id(base_name) if adapter else None)
    log.info("%s -> %s (%s, step %s)", model, out or gguf, kind, step)
    return record


def _write_folder(out: Path, folder: Path, manifest: Manifest, run: dict, record: dict, *, lm, tokenizer,
                  base_name: str | None, base: str | None, hub: str | None) -> None:
    """The export folder, written whole: in a temp folder renamed to ``out``."""
    from j1.export.card import judge_card

    kind = record["kind"]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}"  # mkdir, not mkdtemp: the usual folder mode
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        if lm is not None:
            lm.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)  # the adapter's or the base's, with its chat template
            _generation_config(lm, manifest).save_pretrained(tmp)
            exported = dataclasses.replace(manifest, name=out.name, base_model=None, kind="full")
        else:
            # Everything but the training state, the manifest and PEFT's card template (replaced below).
            for path in sorted(folder.iterdir()):
                if path.is_file() and path.name not in (*TRAINING_STATE, MANIFEST, CARD) \
                        and not path.name.startswith("rng_state"):
                    shutil.copy2(path, tmp / path.name)
            exported = dataclasses.replace(manifest, name=out.name, kind=kind if kind == "full" else "adapter",
                                           base_model=exported_base(base_name, out) if kind == "adapter" else None)
            if kind == "adapter":  # the base as PEFT's loaders and vLLM find it
                config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
                config["base_model_name_or_path"] = loader_base(base_name, base)
                (tmp / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        write_manifest(tmp, exported)
        (tmp / "run.json").write_text(json.dumps({**run, "exported": record}, indent=2) + "\n", encoding="utf-8")
        model_card = "MODEL_CARD.md" if (tmp / "MODEL_CARD.md").is_file() else None
        gguf_file = Path(record["gguf"]["path"]).name if "gguf" in record else None
        (tmp / CARD).write_text(judge_card(exported, run, kind=kind, base_hub_id=hub, gguf_file=gguf_file,
                                           model_card=model_card), encoding="utf-8")
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
