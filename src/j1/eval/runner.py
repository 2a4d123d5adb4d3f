"""``j1 eval``: judge every prompt of every item in one stream, append each judged prompt as it
finishes, and score the run.

All prompts (both orders of every pair, all 9 pairs of an RM-Bench item, or each response alone)
go to ``backend.stream`` at once: the local backend batches them by length and shares each
prompt's prefill across the N samples; the HTTP backend keeps ``concurrency`` requests in flight
with ``n=N`` each. Each finished prompt is appended to DIR/judgments.jsonl at once (fsynced), so a
run killed at any point loses only prompts still in flight; ``--resume`` asks exactly the prompts
without a line. A request that fails for good (BackendError) is recorded as an error line and the
run goes on, until errors pass ``max_error_rate`` of the prompts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tqdm.auto import tqdm

from j1.backends import Backend, BackendError, ContextTooLong, Messages, SamplingParams
from j1.eval.benchmarks import get_benchmark, load_items
from j1.eval.benchmarks.base import Asking
from j1.eval.items import Item, input_counts, item_prompts, keep_inputs
from j1.eval.report import write_report
from j1.eval.results import Viewer, pair_view, write_results
from j1.eval.scoring import compute_metrics, judgment_line, read_judgments
from j1.formats import get_format
from j1.judging.chat import with_prefill
from j1.judging.judge import judging
from j1.judging.judges import Manifest, warn_untrained_inputs
from j1.runs.atomic import JsonlAppender, write_json_atomic
from j1.runs.runinfo import RunFolder

if TYPE_CHECKING:
    from j1.eval.benchmarks.base import Benchmark
    from j1.eval.spec import EvalSpec
    from j1.formats.base import JudgeFormat

log = logging.getLogger(__name__)


class JudgingRun(Protocol):
    """What the judging steps below read of a command's spec: ``EvalSpec``, ``AttackSpec``, ``ConsistencySpec`` and
    ``LabelSpec`` (each a ``JudgeArgs``, ``SamplingArgs`` and ``RunArgs``)."""

    out: str
    resume: bool
    progress: bool
    model: str | None
    format: str
    template: str
    assistant_prefill: str | None
    samples: int
    max_new_tokens: int
    truncate: str
    max_error_rate: float

    def sampling_params(self) -> SamplingParams: ...

    def open_backend(self, api_key: str | None = None) -> Backend: ...

# Config fields that must match for --resume to continue a run (the rest, e.g. --limit,
# --concurrency or the server's --base-url, may change between attempts): what is judged, by which
# judge, asked how (the manifest's judging keys), and the seed.
RESUME_KEYS = ("benchmark", "data", "split", "hf_split", "ties", "model", *Manifest.DEFAULTS, "top_p", "seed",
               "rb2_mode", "rb2_rotations", "use_reference", "references")


class TooManyErrors(RuntimeError):
    """More prompts failed for good than ``max_error_rate`` allows."""


@dataclass
class Work:
    item: Item
    slot: str
    messages: Messages


def plan(items: list[Item], fmt, done: set[tuple[str, str]], prefill: str | None = None,
         prompts: Callable[[Item], list] | None = None) -> list[Work]:
    """The prompts still to judge, in item order, each ending with the assistant ``prefill`` if given
    (``prompts``: a benchmark's own ``item -> [(slot, messages)]``; default ``item_prompts``)."""
    prompts = prompts or (lambda it: item_prompts(fmt, it))
    return [Work(it, slot, with_prefill(m, prefill)) for it in items for slot, m in prompts(it)
            if (it.id, slot) not in done]


class TokenProgress:
    """The judging bar, counted in tokens and shown in prompts: each prompt's budget is its samples times
    the token limit; a decoding step adds a token for each sample that wrote one (``Backend.stream``'s
    ``on_tokens``), and a prompt that ends adds what is left of its budget. Prompts of a batch end
    together, so a bar that counted finished prompts read, after the first early stop, as if the whole
    batch would take that long per prompt; counted in tokens, its rate (and ETA) holds while a batch
    decodes. A backend that reports no steps moves it one whole prompt at a time.

    >>> class Bar:
    ...     n = 0
    ...     def update(self, k): self.n += k
    >>> p = TokenProgress(Bar(), budget=4)
    >>> p.tokens([7, 7, 9]); p.bar.n
    3
    >>> p.finish(7); p.finish(7); p.bar.n  # the rest of 7's budget, once
    5
    """

    def __init__(self, bar, budget: int):
        self.bar = bar
        self.budget = budget
        self.credited: dict[int, int] = {}

    def tokens(self, keys: list[int]) -> None:
        added = 0
        for key in keys:
            got = self.credited.get(key, 0)
            if got < self.budget:
                self.credited[key] = got + 1
                added += 1
        if added:
            self.bar.update(added)

    def finish(self, key: int) -> None:
        left = self.budget - self.credited.get(key, 0)
        if left > 0:
            self.credited[key] = self.budget
            self.bar.update(left)


def judge_stream(
    backend: Backend,
    work: list[Work],
    params: SamplingParams,
    out: JsonlAppender,
    *,
    max_errors: float,
    progress: bool = True,
) -> int:
    """Judge ``work``, appending one line per prompt as it finishes. Returns the error count.

    Raises:
        TooManyErrors: more than ``max_errors`` prompts failed for good.
    """
    pending = dict(enumerate(work))
    errors = 0
    budget = params.n * params.max_new_tokens
    bar = tqdm(total=len(work) * budget, desc="judging", unit="prompt", unit_scale=1 / budget,
               bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total:.0f} prompts [{elapsed}<{remaining}, "
                          "{rate_fmt}]", disable=not progress, dynamic_ncols=True)
    counted = TokenProgress(bar, budget)
    try:
        while pending:
            keys = list(pending)
            try:
                # The local backend generates a batch together: on_tokens moves the bar at each decoding
                # step, on_finish as each prompt ends.
                for i, comps in backend.stream([pending[k].messages for k in keys], params,
                                               on_finish=lambda i, keys=keys: counted.finish(keys[i]),
                                               on_tokens=lambda rows, keys=keys: counted.tokens([keys[i] for i in rows])):
                    w = pending.pop(keys[i])
                    out.write(judgment_line(w.item, w.slot, comps))
                    counted.finish(keys[i])
            except BackendError as exc:
                # The HTTP backend names the failed prompt; record it and restart with the rest.
                index = getattr(exc, "index", None)
                if index is None:
                    raise
                w = pending.pop(keys[index])
                out.write(judgment_line(w.item, w.slot, error=str(exc)))
                counted.finish(keys[index])
                log.warning("item %s slot %s failed: %s", w.item.id, w.slot, exc)
                if isinstance(exc, ContextTooLong):  # the judge cannot read this pair: invalid, not a failure
                    continue
                errors += 1
                if errors > max_errors:
                    raise TooManyErrors(
                        f"{errors} prompts failed for good (more than --max-error-rate allows: {max_errors}); "
                        f"last: {exc}. Fix the server and rerun with --resume."
                    ) from exc
    finally:
        bar.close()
    return errors


def open_run(cfg: JudgingRun, command: str, *, stale: tuple[str, ...], extra_keys: tuple[str, ...] = ()) -> RunFolder:
    """The run folder ``cfg.out`` of a judging command, checked for ``--resume`` (``RESUME_KEYS`` and
    ``extra_keys``), with the ``stale`` outputs of an earlier attempt removed: they are rewritten
    (atomically) when the run finishes, and would look complete while judging goes on."""
    folder = RunFolder(cfg.out, command=command, resume_keys=RESUME_KEYS + extra_keys)
    folder.check_resume(cfg, resume=cfg.resume)
    folder.clear(*stale)
    return folder


def score_run(out_dir: Path, *, n_boot: int = 1000) -> dict:
    """(Re)compute an eval run's DIR/metrics.json and DIR/report.md from DIR/judgments.jsonl and DIR/run.json
    (``j1 score`` goes through ``j1.eval.rescore``, which checks run.json first)."""
    run = RunFolder.read(out_dir)
    cfg = run["config"]
    bench = get_benchmark(cfg["benchmark"])
    if bench.score is not None:  # a benchmark with its own rules writes its own metrics and report
        return bench.score(out_dir, run, n_boot)
    records = read_judgments(out_dir / "judgments.jsonl")
    metrics = compute_metrics(
        get_format(cfg["format"], cfg.get("template", "full")), records, benchmark=bench.name, scheme=bench.scheme,
        model=run.get("model") or cfg.get("model") or "default", samples=cfg["samples"], seed=cfg["seed"],
        n_boot=n_boot,
    )
    write_json_atomic(out_dir / "metrics.json", metrics)
    write_report(out_dir, metrics, run)
    return metrics


def judged_slots(out_dir: Path) -> set[tuple[str, str]]:
    """The (item id, slot) pairs already judged without error in ``out_dir/judgments.jsonl`` (resume)."""
    judgments = out_dir / "judgments.jsonl"
    if not judgments.exists():
        return set()
    return {(r.id, s) for r in read_judgments(judgments).values() for s, line in r.slots.items() if line.error is None}


def judge_run(cfg: JudgingRun, folder: RunFolder, work: list[Work], total: int, *, counts: dict,
              backend: Backend | None = None, open_backend: Callable[[], Backend] | None = None) -> dict:
    """Judge ``work`` into the folder's judgments.jsonl with run.json kept current: the one judging step of
    ``j1 eval``, ``j1 attack`` and ``j1 consistency``. The backend is opened only when work is left (a
    finished run resumed loads no model) and closed if opened here. Returns run.json's info."""
    own_backend = backend is None and bool(work)
    if own_backend:
        backend = open_backend() if open_backend is not None else cfg.open_backend()
    # Nothing left to judge: no model is loaded; keep the recorded name.
    model = backend.model_name if backend is not None else folder.recorded().get("model") or cfg.model or "default"
    info = dict(model=model, **counts, prompts=total, status="running")
    folder.write(cfg, **info)
    t0 = time.time()
    try:
        with JsonlAppender(folder.result) as out:
            params = judging(cfg.sampling_params(), get_format(cfg.format, cfg.template))
            errors = judge_stream(backend, work, params, out,
                                  max_errors=cfg.max_error_rate * total, progress=cfg.progress) if work else 0
    finally:
        if own_backend:
            backend.close()
    info.update(status="complete", prompts_judged_now=len(work), errors_now=errors,
                generation_seconds=round(time.time() - t0, 3),
                usage=vars(backend.usage) if backend is not None else None)
    folder.write(cfg, **info)
    return info


def fit_items(items: list[Item], fmt: JudgeFormat, cfg: JudgingRun, backend: Backend,
              prompts: Callable[[Item], list] | None = None) -> tuple[list[Item], int]:
    """With ``--truncate left|middle``: each item whose judge prompt cannot fit the judge's context has
    its responses shortened until it does (``j1.judging.limits``); returns the items and how many were. An item
    that cannot fit even so stays whole: the backend refuses it and it counts invalid, with the reason."""
    from j1.backends import ContextTooLong
    from j1.judging.limits import ContextLimit, PromptFitter

    render = prompts or (lambda it: item_prompts(fmt, it))
    limit = ContextLimit(backend.context_window(), cfg.max_new_tokens, cfg.truncate)
    fitter = PromptFitter(
        limit, lambda it: [with_prefill(m, cfg.assistant_prefill) for _, m in render(it)], backend.count_tokens,
        backend.token_spans, responses=lambda it: dict(it.responses),
        rebuild=lambda it, texts: replace(it, responses={**it.responses, **texts}), hint="--truncate left|middle")
    out, shortened = [], 0
    for it in items:
        try:
            fitted = fitter.fit(it)
        except ContextTooLong:
            out.append(it)
            continue
        out.append(fitted.task)
        shortened += fitted.truncated
    return out, shortened


def judge_with_limits(cfg: JudgingRun, items: list[Item], fmt: JudgeFormat, folder: RunFolder, total: int, *, counts: dict,
                      backend: Backend | None, open_backend: Callable[[], Backend] | None,
                      prompts: Callable[[Item], list] | None = None) -> dict:
    """``plan`` then ``judge_run``, with ``--truncate left|middle`` applied first: the backend is then opened
    before the plan (shortening counts the judge's tokens) and ``counts`` gains ``truncated``."""
    own = None
    if cfg.truncate != "error":
        if backend is None:
            backend = own = open_backend() if open_backend is not None else cfg.open_backend()
        items, counts["truncated"] = fit_items(items, fmt, cfg, backend, prompts)
    try:
        work = plan(items, fmt, judged_slots(folder.path), cfg.assistant_prefill, prompts)
        log.info("%d prompts x %d samples; %d already judged, %d to go", total, cfg.samples, total - len(work),
                 len(work))
        return judge_run(cfg, folder, work, total, counts=counts, backend=backend, open_backend=open_backend)
    finally:
        if own is not None:
            own.close()


def eval_items(cfg: EvalSpec, bench) -> list[Item]:
    """The benchmark's items as the run judges them: loaded (with ``--references``), and without the reference
    inputs they carry unless ``--use_reference``."""
    items = load_items(bench, cfg.data, split=cfg.split, ties=cfg.ties, limit=cfg.limit, hf_split=cfg.hf_split,
                       references=cfg.references if cfg.use_reference else None)
    return items if cfg.use_reference else keep_inputs(items, ())


def asking(cfg: EvalSpec) -> Asking:
    """The settings a benchmark that asks its own way reads (RewardBench 2's mode, rotations, seed, wording)."""
    return Asking(seed=cfg.seed, template=cfg.template, rb2_mode=cfg.rb2_mode, rb2_rotations=cfg.rb2_rotations)


def plan_eval(cfg: EvalSpec) -> dict:
    """``j1 eval --dry_run``: the run's size without a model or a folder: items (per category), judge prompts,
    completions (prompts x samples), the most completion tokens (x max_new_tokens), and the prompts'
    characters with a token estimate (4 characters a token, a rule of thumb for English text; the judge's
    tokenizer is not loaded).

    Raises:
        RowError, ValueError, OSError: as a run would, before any model work.
    """
    from collections import Counter

    bench = get_benchmark(cfg.benchmark)
    fmt = get_format(cfg.format, cfg.template)
    items = eval_items(cfg, bench)
    render = (lambda it: bench.prompts(it, asking(cfg))) if bench.prompts is not None else (lambda it: item_prompts(fmt, it))
    messages = [with_prefill(m, cfg.assistant_prefill) for it in items for _, m in render(it)]
    chars = sum(len(turn["content"]) for m in messages for turn in m)
    return {
        "benchmark": bench.name, "data": cfg.data, "split": cfg.split or cfg.hf_split, "format": fmt.name,
        "model": cfg.model, "items": len(items), "categories": dict(Counter(it.category for it in items)),
        "prompts": len(messages), "samples": cfg.samples, "completions": len(messages) * cfg.samples,
        "max_new_tokens": cfg.max_new_tokens,
        "most_completion_tokens": len(messages) * cfg.samples * cfg.max_new_tokens,
        "prompt_characters": chars, "prompt_tokens_estimate": round(chars / 4),
        "inputs": input_counts(items),
    }


def eval_view(bench: Benchmark, fmt: JudgeFormat, cfg: EvalSpec) -> Viewer:
    """How results.jsonl reads an item of this benchmark: its own view (RewardBench 2), or pair by pair
    under its scoring rule, over all samples."""
    if bench.view is not None:
        return lambda item, rec: bench.view(item, rec, asking(cfg), cfg.samples, cfg.texts)
    return lambda item, rec: pair_view(fmt, item, rec, k=cfg.samples, scheme=bench.scheme, thoughts=cfg.texts)


def run_eval(cfg: EvalSpec, backend: Backend | None = None, *, open_backend: Callable[[], Backend] | None = None) -> dict:
    """Run ``j1 eval`` for an EvalSpec; returns the metrics.

    Args:
        cfg: the EvalSpec.
        backend: a ready backend to judge with (tests, benchmarks); the caller closes it.
        open_backend: builds the backend the config names, called only when there is work left (a
            finished run resumed loads no model). ``j1 eval`` passes one that reads the API key from
            the environment; the default, ``cfg.open_backend()``, sends none.
    """
    folder = open_run(cfg, "eval", stale=("metrics.json", "report.md", "results.jsonl"))
    bench = get_benchmark(cfg.benchmark)
    fmt = get_format(cfg.format, cfg.template)
    items = eval_items(cfg, bench)
    prompts = (lambda it: bench.prompts(it, asking(cfg))) if bench.prompts is not None else None
    total = sum(len(prompts(it) if prompts else item_prompts(fmt, it)) for it in items)
    inputs = input_counts(items)
    log.info("%s: %d items%s", bench.name, len(items),
             "".join(f", {k} with a {n}" for n, k in inputs.items()))
    warn_untrained_inputs(getattr(cfg, "manifest", None), inputs, set(), cfg.model)
    judge_with_limits(cfg, items, fmt, folder, total, counts=dict(items=len(items), inputs=inputs), backend=backend,
                      open_backend=open_backend, prompts=prompts)
    write_results(folder.path / "results.jsonl", "eval", items, read_judgments(folder.result),
                  eval_view(bench, fmt, cfg), labelled=True, texts=cfg.texts)
    metrics = score_run(folder.path, n_boot=cfg.n_boot)  # after results.jsonl: report.md shows examples from it
    log.info("%s %s: accuracy %.3f, consistent %.3f, invalid %.3f (n=%d) -> %s", bench.name, fmt.name,
             metrics["overall"]["accuracy"], metrics["overall"]["consistent_accuracy"],
             metrics["overall"]["invalid_rate"], metrics["n"], folder.path)
    return metrics
