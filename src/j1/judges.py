"""Judges as self-describing folders, and the judges that ship inside the package.

A trained judge is a folder with its weights (a full model, or a LoRA adapter on a named base) and a
manifest, ``judge.json``: the format, prompt wording and assistant prefill it was trained with, its
generation defaults, its base model and the metrics it reached. ``j1 warmup`` and ``j1 train`` write
it; ``j1 judge``, ``j1 eval``, ``j1 probe`` and ``j1 serve`` read it, so training-time settings are
never repeated by hand (an explicit flag still wins).

``--model`` names a judge as:

- a shipped judge (``j1-135m``: the embedded SmolLM2-135M trained with J1 GRPO; ``SHIPPED``);
- a folder (with or without ``judge.json``; an ``adapter_config.json`` makes it a LoRA adapter,
  loaded on its base, merged in memory, never copied to disk);
- ``smollm2-135m`` (the embedded base model) or a Hugging Face id.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j1.atomic import temp_file_beside

log = logging.getLogger(__name__)

MANIFEST = "judge.json"
MANIFEST_VERSION = 1
ASSETS = Path(__file__).parent / "assets"
SHIPPED_DIR = ASSETS / "judges"
DEFAULT_JUDGE = "j1-135m"  # what judge, eval and probe use when no model is named
# Without a manifest (a plain model, a served one), unset judging settings take these values.
PLAIN_DEFAULTS = dict(format="pav", template="full", max_new_tokens=512, temperature=0.0, samples=1)
# The judges inside the package, by name: each a folder with a manifest.
SHIPPED = tuple(sorted(p.name for p in SHIPPED_DIR.iterdir() if (p / MANIFEST).is_file())) \
    if SHIPPED_DIR.is_dir() else ()


@dataclass(frozen=True)
class Manifest:
    """``judge.json``: what a judge needs to be asked the way it was trained.

    Attributes:
        format: pav, pas, pavs or pos.
        template: the prompt wording (full, compact, digest).
        assistant_prefill: the fixed start of every answer (e.g. a fixed thought and ``<answer>[[``).
        max_new_tokens, temperature, samples: generation defaults for judging.
        base_model: the base of a LoRA adapter: a model name (``smollm2-135m``), a Hugging Face id, or
            a folder relative to the judge's folder; None for a full model.
        name: a short name for reports.
        metrics: what the judge reached, by evaluation set (``j1 eval`` adds to it).
        trained_by: the command that made it (``j1 train``, ``j1 warmup``).
    """

    format: str
    template: str = "full"
    assistant_prefill: str | None = None
    max_new_tokens: int = 512
    temperature: float = 0.0
    samples: int = 1
    base_model: str | None = None
    name: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    trained_by: str | None = None
    schema_version: int = MANIFEST_VERSION

    # The fields a judging command takes from the manifest when its flag is not given.
    DEFAULTS = ("format", "template", "assistant_prefill", "max_new_tokens", "temperature", "samples")

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any, where: str) -> Manifest:
        """Raises ValueError naming ``where`` and the key for a malformed manifest."""
        from j1.formats import FORMATS, TEMPLATES

        if not isinstance(data, dict):
            raise ValueError(f"{where}: a judge manifest is a JSON object")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{where}: unknown key {unknown[0]!r}")
        if "format" not in data:
            raise ValueError(f"{where}: missing key 'format'")
        m = cls(**data)
        if m.schema_version > MANIFEST_VERSION:
            raise ValueError(f"{where}: schema_version {m.schema_version} is newer than this j1 reads "
                             f"({MANIFEST_VERSION}); upgrade j1")
        checks = [
            ("format", m.format in FORMATS, f"one of {sorted(FORMATS)}"),
            ("template", m.template in TEMPLATES, f"one of {sorted(TEMPLATES)}"),
            ("assistant_prefill", m.assistant_prefill is None or isinstance(m.assistant_prefill, str), "a string"),
            ("max_new_tokens", isinstance(m.max_new_tokens, int) and m.max_new_tokens >= 1, "an integer >= 1"),
            ("temperature", isinstance(m.temperature, int | float) and m.temperature >= 0, "a number >= 0"),
            ("samples", isinstance(m.samples, int) and m.samples >= 1, "an integer >= 1"),
            ("base_model", m.base_model is None or isinstance(m.base_model, str), "a string"),
            ("metrics", isinstance(m.metrics, dict), "an object"),
        ]
        for key, ok, want in checks:
            if not ok:
                raise ValueError(f"{where}: {key} {getattr(m, key)!r} must be {want}")
        return m


def read_manifest(folder: str | os.PathLike) -> Manifest | None:
    """The manifest in ``folder``, None when it has none."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    return Manifest.from_json(data, str(path))


def write_manifest(folder: str | os.PathLike, manifest: Manifest) -> Path:
    """Write ``folder/judge.json`` atomically (a temp file renamed over it)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_file_beside(folder / MANIFEST, suffix=".json")  # the run's file mode, not mkstemp's 0600
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(manifest.to_json(), f, indent=2, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, folder / MANIFEST)
    return folder / MANIFEST


def record_metrics(folder: str | os.PathLike, key: str, metrics: dict) -> bool:
    """Add ``metrics`` under ``key`` to the manifest in ``folder``; False when there is none to update."""
    manifest = read_manifest(folder)
    if manifest is None or not os.access(folder, os.W_OK):
        return False
    write_manifest(folder, dataclasses.replace(manifest, metrics={**manifest.metrics, key: metrics}))
    return True


def base_reference(base: str | None, judge_dir: str | os.PathLike) -> str | None:
    """How a manifest names ``base``: a local folder relative to the judge's folder (so both can move
    together), anything else (a model name, a hub id) as given."""
    if base is None or not Path(base).is_dir():
        return base
    return os.path.relpath(Path(base).resolve(), Path(judge_dir).resolve())


def judge_folder(name: str | None) -> Path | None:
    """The folder ``name`` refers to: a shipped judge's or an existing folder; None otherwise."""
    if name in SHIPPED:
        return SHIPPED_DIR / name
    if name and Path(name).expanduser().is_dir():
        return Path(name).expanduser()
    return None


def manifest_for(name: str | None) -> Manifest | None:
    """The manifest of the judge ``name`` names (None for a plain model or a hub id)."""
    folder = judge_folder(name)
    return None if folder is None else read_manifest(folder)


@dataclass(frozen=True)
class JudgeWeights:
    """Where a judge's weights come from: ``weights`` (a loadable model) plus ``adapter`` (a LoRA folder)."""

    weights: str
    adapter: str | None
    manifest: Manifest | None


def judge_weights(model: str | None, base: str | None = None) -> JudgeWeights:
    """Resolve ``--model`` (see the module docstring) to weights, adapter and manifest.

    The base of an adapter is ``base`` when given, else the manifest's ``base_model``, else the
    ``base_model_name_or_path`` of its ``adapter_config.json``.

    Raises:
        ValueError: a folder path that does not exist, or an adapter that names no base.
    """
    from j1.models import resolve_model

    folder = judge_folder(model)
    if folder is None:
        name = resolve_model(model)
        # A Hugging Face id is "name" or "org/name"; anything else is a folder, and a missing one fails
        # here with its name instead of as a malformed hub id.
        if (name.startswith(("/", ".", "~")) or name.count("/") > 1) and not Path(name).expanduser().exists():
            raise ValueError(f"model folder {name} not found")
        folder = Path(name)
        if not folder.is_dir():
            return JudgeWeights(name, None, None)
    manifest = read_manifest(folder)
    config = folder / "adapter_config.json"
    if not config.is_file():
        return JudgeWeights(str(folder), None, manifest)
    if base is None and manifest is not None and manifest.base_model:
        base = manifest.base_model
        if (folder / base).is_dir():  # a folder named relative to the judge
            base = str(folder / base)
    if base is None:
        base = json.loads(config.read_text(encoding="utf-8")).get("base_model_name_or_path")
        if not base:
            raise ValueError(f"{config} names no base_model_name_or_path; pass the base model with --base")
    return JudgeWeights(resolve_model(base), str(folder), manifest)


def load_model(model: str | None, *, base: str | None = None, dtype: str = "float32", merge: bool = True,
               device: str | None = None):
    """A judge's model (eval mode) and its left-padded tokenizer.

    An adapter is applied on its base; ``merge`` folds it into the weights in memory (plain Llama
    weights decode on j1's fast path), ``merge=False`` keeps the PEFT model (the probe reads it as is).
    The tokenizer is the adapter folder's when it saved one, else the base's.

    Returns:
        (model, tokenizer, JudgeWeights)
    """
    import torch
    from transformers import AutoModelForCausalLM

    from j1.models import load_tokenizer

    where = judge_weights(model, base)
    log.info("loading %s%s", where.weights, f" with the adapter {where.adapter}" if where.adapter else "")
    lm = AutoModelForCausalLM.from_pretrained(where.weights, dtype=getattr(torch, dtype))
    tokenizer_from = where.weights
    if where.adapter is not None:
        from peft import PeftModel

        lm = PeftModel.from_pretrained(lm, where.adapter)
        if merge:
            lm = lm.merge_and_unload()
        if (Path(where.adapter) / "tokenizer_config.json").is_file():
            tokenizer_from = where.adapter
    if device is not None:
        lm = lm.to(device)
    lm.eval()
    return lm, load_tokenizer(tokenizer_from), where


def apply_manifest(cfg, explicit_defaults: dict[str, Any]) -> Manifest | None:
    """Fill a judging config's unset generation fields (None) from its judge's manifest, else from
    ``explicit_defaults``; returns the manifest used. A flag the user gave is never overridden."""
    manifest = None if getattr(cfg, "base_url", None) else manifest_for(cfg.model)
    for key in Manifest.DEFAULTS:
        if not hasattr(cfg, key) or getattr(cfg, key) is not None:
            continue
        if manifest is not None:
            setattr(cfg, key, getattr(manifest, key))
        elif key in explicit_defaults:
            setattr(cfg, key, explicit_defaults[key])
    return manifest


def trained_manifest(*, formulation: str, template: str, prefill: str | None, max_new_tokens: int,
                     base_model: str | None, judge_dir: str | os.PathLike, trained_by: str) -> Manifest:
    """The manifest a training command writes beside its judge: asked as it was trained, greedily.

    A MultiTask judge is asked pairwise with verdicts (``pav``) by default; ``--format pos`` asks it
    pointwise. ``base_model`` is the adapter's base (None for a full model).
    """
    from j1.formats import FORMATS
    from j1.models import EMBEDDED_NAME

    if base_model is not None and base_model in {"", "embedded", "default"}:
        base_model = EMBEDDED_NAME
    return Manifest(
        format=formulation if formulation in FORMATS else "pav", template=template, assistant_prefill=prefill,
        max_new_tokens=max_new_tokens, temperature=0.0, samples=1,
        base_model=base_reference(base_model, judge_dir), name=Path(judge_dir).resolve().name, trained_by=trained_by,
    )


ADAPTER_FILES = ("adapter_model.safetensors", "adapter_config.json")
# A checkpoint's training state: what resuming needs and judging does not.
TRAINING_STATE = ("optimizer.pt", "scheduler.pt", "scaler.pt", "trainer_state.json", "training_args.bin", "run.json")


def _source_run(folder: Path) -> dict | None:
    """The run.json that describes the judge in ``folder``: its own (a shipped judge), else its run's
    (``final/`` and ``checkpoint-N/`` sit in the ``j1 train`` output_dir beside run.json)."""
    for path in (folder / "run.json", folder.parent / "run.json"):
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
    return None


def _exported_base(manifest: Manifest, folder: Path, base: str | None, out: Path) -> str | None:
    """How the exported manifest names the adapter's base: a model name or hub id as it was, a folder
    re-pointed relative to ``out`` (the embedded model by its name, so a shipped judge does not name a path)."""
    from j1.models import EMBEDDED_NAME, embedded_model_dir

    name = base or manifest.base_model
    if name is None:
        return None
    path = folder / name if base is None and (folder / name).is_dir() else Path(name)
    if not path.is_dir():
        return name
    if path.resolve() == embedded_model_dir().resolve():
        return EMBEDDED_NAME
    return base_reference(str(path), out)


def export_judge(model: str, out: str | os.PathLike, *, merged: bool = False, base: str | None = None,
                 dtype: str = "float32") -> dict:
    """Write the judge ``model`` (a shipped name, or a folder with ``judge.json``: a ``j1 train`` run's
    ``final/`` or ``checkpoint-N/``, a ``j1 warmup`` output) to the new folder ``out``, a judge ``--model``
    reads with the same verdicts: its weights (an adapter as it is, or with ``merged`` folded into its base
    as a plain transformers model), its tokenizer when it has one, its manifest (named after ``out``, an
    adapter's base re-pointed from ``out``) and its run's ``run.json`` with an ``exported`` record.
    A checkpoint's optimizer and trainer state are left behind. Written to a temp folder, then renamed.

    Args:
        model: the judge to export.
        out: the folder to create; it must not exist yet.
        merged: fold an adapter into its base (a full model needs no base, loads in plain transformers).
        base: the adapter's base, when its manifest names none (as ``--base``).
        dtype: the weights' dtype when merging.

    Returns:
        The ``exported`` record: source, checkpoint, step, kind (adapter, full or merged).

    Raises:
        ValueError: ``out`` exists, or ``model`` is no judge (a folder without ``judge.json``).

    >>> export_judge("j1-135m", ".")
    Traceback (most recent call last):
    ...
    ValueError: --out . exists; remove it or name a new folder
    """
    import shutil

    out = Path(out)
    if out.exists():
        raise ValueError(f"--out {out} exists; remove it or name a new folder")
    where = judge_weights(model, base)
    folder = judge_folder(model)
    if where.manifest is None or folder is None:
        raise ValueError(f"{model}: no {MANIFEST}; export takes a judge j1 train or j1 warmup wrote "
                         "(its final/ or a checkpoint-N/ folder) or a shipped one")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}"  # mkdir, not mkdtemp: the usual folder mode
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        if merged and where.adapter is not None:
            lm, tokenizer, _ = load_model(model, base=base, dtype=dtype, merge=True)
            lm.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)  # the adapter's or the base's, with its chat template
            kind, exported_base = "merged", None
        else:
            # Everything but the training state; an adapter folder's files are its adapter and tokenizer.
            for path in sorted(folder.iterdir()):
                if path.is_file() and path.name not in TRAINING_STATE and path.name != MANIFEST \
                        and not path.name.startswith("rng_state"):
                    shutil.copy2(path, tmp / path.name)
            kind = "full" if where.adapter is None else "adapter"
            exported_base = None if where.adapter is None else _exported_base(where.manifest, folder, base, out)
            if where.adapter is not None:  # informative only: the manifest names the base
                config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
                config["base_model_name_or_path"] = exported_base
                (tmp / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        write_manifest(tmp, dataclasses.replace(where.manifest, name=out.name, base_model=exported_base))
        run = _source_run(folder) or {}
        state = folder / "trainer_state.json"
        step = json.loads(state.read_text(encoding="utf-8"))["global_step"] if state.is_file() \
            else run.get("global_step")
        record = {"source": str(model), "checkpoint": folder.name, "step": step, "kind": kind}
        (tmp / "run.json").write_text(json.dumps({**run, "exported": record}, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("%s -> %s (%s, step %s)", model, out, kind, step)
    return record
