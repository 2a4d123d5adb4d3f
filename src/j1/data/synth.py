"""The synthesis runs of ``j1 synth``: a source read, its pair file resumed (``j1.data.store``), the generator asked
(``synth_math``, ``synth_chat``, ``mismatch``, ``mix``), and the stats and run.json written beside the pairs.

The generators resume: rerunning the same command over an existing ``--out`` skips every prompt already finished.
Only the caller reads the environment: it passes the builders of the backends, holding their API keys.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from j1.backends.base import Backend
    from j1.data.spec import MixSpec, SynthChatSpec, SynthMathSpec, SynthMismatchSpec, ThoughtsSpec

    SynthSpec = SynthMathSpec | SynthChatSpec | SynthMismatchSpec | MixSpec


def run_math(cfg: SynthMathSpec, open_backend: Callable[[], Backend]) -> dict:
    """``j1 synth math``: the source's problems sampled into the pair file (resumed), its stats and run.json.
    ``open_backend`` builds the generator, only when a problem is left."""
    from j1.data.sources import load_math_problems, source_name
    from j1.data.store import PairStore, run_entry, run_folder
    from j1.data.synth_math import KIND, sample_counts_from_store, synth_math

    started = time.time()
    problems = load_math_problems(cfg.source, prompt_field=cfg.prompt_field, answer_field=cfg.answer_field,
                                  split=cfg.split, limit=cfg.limit)
    with PairStore(cfg.out, KIND) as store:
        todo = sum(p.id not in store.done for p in problems)
        before = len(store.done)
        backend = open_backend() if todo else _NoBackend()
        try:
            synth_math(backend, problems, store, cfg.sampling_params(), source=source_name(cfg.source),
                       progress=cfg.progress, deadline=_deadline(started, cfg.max_minutes),
                       chunk_size=cfg.concurrency if cfg.base_url else max(1, _rows(backend) // cfg.samples))
        finally:
            backend.close()
        stats = store.stats(
            prompts_seen=len(problems),
            run=run_entry(started, backend, len(store.done) - before, len(problems) - todo),
            extra={"samples": sample_counts_from_store(store), "source": cfg.source},
        )
        store.write_stats(stats)
        run_folder(store.out, "j1 synth math", started=started).write(cfg, pairs=stats["pairs"], done=stats["done"])
    return stats


def _rows(backend: Backend) -> int:
    """A local backend's rows per batch (set by the device when the flag is unset)."""
    return getattr(backend, "batch_rows", None) or 32


def verifier(cfg: SynthChatSpec, api_key: str | None = None) -> Backend | None:
    """The reference judge of ``--verify-with`` (None without it); 'embedded' = the default model. ``api_key``:
    its server's (``--verify_base_url``), read by the caller."""
    if not cfg.verify_with:
        return None
    from j1.backends import make_backend

    model = None if cfg.verify_with == "embedded" else cfg.verify_with
    api_key = api_key if cfg.verify_base_url else None
    kwargs = dict(concurrency=cfg.concurrency, timeout=cfg.timeout, max_retries=cfg.max_retries) \
        if cfg.verify_base_url else dict(batch_rows=cfg.batch_rows, dtype=cfg.dtype)
    return make_backend(model, cfg.verify_base_url, api_key=api_key, **kwargs)


def run_chat(cfg: SynthChatSpec, open_backend: Callable[[], Backend],
             open_verifier: Callable[[], Backend | None] = lambda: None) -> dict:
    """``j1 synth chat``: the source's prompts rewritten and answered into the pair file (resumed), its stats and
    run.json. ``open_backend`` builds the generator and ``open_verifier`` the ``--verify-with`` judge, only when a
    prompt is left."""
    from j1.data.filters import Embedder
    from j1.data.sources import load_chat_prompts, source_name
    from j1.data.store import PairStore, run_entry, run_folder
    from j1.data.synth_chat import KIND, options_from, synth_chat

    started = time.time()
    problems = load_chat_prompts(cfg.source, prompt_field=cfg.prompt_field, split=cfg.split, limit=cfg.limit,
                                 max_words=cfg.max_prompt_words)
    with PairStore(cfg.out, KIND) as store:
        todo = sum(p.id not in store.done for p in problems)
        before = len(store.done)
        backend = open_backend() if todo else _NoBackend()
        judge = open_verifier() if todo else None
        checks: dict = {}
        try:
            if todo:
                checks = dict(synth_chat(backend, problems, store, options_from(cfg), Embedder(cfg.embedder),
                                         source=source_name(cfg.source), judge=judge, progress=cfg.progress,
                                         deadline=_deadline(started, cfg.max_minutes)))
        finally:
            backend.close()
            if judge is not None:
                judge.close()
        stats = store.stats(
            prompts_seen=len(problems),
            run=run_entry(started, backend, len(store.done) - before, len(problems) - todo) | {"rewrite_checks": checks},
            extra={"rewrite_checks": _rewrite_checks(store), "source": cfg.source},
        )
        store.write_stats(stats)
        run_folder(store.out, "j1 synth chat", started=started).write(cfg, pairs=stats["pairs"], done=stats["done"])
    return stats


def _rewrite_checks(store) -> dict[str, int]:
    """How every rewrite candidate of every finished prompt fared (kept or its drop reason)."""
    from collections import Counter

    counts: Counter = Counter()
    for rec in [*store.pairs.values(), *store.dropped.values()]:
        counts.update(c["verdict"] for c in rec.get("meta", {}).get("rewrite_candidates", []))
    return dict(sorted(counts.items()))


