"""The 30 blocks' projections of the embedded model at one decode step's rows, four ways, on this CPU.

    OMP_NUM_THREADS=2 .venv/bin/python results/bench/projection_variants.py --threads 2 --rows 32

The ways: torch's ``F.linear`` on the real weights in model order (what a step does); the same
weights packed for oneDNN; one block's 7 weights reused 30 times (hot in cache: whether the step is
memory-bound); and fused q/k/v and gate/up matrices (fewer, wider matmuls). Also the LM head plain
and oneDNN-packed, and a 1024 x 1024 sgemm as the cores' peak. Medians of 7, milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", type=int, default=32)
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    from torch.utils import mkldnn

    from j1.backends.local import LocalBackend

    torch.set_num_threads(args.threads)
    model = LocalBackend(None, dtype="float32").model
    linears = [m for m in model.model.layers.modules() if isinstance(m, torch.nn.Linear)]
    acts = {n: torch.randn(args.rows, n) for n in {m.in_features for m in linears}}

    def ms(fn, n=7) -> float:
        fn()
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1e3

    def packed(weight):
        dense = torch.nn.utils.skip_init(torch.nn.Linear, weight.shape[1], weight.shape[0], bias=False)
        dense.weight = torch.nn.Parameter(weight.detach(), requires_grad=False)
        return mkldnn.to_mkldnn(dense)

    def run(pairs):
        for x, w in pairs:
            F.linear(x, w)

    with torch.inference_mode():
        plain = [(acts[m.in_features], m.weight) for m in linears]
        onednn = [(acts[m.in_features], packed(m.weight)) for m in linears]
        hot = [(acts[m.in_features], m.weight) for m in linears[:7]] * len(model.model.layers)
        fused = []
        for layer in model.model.layers:
            at, mlp = layer.self_attn, layer.mlp
            for w in (torch.cat([at.q_proj.weight, at.k_proj.weight, at.v_proj.weight]), at.o_proj.weight,
                      torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]), mlp.down_proj.weight):
                fused.append((acts[w.shape[1]], w.contiguous()))
        head = model.lm_head.weight
        x = torch.randn(args.rows, head.shape[1])
        head_packed = packed(head)
        a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
        flops = 2 * args.rows * sum(m.in_features * m.out_features for m in linears)
        t_plain = ms(lambda: run(plain))
        rows = {
            "projections, F.linear": t_plain,
            "projections, oneDNN-packed": ms(lambda: [p(x_) for x_, p in onednn]),
            "one block's weights x 30 (hot)": ms(lambda: run(hot)),
            "fused q/k/v and gate/up": ms(lambda: run(fused)),
            "LM head, F.linear": ms(lambda: F.linear(x, head)),
            "LM head, oneDNN-packed": ms(lambda: head_packed(x)),
        }
        peak = 2 * 1024 ** 3 / ms(lambda: torch.mm(a, b), n=15) / 1e6
    for name, t in rows.items():
        print(f"{t:8.1f} ms  {name}")
    print(f"projections: {flops / t_plain / 1e6:.0f} GFLOP/s at {args.rows} rows; 1024 x 1024 sgemm: {peak:.0f} GFLOP/s")


if __name__ == "__main__":
    main()
