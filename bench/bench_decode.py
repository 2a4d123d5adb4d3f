"""Local decoding speed on the embedded model: j1's decode beside transformers' ``generate`` (and
llama.cpp when llama-cpp-python is installed), on the same judge prompts, in one run.

    OMP_NUM_THREADS=2 .venv/bin/python bench/bench_decode.py [--threads 2] [--rounds 3] [--floor] [--json out.json]

The workload: the pav prompts of ``bench_judge.py --items 2`` (4 prompts of 506-594 tokens, real
LLMBar pairs in both orders), 8 samples each at temperature 1, exactly ``--new-tokens`` new tokens
per sample (the stop token is held back). Each engine runs in its own process, once with 1 new
token (the prefill) and once with all of them, ``--rounds`` times with the order rotated; the
medians give judgments/s, prefill tokens/s (prompt tokens over the 1-token run), decode tokens/s
(the extra tokens over the extra time) and peak memory (the process's max RSS). Engines:

- ``j1``: ``LocalBackend`` (each prompt encoded once, ``j1.backends.decode``);
- ``j1-previous``: each prompt encoded once, then ``generate`` on the fanned-out cache (j1's path
  before ``j1.backends.decode``);
- ``generate-static-shared``: each prompt encoded once, its cache fanned out to its 8 rows and copied
  into a ``StaticCache`` sized for the new tokens, then ``generate`` on it (what decoding through
  ``generate`` instead of ``j1.backends.decode``'s loop would be, issue 56);
- ``generate`` and ``generate-static``: ``generate(num_return_sequences=8)`` on the 4 prompts, with
  transformers' dynamic and static cache;
- ``llamacpp``: llama-cpp-python's low-level batch API on the GGUF the embedded model ships in, one
  prompt at a time with its 8 sequences sharing the prompt's cache (the F32 file with ``--gguf``).

``--floor`` also times, in the same run, the parts of a decode step no engine can skip on these
weights with torch's kernels: the model's projections and LM head at the step's rows (random
activations, the real weights, read from memory as a step reads them) and the sampling draw
``generate`` makes (``torch.multinomial`` over the vocabulary, which fixes the random stream). Their
sum bounds the decode rate from above; with j1's measured prefill it bounds the judgments/s.

``--answer-stop`` measures something else on the same pairs: judging them as ``j1 judge --judge JUDGE
--samples S --temperature 1 --max-new-tokens N`` does (the judge's format, template and prefill), with
rows stopping at their answer's closing tag (``SamplingParams.stop``, what j1 does) and decoding on to EOS
or the limit (``stop=()``), alternated in one process, ``--rounds`` times. It reports judgments/s, the
tokens decoded (what the engine wrote) beside the tokens kept (up to each answer's end), and whether the
texts, finish reasons and token counts are the same both ways.

``--device cuda`` runs the torch engines on the GPU (``--dtype`` their weights): each timing ends with
a CUDA synchronisation and the JSON gains each engine's peak GPU memory. ``--data`` points at another
copy of the LLMBar dev file (a machine without ``../shared/data``).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENGINES = ("j1", "j1-previous", "generate-static-shared", "generate", "generate-static", "llamacpp")


def workload(items: int, data: str | None = None):
    sys.path.insert(0, str(HERE))
    from bench_judge import load_prompts

    return load_prompts(items, data)


def run_torch(engine: str, prompts, samples: int, new_tokens: int, threads: int, dtype: str = "float32",
              device: str = "cpu") -> dict:
    import torch

    from j1.backends import SamplingParams
    from j1.backends.local import LocalBackend

    torch.set_num_threads(threads)
    cuda = device == "cuda"
    backend = LocalBackend(None, batch_rows=samples * len(prompts), dtype=dtype, device=device)
    backend.model.generation_config.min_new_tokens = new_tokens  # hold the stop back: equal work
    tok, model = backend.tokenizer, backend.model
    texts = [backend.render(m) for m in prompts]
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
    kw = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=True, temperature=1.0, top_k=0,
              pad_token_id=tok.pad_token_id)
    # One short call first: kernel set-up and weight packing are not what is measured.
    backend.generate(prompts[:1], SamplingParams(n=samples, temperature=1.0, max_new_tokens=2, seed=1))
    torch.manual_seed(0)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    with torch.inference_mode():
        if engine == "j1":
            backend.generate(prompts, SamplingParams(n=samples, temperature=1.0, max_new_tokens=new_tokens, seed=0))
        elif engine == "j1-previous":
            from j1.backends import sharedprefix

            ids = enc.input_ids.repeat_interleave(samples, 0)
            mask = enc.attention_mask.repeat_interleave(samples, 0)
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
            cache = sharedprefix.prefix_cache(model, ids[:, :-1], mask[:, :-1], position_ids=pos[:, :-1])
            model.generate(input_ids=ids, attention_mask=mask, cache=cache, **kw)
        elif engine == "generate-static-shared":
            from transformers import StaticCache

            from j1.backends import sharedprefix

            ids = enc.input_ids.repeat_interleave(samples, 0)
            mask = enc.attention_mask.repeat_interleave(samples, 0)
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
            shared = sharedprefix.prefix_cache(model, ids[:, :-1], mask[:, :-1], position_ids=pos[:, :-1])
            cache = StaticCache(config=model.config, max_cache_len=ids.shape[1] + new_tokens)
            where = torch.arange(ids.shape[1] - 1, device=ids.device)
            for i, layer in enumerate(shared.layers):
                cache.update(layer.keys, layer.values, i, {"cache_position": where})
            model.generate(input_ids=ids, attention_mask=mask, cache=cache, **kw)
        else:
            extra = {"cache_implementation": "static"} if engine == "generate-static" else {}
            model.generate(input_ids=enc.input_ids, attention_mask=enc.attention_mask,
                           num_return_sequences=samples, **kw, **extra)
    if cuda:
        torch.cuda.synchronize()
    out = {"seconds": time.perf_counter() - t0, "prompt_tokens": int(enc.attention_mask.sum())}
    if cuda:
        out["peak_gpu_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return out


def run_llamacpp(prompts, samples: int, new_tokens: int, threads: int, gguf: str | None) -> dict:
    import numpy as np
    from llama_cpp import llama_cpp as C

    from j1.judging.chat import render
    from j1.models import embedded_gguf_path, load_tokenizer, resolve_model

    path = gguf or str(embedded_gguf_path())
    tok = load_tokenizer(resolve_model(None))
    token_lists = [tok(render(tok, m), add_special_tokens=False).input_ids for m in prompts]
    C.llama_backend_init()
    model = C.llama_model_load_from_file(path.encode(), C.llama_model_default_params())
    params = C.llama_context_default_params()
    params.n_ctx = max(map(len, token_lists)) + new_tokens + 8
    params.n_ctx *= samples
    params.n_batch = params.n_ubatch = 1024
    params.n_seq_max = samples
    params.n_threads = params.n_threads_batch = threads
    ctx = C.llama_init_from_model(model, params)
    vocab = C.llama_model_get_vocab(model)
    n_vocab = C.llama_vocab_n_tokens(vocab)
    memory = C.llama_get_memory(ctx)
    rng = np.random.default_rng(0)
    batch = C.llama_batch_init(1024, 0, samples)
    t0 = time.perf_counter()
    for ids in token_lists:
        C.llama_memory_clear(memory, True)
        batch.n_tokens = len(ids)
        for i, t in enumerate(ids):  # the prompt once, in sequence 0
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = t, i, 1
            batch.seq_id[i][0], batch.logits[i] = 0, i == len(ids) - 1
        if C.llama_decode(ctx, batch):
            raise RuntimeError("llama_decode failed on the prompt")
        for s in range(1, samples):  # its cache shared by the other sequences
            C.llama_memory_seq_cp(memory, 0, s, -1, -1)
        logits = np.ctypeslib.as_array(C.llama_get_logits_ith(ctx, len(ids) - 1), shape=(n_vocab,)).copy()
        rows = np.tile(logits, (samples, 1))
        for step in range(new_tokens):
            p = np.exp(rows - rows.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            nxt = [int(rng.choice(n_vocab, p=row)) for row in p]
            if step == new_tokens - 1:
                break
            batch.n_tokens = samples
            for s, t in enumerate(nxt):
                batch.token[s], batch.pos[s], batch.n_seq_id[s] = t, len(ids) + step, 1
                batch.seq_id[s][0], batch.logits[s] = s, True
            if C.llama_decode(ctx, batch):
                raise RuntimeError("llama_decode failed while decoding")
            rows = np.stack([np.ctypeslib.as_array(C.llama_get_logits_ith(ctx, s), shape=(n_vocab,))
                             for s in range(samples)])
    seconds = time.perf_counter() - t0
    C.llama_batch_free(batch)
    C.llama_free(ctx)
    C.llama_model_free(model)
    return {"seconds": seconds, "prompt_tokens": sum(map(len, token_lists))}


def run_floor(prompts, samples: int, threads: int, repeats: int = 7) -> dict:
    """Seconds of the unavoidable parts of one decode step at ``samples x len(prompts)`` rows, and of
    the prompts' projections (prefill linears), on the embedded fp32 weights."""
    import torch
    import torch.nn.functional as F

    from j1.backends.decode import _head
    from j1.backends.local import LocalBackend

    torch.set_num_threads(threads)
    backend = LocalBackend(None, dtype="float32")
    model, tok = backend.model, backend.tokenizer
    linears = [m for m in model.model.layers.modules() if isinstance(m, torch.nn.Linear)]
    head = _head(model)  # the LM head as j1.backends.decode runs it (oneDNN-packed on the CPU)
    rows = samples * len(prompts)
    lengths = [len(tok(backend.render(m), add_special_tokens=False).input_ids) for m in prompts]
    tokens = sum(lengths)
    config = model.config
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    gen = torch.Generator().manual_seed(0)

    def median_seconds(fn, n=repeats) -> float:
        fn()  # kernel set-up and weight packing are not what is measured
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    with torch.inference_mode():
        acts = {m.in_features: torch.randn(rows, m.in_features, generator=gen) for m in linears}
        hidden = torch.randn(rows, model.config.hidden_size, generator=gen)
        logits = torch.randn(rows, model.config.vocab_size, generator=gen)
        def projections(x):  # each output dropped at once, as in a forward: its memory is reused
            for m in linears:
                F.linear(x[m.in_features], m.weight)

        step_linears = median_seconds(lambda: projections(acts))
        step_head = median_seconds(lambda: head(hidden))
        # generate's draw: softmax, then one multinomial sample per row (an exponential per vocabulary entry).
        step_sample = median_seconds(lambda: torch.multinomial(torch.softmax(logits, -1), 1))
        big = {m.in_features: torch.randn(tokens, m.in_features, generator=gen) for m in linears}
        prefill_linears = median_seconds(lambda: projections(big), n=3)
        # Causal attention of each prompt over itself (unpadded, grouped heads), once per layer.
        qkv = [(torch.randn(1, heads, n, head_dim, generator=gen), torch.randn(1, kv_heads, n, head_dim, generator=gen),
                torch.randn(1, kv_heads, n, head_dim, generator=gen)) for n in lengths]

        def prompt_attention():
            for q, k, v in qkv:
                F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

        prefill_attention = median_seconds(prompt_attention, n=3) * config.num_hidden_layers
    step = step_linears + step_head + step_sample
    return {"rows": rows, "prompt_tokens": tokens, "step_linears_s": step_linears, "step_head_s": step_head,
            "step_sample_s": step_sample, "step_floor_s": step, "decode_ceiling_tok_s": rows / step,
            "prefill_linears_s": prefill_linears, "prefill_attention_s": prefill_attention,
            "prefill_floor_s": prefill_linears + prefill_attention}


