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
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j1.runs.atomic import temp_file_beside

log = logging.getLogger(__name__)

MANIFEST = "judge.json"
# 2: kind and base_weights (an adapter's exact base). 3: inputs (what the judge was trained to read).
MANIFEST_VERSION = 3
ASSETS = Path(__file__).resolve().parents[1] / "assets"
SHIPPED_DIR = ASSETS / "judges"
DEFAULT_JUDGE = "j1-135m"  # what judge, eval and probe use when no model is named
# Without a manifest (a plain model, a served one), unset judging settings take these values.
PLAIN_DEFAULTS = dict(format="pav", template="full", max_new_tokens=512, temperature=0.0, samples=1)
# What a judge folder holds: a LoRA adapter on a named base, or a full model (None: not recorded).
KINDS = ("adapter", "full", None)
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
        kind: ``adapter`` (LoRA weights on ``base_model``) or ``full``; None in manifests before it was kept.
        base_weights: the adapter's exact base weights (``j1.models.base_weights``): its j1 name, its hub id
            where one exists, where the weights came from and their checksum. The embedded base is the
            dequantized Q4_1 GGUF, not the hub's bf16 file, so an adapter judges as measured only on it.
        inputs: what the judge read in training besides the request and the responses
            (``j1.formats.base.INPUTS``: criteria, reference). A manifest written before the key existed
            lists none: j1 could not render them then. Judging with another input warns once
            (``untrained_inputs``).
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
    kind: str | None = None
    base_weights: dict[str, Any] | None = None
    inputs: list[str] = field(default_factory=list)
    schema_version: int = MANIFEST_VERSION

    # The fields a judging command takes from the manifest when its flag is not given.
    DEFAULTS = ("format", "template", "assistant_prefill", "max_new_tokens", "temperature", "samples")

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any, where: str) -> Manifest:
        """Raises ValueError naming ``where`` and the key for a malformed manifest."""
        from j1.formats import FORMATS, TEMPLATES
        from j1.formats.base import INPUTS

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
            ("kind", m.kind in KINDS, f"one of {', '.join(k for k in KINDS if k)}"),
            ("base_weights", m.base_weights is None or isinstance(m.base_weights, dict), "an object"),
            ("inputs", isinstance(m.inputs, list) and all(i in INPUTS for i in m.inputs)
             and len(set(m.inputs)) == len(m.inputs), f"a list of distinct names from {', '.join(INPUTS)}"),
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
    """Write ``folder/judge.json`` atomically (a temp file renamed over it), as this j1's schema version."""
    manifest = dataclasses.replace(manifest, schema_version=MANIFEST_VERSION)
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


GGUF_MANIFEST_KEY = "j1.manifest"  # where j1 export judge --gguf keeps the manifest in the file's metadata


@dataclass(frozen=True)
class NamedJudge:
    """What ``--judge`` names: a judge's manifest, and where its tokenizer is (a folder, or a GGUF file)."""

    manifest: Manifest
    folder: Path | None  # the judge's folder (None for a GGUF file)
    gguf: Path | None = None


def read_gguf_manifest(path: str | os.PathLike) -> Manifest:
    """The manifest ``j1 export judge --gguf`` keeps in a GGUF file's metadata.

    Raises:
        ValueError: the file holds none (not made by j1), naming the file.
    """
    import gguf

    reader = gguf.GGUFReader(str(path))
    field_ = reader.fields.get(GGUF_MANIFEST_KEY)
    if field_ is None:
        raise ValueError(f"{path}: no j1 manifest in this GGUF file (j1 export judge --gguf writes one); give the "
                         "judge's folder or judge.json instead")
    try:
        data = json.loads(field_.contents())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: its {GGUF_MANIFEST_KEY} is not valid JSON ({exc.msg})") from None
    return Manifest.from_json(data, f"{path}:{GGUF_MANIFEST_KEY}")


def named_judge(ref: str) -> NamedJudge:
    """The judge ``--judge`` names: a shipped judge, a folder holding ``judge.json``, a ``judge.json`` file, or a
    GGUF file ``j1 export judge --gguf`` wrote.

    Raises:
        ValueError: none of these, or a malformed manifest, naming the path.
    """
    path = Path(ref).expanduser()
    if ref.endswith(".gguf"):
        if not path.is_file():
            raise ValueError(f"--judge {ref}: no such file")
        return NamedJudge(read_gguf_manifest(path), None, path)
    if path.is_file() and path.name == MANIFEST:
        path = path.parent
    folder = judge_folder(ref) if not path.is_dir() else path
    if folder is None:
        raise ValueError(f"--judge {ref}: not a shipped judge ({', '.join(SHIPPED) or 'none'}), a folder with "
                         f"{MANIFEST}, a {MANIFEST} file or a GGUF file j1 wrote")
    manifest = read_manifest(folder)
    if manifest is None:
        raise ValueError(f"--judge {ref}: {folder} has no {MANIFEST}; --judge takes a judge j1 made (--model takes "
                         "any model)")
    return NamedJudge(manifest, folder)