def run_mismatch(cfg: SynthMismatchSpec) -> dict:
    """Write the mismatch pair file and OUT.run.json; returns the counts (see :mod:`j1.data.mismatch`)."""
    from j1.data.mismatch import mismatch_pairs
    from j1.data.sources import load_math_problems, source_name
    from j1.data.store import run_folder
    from j1.runs.atomic import write_jsonl_atomic

    started = time.time()
    problems = load_math_problems(cfg.source, prompt_field=cfg.prompt_field, answer_field=cfg.answer_field,
                                  split=cfg.split)
    pairs = mismatch_pairs(problems, pairs=cfg.pairs, max_words=cfg.max_words, seed=cfg.seed,
                           source=source_name(cfg.source), kind=cfg.kind, boxed_share=cfg.boxed_share)
    stats = {"kind": cfg.kind, "source": cfg.source, "questions": len(problems), "pairs": write_jsonl_atomic(cfg.out, pairs),
             "out": cfg.out}
    run_folder(cfg.out, "j1 synth mismatch", started=started).write(cfg, **stats)
    return stats


def run_mix(cfg: MixSpec) -> dict:
    from j1.data.mix import run_mix_config

    return run_mix_config(cfg)


def _deadline(started: float, max_minutes: float | None) -> float | None:
    return None if max_minutes is None else started + 60 * max_minutes


class _NoBackend:
    """Stands in when everything is already done: nothing is loaded and nothing is asked."""

    model_name = "none (all done)"

    def __init__(self):
        from j1.backends import Usage

        self.usage = Usage()

    def stream(self, prompts, params):
        if prompts:
            raise RuntimeError("no backend was built because nothing was left to do")
        return iter(())

    def close(self) -> None:
        pass


def summary_line(sub: str, cfg: SynthSpec, open_backend: Callable[[], Backend],
                 open_verifier: Callable[[], Backend | None] = lambda: None) -> str:
    """Run ``j1 synth SUB``; its summary line(s)."""
    if sub == "mismatch":
        stats = run_mismatch(cfg)  # a bad source or too few short questions: one line, from j1's handler
        return f"{stats['pairs']} mismatch pairs from {stats['questions']} questions -> {stats['out']}"
    if sub == "mix":
        from j1.data.mix import summary_text as mix_summary

        return mix_summary(run_mix(cfg))
    from j1.data.store import summary_text

    return summary_text(run_math(cfg, open_backend) if sub == "math" else run_chat(cfg, open_backend, open_verifier))


def run_thoughts(cfg: ThoughtsSpec, teacher: Backend | None = None) -> dict:
    """Write ``cfg.out``: every pair of ``cfg.pairs`` whose facts favour its winner, with its thoughts
    (``j1.data.rationales.with_thoughts``; a teacher's where one is given and agrees), and OUT.run.json. The
    others are left out and counted by reason; returns the counts."""
    from collections import Counter

    from tqdm import tqdm

    from j1.data.pairs_io import read_pair_file
    from j1.data.rationales import with_thoughts
    from j1.data.store import run_folder
    from j1.runs.atomic import write_jsonl_atomic

    started = time.time()
    pairs = read_pair_file(cfg.pairs)  # a malformed line: one error naming file:line and the field
    kept, reasons = [], Counter()
    for pair in tqdm(pairs, desc="thoughts", unit="pair"):
        made, why = with_thoughts(pair, reference_share=cfg.reference_share, seed=cfg.seed)
        reasons[why] += 1
        if made is not None:
            kept.append(made)
    teacher_counts: dict = {}
    if teacher is not None:
        from j1.data.teacher import teacher_thoughts

        kept, teacher_counts = teacher_thoughts(kept, teacher, max_tokens=cfg.teacher_max_tokens)
    if not kept:
        raise ValueError(f"{cfg.pairs}: no pair has facts that favour its winner ({dict(reasons)})")
    stats = {"pairs": len(pairs), "with_thoughts": write_jsonl_atomic(cfg.out, kept), "out": cfg.out,
             "constructions": dict(sorted(reasons.items())),
             "with_reference": sum("reference" in p.thoughts["reads"] for p in kept)}
    if teacher_counts:
        stats["teacher"] = teacher_counts
    run_folder(cfg.out, "j1 synth thoughts", started=started).write(cfg, **stats)
    return stats


def thoughts_summary(cfg: ThoughtsSpec, teacher_key: str | None = None) -> str:
    """Run ``j1 synth thoughts`` (with its teacher, if named); its summary line."""
    teacher = None
    if cfg.teacher:
        from j1.backends.openai_http import OpenAIBackend

        teacher = OpenAIBackend(cfg.teacher, cfg.teacher_model, api_key=teacher_key)
    try:
        stats = run_thoughts(cfg, teacher)
    finally:
        if teacher is not None:
            teacher.close()
    left = stats["pairs"] - stats["with_thoughts"]
    line = (f"{stats['with_thoughts']} of {stats['pairs']} pairs with thoughts ({stats['with_reference']} quoting the "
            f"reference); {left} left out: their facts do not favour the winner -> {stats['out']}")
    if "teacher" in stats:
        t = stats["teacher"]
        line += f"\nteacher: {t['kept']} pairs kept, {t['disagreed']} thoughts dropped for a verdict that disagrees"
    return line
