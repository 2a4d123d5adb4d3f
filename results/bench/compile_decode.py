"""What ``torch.compile`` costs and gives on ``j1.backends.decode``'s step, on this CPU.

    OMP_NUM_THREADS=2 timeout 3600 .venv/bin/python results/bench/compile_decode.py --threads 2

Compiles the decode step (inductor, ``dynamic=True``: the cache length grows every step and
compaction changes the batch), times the first call (4 new tokens on one prompt x 8 samples), then
the bench_decode workload (4 judge prompts x 8 samples x 48 tokens) eagerly and compiled.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import torch
    from bench_judge import load_prompts

    import j1.backends.decode as decode
    from j1.backends import SamplingParams
    from j1.backends.local import LocalBackend

    torch.set_num_threads(args.threads)
    prompts = load_prompts(2)
    backend = LocalBackend(None, batch_rows=32, dtype="float32")
    backend.model.generation_config.min_new_tokens = 48  # equal work: the stop is held back

    def seconds(new_tokens: int, batch=prompts, samples: int = 8) -> float:
        t0 = time.perf_counter()
        backend.generate(batch, SamplingParams(n=samples, temperature=1.0, max_new_tokens=new_tokens, seed=0))
        return time.perf_counter() - t0

    seconds(2, prompts[:1])
    print(f"eager: 48 tokens in {seconds(48):.1f} s", flush=True)
    decode._step = torch.compile(decode._step, dynamic=True)
    print(f"compiled: first call (4 tokens, one prompt) {seconds(4, prompts[:1]):.0f} s", flush=True)
    print(f"compiled: 48 tokens in {seconds(48):.1f} s", flush=True)


if __name__ == "__main__":
    main()