def judge_prompts(items: int, data: str | None, judge: str) -> tuple[list, object]:
    """The first ``items`` LLMBar pairs in both orders as ``judge`` is asked (its manifest's format,
    template and prefill), and the format."""
    from j1.formats import get_format
    from j1.judging.chat import with_prefill
    from j1.judging.judges import judge_folder, read_manifest
    from j1.pairs import render_both

    sys.path.insert(0, str(HERE))
    from bench_judge import DATA

    manifest = read_manifest(judge_folder(judge))
    fmt = get_format(manifest.format, manifest.template)
    prompts = []
    with Path(data or DATA).open() as fh:
        for line in list(fh)[:items]:
            row = json.loads(line)
            prompts += [with_prefill(m, manifest.assistant_prefill)
                        for _, m in render_both(fmt, row["input"], row["output_1"], row["output_2"])]
    return prompts, fmt


def run_answer_stop(a) -> dict:
    """Judging with rows stopped at their answer and without, alternated ``a.rounds`` times in this process."""
    import dataclasses

    import torch

    from j1.backends import SamplingParams
    from j1.backends.local import LocalBackend
    from j1.judging.judge import judging

    torch.set_num_threads(a.threads)
    prompts, fmt = judge_prompts(a.items, a.data, a.judge)
    backend = LocalBackend(a.judge, batch_rows=a.samples * len(prompts), dtype=a.dtype, device=a.device)
    stop = judging(SamplingParams(n=a.samples, temperature=1.0, max_new_tokens=a.new_tokens, seed=0), fmt)
    variants = {"stop at the answer": stop, "decode on (stop=())": dataclasses.replace(stop, stop=())}
    if a.with_generate:
        variants["generate (static, shared prefill)"] = stop
    backend.generate(prompts[:1], dataclasses.replace(stop, max_new_tokens=2))  # kernel set-up, weight packing
    runs: dict[str, list[dict]] = {name: [] for name in variants}
    for r in range(a.rounds):
        names = list(variants) if r % 2 == 0 else list(variants)[::-1]
        for name in names:
            written: list[int] = []
            t0 = time.perf_counter()
            if name.startswith("generate"):
                runs[name].append({**generate_shared(backend, prompts, variants[name]),
                                   "seconds": time.perf_counter() - t0})
                print(f"round {r + 1}: {name} {runs[name][-1]['seconds']:.2f} s", flush=True)
                continue
            out = dict(backend.stream(prompts, variants[name], on_tokens=written.extend))
            seconds = time.perf_counter() - t0
            comps = [c for i in sorted(out) for c in out[i]]
            runs[name].append({"seconds": seconds, "decoded": len(written),
                               "kept": sum(c.completion_tokens for c in comps),
                               "stopped": sum(c.finish_reason == "stop" for c in comps),
                               "texts": [(c.text, c.finish_reason, c.completion_tokens) for c in comps]})
            print(f"round {r + 1}: {name} {seconds:.2f} s", flush=True)
    same = all(x["texts"] == y["texts"] for x, y in zip(*list(runs.values())[:2], strict=True))
    judgments = a.samples * len(prompts)
    rows = {}
    for name, rs in runs.items():
        rows[name] = {"judgments_per_s": judgments / statistics.median(x["seconds"] for x in rs),
                      "seconds": statistics.median(x["seconds"] for x in rs), "tokens_decoded": rs[0]["decoded"],
                      "tokens_kept": rs[0]["kept"], "ended_at_answer": rs[0]["stopped"], "samples": judgments}
    return {"judge": a.judge, "prompts": len(prompts), "texts_identical": same, "variants": rows}


