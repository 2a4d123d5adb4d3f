"""Whether a Hugging Face id a command names can be had (in the local cache, or the hub reachable), checked
before anything loads or a folder is made, so an offline machine fails in one line, not after a minute of
retries (issue 43). Environment variables are the CLI's to read: it passes TRANSFORMERS_OFFLINE in.
"""

from __future__ import annotations

from pathlib import Path

# Fields that name a model or a dataset, which may be a Hugging Face id.
HUB_MODEL_FIELDS = ("model", "base", "sampler_model", "verify_with", "base_model", "model_name_or_path")
HUB_DATA_FIELDS = ("data", "source")


def check_hub_inputs(*configs, transformers_offline: bool = False) -> None:
    """Before anything loads or a folder is made: every model and dataset the ``configs`` name as a
    Hugging Face id can be had (cached, or the hub reachable), else ValueError in one line.

    A served model (``--base_url``) is the server's business; ``verify_with`` on its own server too.
    ``transformers_offline``: the TRANSFORMERS_OFFLINE switch, read by the CLI.
    """
    for cfg in configs:
        served = bool(getattr(cfg, "base_url", None))
        for name in HUB_MODEL_FIELDS:
            value = getattr(cfg, name, None)
            if name in ("model", "sampler_model") and served:
                continue
            if name == "verify_with" and (value == "embedded" or getattr(cfg, "verify_base_url", None)):
                continue
            if isinstance(value, str):
                check_hub_model(value, name, transformers_offline=transformers_offline)
        for name in HUB_DATA_FIELDS:
            value = getattr(cfg, name, None)
            if isinstance(value, str):
                check_hub_dataset(value, name)


# Seconds to wait for the hub's host before calling it unreachable: an offline machine fails in
# seconds, not after huggingface_hub's minute of retries (issue 43).
HUB_CONNECT_TIMEOUT_S = 3.0


def check_hub_model(name: str | None, flag: str = "model", *, transformers_offline: bool = False) -> None:
    """Fail now, in one line, when ``name`` is a Hugging Face id that is neither in the local HF cache
    nor reachable (``HF_HUB_OFFLINE=1``, or no route to the hub). Shipped judges, the embedded model,
    folders and anything that looks like a path pass (their own checks name a missing folder).

    Raises:
        ValueError: naming the flag, the id and the fix.
    """
    from j1.judging.judges import SHIPPED
    from j1.models import EMBEDDED_NAME

    if not name or name in SHIPPED or name in {EMBEDDED_NAME, "embedded", "default"}:
        return
    if Path(name).expanduser().exists() or name.startswith(("/", ".", "~")) or name.count("/") > 1:
        return
    from huggingface_hub import constants, try_to_load_from_cache

    for probe in ("config.json", "adapter_config.json"):
        if isinstance(try_to_load_from_cache(name, probe), str):
            return
    offline = constants.HF_HUB_OFFLINE or transformers_offline
    if offline:
        raise ValueError(f"--{flag} {name}: not a folder and not in the Hugging Face cache, and HF_HUB_OFFLINE is "
                         "set; download it first (hf download " + name + ") or give a local folder")
    if not _hub_reachable(constants.ENDPOINT):
        raise ValueError(f"--{flag} {name}: not a folder and not in the Hugging Face cache, and {constants.ENDPOINT} "
                         "cannot be reached; download it where there is a network, or give a local folder")


def check_hub_dataset(source: str | None, flag: str) -> None:
    """Fail now, in one line, when ``source`` names a Hugging Face dataset and the hub cannot be reached
    (without HF_HUB_OFFLINE, ``datasets`` spends its retries first). Offline mode is left to
    ``datasets``: it reads its cache, or fails at once.

    Raises:
        ValueError: naming the flag, the id and the fix.
    """
    from huggingface_hub import constants

    from j1.data.sources import looks_local

    if not source or Path(source).exists() or looks_local(source) or constants.HF_HUB_OFFLINE:
        return
    if not _hub_reachable(constants.ENDPOINT):
        raise ValueError(f"--{flag} {source}: not a local file, and {constants.ENDPOINT} cannot be reached; give a "
                         "local .jsonl/.json/.parquet file, or set HF_HUB_OFFLINE=1 to read a cached copy")


def _hub_reachable(endpoint: str) -> bool:
    """Whether a TCP connection to the hub's host opens within ``HUB_CONNECT_TIMEOUT_S``."""
    import socket
    from urllib.parse import urlparse

    url = urlparse(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=HUB_CONNECT_TIMEOUT_S).close()
    except OSError:
        return False
    return True
