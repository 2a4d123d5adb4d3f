"""Which speed-ups run where: every choice j1 makes by the device, in one place (STYLE 18).

A speed-up is on by default only on the device where it was measured faster (results/bench for
the CPU, bench/gpu_check.sh for a GPU). On a CPU a step is compute-bound, so work saved is time
saved: the shared-prompt encoding (one prompt pass for G rollouts) and ``j1.backends.decode`` win there. On
a GPU at small shapes a step is launch-bound: both add kernels and host syncs, and were measured
slower than TRL's own passes and ``generate``. The choice is made once, when a command's config is
built, and written to its ``run.json``.
"""

from __future__ import annotations

SETTINGS = ("auto", "true", "false")


def default_device() -> str:
    """``cuda`` when a CUDA device is present, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def device_type(device) -> str:
    """``"cpu"``, ``"cuda"``, ... of a device, a device string (``"cuda:1"``) or a tensor's device.

    >>> device_type("cuda:1"), device_type("cpu")
    ('cuda', 'cpu')
    """
    return getattr(device, "type", None) or str(device).split(":", 1)[0]


def parse_setting(name: str, value) -> str:
    """``auto``, ``true`` or ``false`` from a flag or a YAML value (a YAML ``true`` arrives as a bool).

    >>> parse_setting("share_prompt_prefix", True), parse_setting("share_prompt_prefix", "False")
    ('true', 'false')
    >>> parse_setting("share_prompt_prefix", "maybe")
    Traceback (most recent call last):
    ...
    ValueError: --share_prompt_prefix 'maybe': choose auto, true or false
    """
    text = {True: "true", False: "false"}.get(value, value) if isinstance(value, bool) else str(value).lower()
    if text not in SETTINGS:
        raise ValueError(f"--{name} {value!r}: choose auto, true or false")
    return text


def share_prompt(setting, device) -> bool:
    """Whether GRPO encodes each judge prompt once for its G rollouts (``j1.train.shared_prompt``).
    ``auto``: on the CPU only, where it was measured faster.

    >>> share_prompt("auto", "cpu"), share_prompt("auto", "cuda:0"), share_prompt("true", "cuda")
    (True, False, True)
    """
    setting = parse_setting("share_prompt_prefix", setting)
    return device_type(device) == "cpu" if setting == "auto" else setting == "true"


def fast_decode(device) -> bool:
    """Whether ``j1.backends.decode`` runs generation on this device (else ``generate``): on the CPU only, where
    it was measured faster than ``generate``; on a GPU its per-token host syncs lose to ``generate``.

    >>> fast_decode("cpu"), fast_decode("cuda")
    (True, False)
    """
    return device_type(device) == "cpu"


def native_bf16() -> bool:
    """Whether this machine computes bfloat16 natively (a CUDA GPU with bf16, or a CPU with AVX-512 BF16
    or AMX). Mixed-precision training pays only there: elsewhere bf16 is emulated and slower than fp32."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    return cpu_native_bf16()


def cpu_native_bf16() -> bool:
    """Whether this CPU has AVX-512 BF16 or AMX (without them torch emulates bf16 matrix products)."""
    import torch

    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # private, so looked up, not assumed
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in checks)


def local_dtype(setting: str, device, *, bf16_supported: bool | None = None) -> str:
    """The local judge's dtype. ``auto``: bfloat16 where the device computes it natively (a GPU that has
    it; a CPU with AVX-512 BF16 or AMX, where j1-135m judged 1.5-1.7x as fast as in fp32 and kept 233 of
    its 240 held-out verdicts, consistent accuracy within noise: results/bench/README.md), else float32
    (a CPU without bf16 units emulates it, several times slower).

    >>> local_dtype("auto", "cpu", bf16_supported=False), local_dtype("auto", "cpu", bf16_supported=True)
    ('float32', 'bfloat16')
    >>> local_dtype("auto", "cuda", bf16_supported=False), local_dtype("float16", "cpu")
    ('float32', 'float16')
    """
    if setting != "auto":
        return setting
    if bf16_supported is None:
        if device_type(device) == "cuda":
            import torch

            bf16_supported = torch.cuda.is_bf16_supported()
        else:
            bf16_supported = device_type(device) == "cpu" and cpu_native_bf16()
    return "bfloat16" if bf16_supported else "float32"