def generate_shared(backend, prompts, params) -> dict:
    """``generate`` on each prompt's cache encoded once and copied into a ``StaticCache`` for its rows, with
    the answer's closing tag as a stop string: a row that stops is padded, not freed, until every row has
    stopped (how ``generate`` ends rows). Returns the tokens decoded (rows x steps), kept and stopped."""
    import torch
    from transformers import StaticCache

    from j1.backends import sharedprefix

    tok, model = backend.tokenizer, backend.model
    enc = tok([backend.render(m) for m in prompts], return_tensors="pt", padding=True, add_special_tokens=False)
    ids = enc.input_ids.repeat_interleave(params.n, 0)
    mask = enc.attention_mask.repeat_interleave(params.n, 0)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    torch.manual_seed(params.seed or 0)
    with torch.inference_mode():
        shared = sharedprefix.prefix_cache(model, ids[:, :-1], mask[:, :-1], position_ids=pos[:, :-1])
        cache = StaticCache(config=model.config, max_cache_len=ids.shape[1] + params.max_new_tokens)
        where = torch.arange(ids.shape[1] - 1)
        for i, layer in enumerate(shared.layers):
            cache.update(layer.keys, layer.values, i, {"cache_position": where})
        out = model.generate(input_ids=ids, attention_mask=mask, cache=cache, max_new_tokens=params.max_new_tokens,
                             do_sample=True, temperature=params.temperature, top_k=0, stop_strings=list(params.stop),
                             tokenizer=tok, pad_token_id=tok.pad_token_id)
    new = out[:, ids.shape[1]:]
    texts = tok.batch_decode(new, skip_special_tokens=True)
    return {"decoded": int(new.numel()), "kept": int((new != tok.pad_token_id).sum()),
            "stopped": sum(any(x in t for x in params.stop) for t in texts)}