def served_judge(ref: str, served_name: str | None, endpoint: str = "auto") -> tuple[str, dict]:
    """The engine's name for the judge ``ref`` names, and the HTTP backend's arguments that keep its manifest:
    its tokenizer (so its prompt is rendered as it was trained, ``endpoint`` permitting) and a check that the
    engine serves that name.

    Raises:
        ValueError: ``ref`` names no judge, or its manifest names no model and ``served_name`` is None.
    """
    named = named_judge(ref)
    name = served_name or named.manifest.name
    if not name:
        raise ValueError(f"--judge {ref}: its manifest names no model; pass --model with the engine's served name")
    tokenizer = None if endpoint == "chat" else judge_tokenizer(named)
    return name, {"tokenizer": tokenizer, "check_model": True}


def judge_tokenizer(judge: NamedJudge):
    """The named judge's tokenizer (left-padded), or None when it is not on this machine: its folder's own,
    else its base's (a local folder, the embedded model, or a hub id in the local cache), else the GGUF's."""
    from j1.models import load_tokenizer, resolve_model

    try:
        if judge.gguf is not None:
            from transformers import AutoTokenizer

            return AutoTokenizer.from_pretrained(str(judge.gguf.parent), gguf_file=judge.gguf.name)
        folder = judge.folder
        if folder is not None and (folder / "tokenizer_config.json").is_file():
            return load_tokenizer(str(folder))
        base = judge.manifest.base_model
        if base is None:
            return None
        if folder is not None and (folder / base).is_dir():
            base = str(folder / base)
        return load_tokenizer(resolve_model(base))
    except (OSError, ValueError) as exc:
        log.warning("the judge's tokenizer is not on this machine (%s): its prompts go to the engine as chat "
                    "messages", " ".join(str(exc).split())[:200])
        return None


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


def judge_manifest(model: str | None, judge: str | None = None, served: bool = False) -> Manifest | None:
    """The manifest of the judge asked: ``judge``'s (a judge j1 made, served by an engine), else a local ``model``'s
    (None for a plain model, a hub id, or a model an engine serves under ``model``)."""
    if judge is not None:
        return named_judge(judge).manifest
    return None if served else manifest_for(model)


def manifest_settings(manifest: Manifest | None, given: dict[str, Any], plain: dict[str, Any]) -> dict[str, Any]:
    """The judging settings of ``given`` (keys of ``Manifest.DEFAULTS``) with each unset one (None) filled: the
    manifest's value, else ``plain``'s (a plain model's default). A value the user gave is never overridden.

    >>> manifest_settings(Manifest("pos", samples=3), {"format": None, "samples": 1}, {"format": "pav"})
    {'format': 'pos', 'samples': 1}
    >>> manifest_settings(None, {"format": None, "template": "digest"}, {"format": "pav"})
    {'format': 'pav', 'template': 'digest'}
    """
    out = dict(given)
    for key, value in given.items():
        if value is not None:
            continue
        if manifest is not None:
            out[key] = getattr(manifest, key)
        elif key in plain:
            out[key] = plain[key]
    return out


def untrained_inputs(manifest: Manifest | None, used: Iterable[str]) -> list[str]:
    """The inputs in ``used`` that the judge of ``manifest`` never read in training (``Manifest.inputs``), in
    ``j1.formats.base.INPUTS`` order; none for a plain model (no manifest: nothing is known).

    >>> untrained_inputs(Manifest("pav", inputs=["reference"]), ["criteria", "reference"])
    ['criteria']
    >>> untrained_inputs(None, ["criteria"])
    []
    """
    from j1.formats.base import INPUTS

    if manifest is None:
        return []
    used = set(used)
    return [name for name in INPUTS if name in used and name not in manifest.inputs]


def warn_untrained_inputs(manifest: Manifest | None, used: Iterable[str], warned: set[str],
                          name: str | None = None) -> list[str]:
    """Log, once per input (``warned`` keeps what was said; the caller owns it: a judge, a run), that the judge
    is asked with an input it never read in training: it may ignore it, or read it as it reads the responses.
    Returns the inputs warned about now."""
    new = [i for i in untrained_inputs(manifest, used) if i not in warned]
    for i in new:
        warned.add(i)
        trained = ", ".join(manifest.inputs) if manifest.inputs else "none"
        log.warning("the judge %sis asked with a %s it was never trained to read (its judge.json lists inputs: %s); "
                    "it may ignore it. Train with --judge_inputs %s to teach it", f"{name} " if name else "", i,
                    trained, i)
    return new


def trained_manifest(*, formulation: str, template: str, prefill: str | None, max_new_tokens: int,
                     base_model: str | None, judge_dir: str | os.PathLike, trained_by: str,
                     inputs: Iterable[str] = ()) -> Manifest:
    """The manifest a training command writes beside its judge: asked as it was trained, greedily.

    A MultiTask judge is asked pairwise with verdicts (``pav``) by default; ``--format pos`` asks it
    pointwise. ``base_model`` is the adapter's base (None for a full model); ``inputs`` what its training
    prompts showed besides the request and the responses.
    """
    from j1.formats import FORMATS
    from j1.models import EMBEDDED_NAME, base_weights

    if base_model is not None and base_model in {"", "embedded", "default"}:
        base_model = EMBEDDED_NAME
    return Manifest(
        format=formulation if formulation in FORMATS else "pav", template=template, assistant_prefill=prefill,
        max_new_tokens=max_new_tokens, temperature=0.0, samples=1,
        base_model=base_reference(base_model, judge_dir), name=Path(judge_dir).resolve().name, trained_by=trained_by,
        kind="full" if base_model is None else "adapter",
        base_weights=None if base_model is None else base_weights(base_model),
        inputs=list(inputs),
    )