def rows_per_batch(setting: int | None, device) -> int:
    """Most sequences (prompts x samples) a local judge decodes together. Unset: 32 on a CPU (a
    judgment is compute-bound there; more rows only add padding), 256 on a GPU (a decode step costs
    about the same for 1 or 256 rows, so rows are throughput).

    >>> rows_per_batch(None, "cpu"), rows_per_batch(None, "cuda"), rows_per_batch(8, "cuda")
    (32, 256, 8)
    """
    if setting is not None:
        return setting
    return 256 if device_type(device) == "cuda" else 32


def serve_batch(setting: int | None, device) -> int:
    """Most judge items ``j1 serve`` gathers into one judge call. Unset: 32, or 128 for a local judge on
    a GPU (a pair in both orders is 2 rows: 128 pairs fill ``batch_rows``' 256).

    >>> serve_batch(None, "cpu"), serve_batch(None, "cuda"), serve_batch(8, "cuda")
    (32, 128, 8)
    """
    if setting is not None:
        return setting
    return 128 if device_type(device) == "cuda" else 32


def describe(device, *, dtype: str | None = None, share: bool | None = None) -> dict:
    """What ``run.json`` records of the device's choices.

    >>> describe("cpu", dtype="float32", share=True)
    {'device': 'cpu', 'dtype': 'float32', 'decode': 'j1.decode', 'share_prompt_prefix': True}
    """
    out = {"device": str(device), "dtype": dtype, "decode": "j1.decode" if fast_decode(device) else "generate"}
    if share is not None:
        out["share_prompt_prefix"] = share
    return out


def physical_cores() -> int:
    """The physical cores this process may run on: the CPUs of its affinity mask, counted once per
    (package, core) pair in sysfs (two SMT siblings are one core); ``os.cpu_count()`` where sysfs is absent."""
    import os
    from pathlib import Path

    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    cores = set()
    for cpu in cpus:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add((topology.joinpath("physical_package_id").read_text().strip(),
                       topology.joinpath("core_id").read_text().strip()))
        except OSError:
            cores.add(("cpu", str(cpu)))
    return max(1, len(cores))


# Less than this many cores' worth of other work counts as an idle machine (a shell, a browser tab).
BUSY_CORES = 0.5


def cpu_threads(physical: int, busy: float | None) -> int:
    """Torch threads for a CPU command: one per physical core that other processes leave free, at least one.

    On a shared machine a thread per core is the worst choice: torch's threads meet at a barrier after
    every operation, and a thread the OS has preempted for another process stalls the others (5-20x slower
    measured on 2 busy cores, results/bench/README.md). ``busy``: the cores other processes use (None:
    unknown, every core).

    >>> cpu_threads(2, 0.0), cpu_threads(2, 0.3), cpu_threads(2, 1.0), cpu_threads(2, 2.0), cpu_threads(16, 3.2)
    (2, 2, 1, 1, 13)
    >>> cpu_threads(4, None)
    4
    """
    if busy is None or busy < BUSY_CORES:
        return physical
    return max(1, min(physical, round(physical - busy)))


def cpu_busy(ticks_before: tuple[int, int], ticks_after: tuple[int, int], cpus: int) -> float:
    """The cores in use between two readings of ``/proc/stat``'s total line, (busy ticks, all ticks).

    >>> cpu_busy((100, 400), (160, 480), 2)  # 60 of 80 ticks busy on 2 CPUs
    1.5
    """
    busy, total = ticks_after[0] - ticks_before[0], ticks_after[1] - ticks_before[1]
    return round(cpus * busy / total, 2) if total > 0 else 0.0


def cpu_ticks() -> tuple[int, int] | None:
    """(busy ticks, all ticks) of all CPUs from ``/proc/stat`` (idle and iowait are not busy); None off Linux."""
    from pathlib import Path

    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields[:8]) - idle, sum(fields[:8])


def busy_cores(window: float = 0.2) -> float | None:
    """How many cores other processes keep busy now, over ``window`` seconds while this one sleeps; None
    where ``/proc/stat`` cannot be read."""
    import os
    import time

    before = cpu_ticks()
    if before is None:
        return None
    time.sleep(window)
    after = cpu_ticks()
    return cpu_busy(before, after, os.cpu_count() or 1) if after is not None else None