def child(a) -> None:
    print(json.dumps(run_engine(a.child, a.new_tokens, a)))


def run_engine(engine: str, new_tokens: int, a) -> dict:
    prompts = workload(a.items, a.data)
    if engine == "floor":
        out = run_floor(prompts, a.samples, a.threads)
    elif engine == "llamacpp":
        out = run_llamacpp(prompts, a.samples, new_tokens, a.threads, a.gguf)
    else:
        out = run_torch(engine, prompts, a.samples, new_tokens, a.threads, a.dtype, a.device)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def measure(engine: str, new_tokens: int, a) -> dict:
    if a.in_process:
        return run_engine(engine, new_tokens, a)
    cmd = [sys.executable, __file__, "--child", engine, "--threads", str(a.threads), "--items", str(a.items),
           "--samples", str(a.samples), "--new-tokens", str(new_tokens), "--dtype", a.dtype,
           "--device", a.device] + (["--gguf", a.gguf] if a.gguf else []) + (["--data", a.data] if a.data else [])
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{engine}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'failed'}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--items", type=int, default=2, help="LLMBar pairs (each judged in both orders)")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                    help="weights of the torch engines")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the torch engines run")
    ap.add_argument("--data", default=None, help="LLMBar dev JSONL (default ../shared/data/llmbar_dev.jsonl)")
    ap.add_argument("--gguf", default=None, help="llama.cpp model file (default: the embedded Q4_1 GGUF)")
    ap.add_argument("--floor", action="store_true",
                    help="also time the step's unavoidable kernels (projections, LM head, sampling draw)")
    ap.add_argument("--in-process", action="store_true",
                    help="run every engine in this process, not one process each (no start-up per run: a quick "
                    "check; peak RSS is then the process's)")
    ap.add_argument("--answer-stop", action="store_true",
                    help="judge the pairs as --judge is asked, rows stopping at their answer and not, side by side")
    ap.add_argument("--judge", default="j1-135m", help="the judge of --answer-stop")
    ap.add_argument("--with-generate", action="store_true",
                    help="--answer-stop also times generate on the shared prefill's static cache, stopping rows "
                         "at the answer's tag (a stopped row is padded until every row stops)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(a)
    if a.answer_stop:
        return answer_stop(a)
    engines = [e for e in a.engines.split(",") if e]
    if a.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            ap.error("--device cuda: torch sees no CUDA device")
        if "llamacpp" in engines:  # llama-cpp-python's CPU build
            print("--device cuda: llamacpp left out (CPU only)")
            engines.remove("llamacpp")
        if a.floor:  # it times torch's CPU kernels
            print("--device cuda: --floor left out (CPU only)")
            a.floor = False
    if "llamacpp" in engines:
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            print("llama-cpp-python is not installed (pip install -e '.[llamacpp]'): llamacpp left out")
            engines.remove("llamacpp")
    runs: dict[str, list[tuple[dict, dict]]] = {e: [] for e in engines}
    for r in range(a.rounds):
        order = engines[r % len(engines):] + engines[: r % len(engines)]
        for e in order:
            runs[e].append((measure(e, 1, a), measure(e, a.new_tokens, a)))
            print(f"round {r + 1}: {e} done", flush=True)
    judgments = a.samples * 2 * a.items
    rows = {}
    for e, rs in runs.items():
        pre = statistics.median(p["seconds"] for p, _ in rs)
        full = statistics.median(f["seconds"] for _, f in rs)
        rows[e] = {
            "judgments_per_s": judgments / full,
            "prefill_tok_s": rs[0][0]["prompt_tokens"] / pre,
            "decode_tok_s": judgments * (a.new_tokens - 1) / max(full - pre, 1e-9),
            "seconds": full, "peak_rss_mb": max(f["peak_rss_mb"] for _, f in rs),
        }
        if a.device == "cuda":
            rows[e]["peak_gpu_mb"] = max(f["peak_gpu_mb"] for _, f in rs)
    print(f"\n{judgments} judgments ({2 * a.items} prompts x {a.samples} samples), {a.new_tokens} new tokens each, "
          f"{a.device} {a.dtype}, {a.threads} threads, median of {a.rounds} rounds")
    print(f"{'engine':<16} {'judgments/s':>11} {'prefill tok/s':>13} {'decode tok/s':>12} {'peak MB':>8}  "
          + "  ".join(f"x{e}" for e in rows))
    for e, row in rows.items():
        ratios = "  ".join(f"{row['judgments_per_s'] / rows[o]['judgments_per_s']:>{len(o) + 1}.2f}" for o in rows)
        print(f"{e:<16} {row['judgments_per_s']:>11.2f} {row['prefill_tok_s']:>13.0f} {row['decode_tok_s']:>12.0f} "
              f"{row['peak_rss_mb']:>8.0f}  {ratios}")
    floor = measure("floor", a.new_tokens, a) if a.floor else None
    if floor:
        floor.update(floor_lines(floor, rows, judgments, a.new_tokens))
        print(f"\nfloor of a decode step at {floor['rows']} rows: projections {floor['step_linears_s'] * 1e3:.0f} ms + "
              f"LM head {floor['step_head_s'] * 1e3:.0f} ms + sampling draw {floor['step_sample_s'] * 1e3:.0f} ms = "
              f"{floor['step_floor_s'] * 1e3:.0f} ms: at most {floor['decode_ceiling_tok_s']:.0f} decode tok/s")
        print(f"floor of the prefill ({floor['prompt_tokens']} prompt tokens): projections {floor['prefill_linears_s']:.2f} s + "
              f"causal attention {floor['prefill_attention_s']:.2f} s = {floor['prefill_floor_s']:.2f} s")
        print(f"judgments/s at most {floor['judgments_ceiling']:.2f} (both floors)"
              + (f", {floor['judgments_ceiling_j1_prefill']:.2f} with j1's measured prefill"
                 if "judgments_ceiling_j1_prefill" in floor else ""))
    if a.json:
        Path(a.json).write_text(json.dumps({"args": vars(a), "device": a.device, "dtype": a.dtype, "engines": rows,
                                            "floor": floor}, indent=2) + "\n", encoding="utf-8")


def answer_stop(a) -> None:
    import os

    result = run_answer_stop(a)
    print(f"\n{result['prompts']} prompts x {a.samples} samples of {a.judge}, up to {a.new_tokens} new tokens, "
          f"{a.device} {a.dtype}, {a.threads} threads, median of {a.rounds} rounds; texts identical both ways: "
          f"{result['texts_identical']}")
    print(f"{'variant':<22} {'judgments/s':>11} {'tokens decoded':>14} {'tokens kept':>11} {'ended at answer':>15}")
    for name, row in result["variants"].items():
        print(f"{name:<22} {row['judgments_per_s']:>11.2f} {row['tokens_decoded']:>14} {row['tokens_kept']:>11} "
              f"{row['ended_at_answer']:>9} of {row['samples']}")
    if a.json:
        Path(a.json).write_text(json.dumps({"args": vars(a), "load_average": os.getloadavg(), **result}, indent=2)
                                + "\n", encoding="utf-8")


def floor_lines(floor: dict, rows: dict, judgments: int, new_tokens: int) -> dict:
    """The judgments/s bounds: the prefill at its floor (or as j1 measured it), then every later token
    at the step floor (the first new token comes with the prefill)."""
    decode = (new_tokens - 1) * floor["step_floor_s"]
    out = {"judgments_ceiling": judgments / (floor["prefill_floor_s"] + decode)}
    if "j1" in rows:
        prefill_s = floor["prompt_tokens"] / rows["j1"]["prefill_tok_s"]
        out.update(j1_prefill_s=prefill_s, judgments_ceiling_j1_prefill=judgments / (prefill_s + decode))
    return out


if __name__ == "__main__":
    main()
