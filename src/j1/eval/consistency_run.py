"""``j1 consistency``: judge every pair of K responses to each prompt, in both orders, and measure
how consistent the verdicts are without any label (IPI, TOV, intransitive triples: j1.eval.consistency).

It runs like ``j1 eval``: all prompts stream to the backend, each finished prompt is appended to
DIR/judgments.jsonl at once, and ``--resume`` asks only the prompts without a line. A response set
is an Item whose pairs are every (r_i, r_j), i < j; their labels are unused (``"tie"`` fills the
slot), so a pairwise format gets both orders of every pair and the pointwise format one score per
response. Responses come from the data file, or from ``--sampler-model`` (sampled once, kept in
DIR/responses.jsonl so a resumed run judges the same ones).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from j1.backends import Backend, SamplingParams, make_backend
from j1.data.pairs_io import prompt_text, response_list
from j1.eval import consistency as C
from j1.eval.consistency_scoring import score_consistency, verdict_matrix
from j1.eval.items import Item, item_prompts
from j1.eval.results import pair_view, write_results
from j1.eval.runner import judge_run, judged_slots, open_run, plan
from j1.eval.scoring import read_judgments
from j1.eval.spec import SHIPPED_SETS
from j1.formats import get_format
from j1.runs.atomic import write_jsonl_atomic
from j1.schema import RowError, read_json_rows, require

if TYPE_CHECKING:
    from j1.eval.spec import ConsistencySpec

log = logging.getLogger(__name__)

# Settings that must match for --resume, beyond those j1 eval checks.
EXTRA_RESUME_KEYS = ("responses", "sampler_model")


@dataclass(frozen=True)
class ResponseSet:
    id: str
    prompt: str
    responses: list[str]
    source: str | None = None  # where it was read (file:line)


def _responses(row: dict, where: str) -> list[str]:
    """``responses`` (a list), or ``chosen`` + ``rejected`` in that order: a pair row in any form
    ``j1.data.pairs_io`` reads (strings, assistant messages) or RewardBench 2's lists of strings."""
    if "responses" in row:
        values = require(row, "responses", list, where)
        if not all(isinstance(v, str) for v in values):
            raise RowError(f"{where}: field 'responses' must hold strings only")
        return values
    if "chosen" in row and "rejected" in row:
        return response_list(row["chosen"], "chosen", where) + response_list(row["rejected"], "rejected", where)
    raise RowError(f"{where}: missing field 'responses' (a list of strings; or 'chosen' and 'rejected')")


def load_response_sets(path: str | Path, k: int | None, limit: int | None = None) -> list[ResponseSet]:
    """The first ``limit`` rows of ``path``, each cut to its first ``k`` responses (``k`` None: the
    prompts only, for ``--sampler-model``).

    Raises:
        RowError: a malformed row, or one with fewer than ``k`` responses (``file:line: field …``).
    """
    sets: list[ResponseSet] = []
    seen: set[str] = set()
    for lineno, row in read_json_rows(path):
        if limit is not None and len(sets) >= limit:
            break
        where = f"{path}:{lineno}"
        prompt = prompt_text(require(row, "prompt", (str, list), where), where)
        rid = str(row.get("id", lineno))
        if rid in seen:
            raise RowError(f"{where}: field 'id' {rid!r} repeats an earlier row; ids must be unique")
        seen.add(rid)
        if k is None:
            sets.append(ResponseSet(rid, prompt, [], where))
            continue
        responses = _responses(row, where)
        if len(responses) < k:
            raise RowError(f"{where}: field 'responses' has {len(responses)} responses; --responses {k} needs "
                           f"at least {k} per prompt (lower --responses or drop the row)")
        sets.append(ResponseSet(rid, prompt, responses[:k], where))
    if not sets:
        raise RowError(f"{path}: no rows")
    return sets


def to_item(rs: ResponseSet) -> Item:
    """A response set as an eval Item: responses r0..r{K-1}, every pair i < j (labels unused)."""
    names = [f"r{i}" for i in range(len(rs.responses))]
    return Item(id=rs.id, category="consistency", prompt=rs.prompt, responses=dict(zip(names, rs.responses, strict=True)),
                pairs=[(a, b, "tie") for a, b in itertools.combinations(names, 2)], source=rs.source)


def sample_response_sets(backend: Backend, prompts: list[ResponseSet], k: int, params: SamplingParams) -> list[ResponseSet]:
    """K sampled answers to each prompt (one request with n = K per prompt)."""
    messages = [[{"role": "user", "content": p.prompt}] for p in prompts]
    outs = backend.generate(messages, params)
    return [ResponseSet(p.id, p.prompt, [c.text for c in comps[:k]], p.source) for p, comps in zip(prompts, outs, strict=True)]


def _response_sets(cfg: ConsistencySpec, out_dir: Path, open_sampler: Callable[[], Backend] | None) -> list[ResponseSet]:
    """The data's response sets, or sampled ones (reused from DIR/responses.jsonl when present)."""
    data = cfg.data or str(SHIPPED_SETS)  # set by the config; the default for callers passing None
    if not cfg.sampler_model:
        return load_response_sets(data, cfg.responses, cfg.limit)
    saved = out_dir / "responses.jsonl"
    if saved.exists():  # each set keeps where its prompt was read, so a resumed run's results.jsonl is the same
        return [replace(s, source=row.get("where") or s.source)
                for s, (_, row) in zip(load_response_sets(saved, cfg.responses), read_json_rows(saved), strict=True)]
    prompts = load_response_sets(data, None, cfg.limit)
    sampler = open_sampler() if open_sampler is not None else make_backend(cfg.sampler_model, cfg.base_url)
    try:
        params = SamplingParams(n=cfg.responses, temperature=cfg.sampler_temperature, top_p=1.0,
                                max_new_tokens=cfg.sampler_max_new_tokens, seed=cfg.seed)
        sets = sample_response_sets(sampler, prompts, cfg.responses, params)
    finally:
        sampler.close()
    write_jsonl_atomic(saved, ({"id": s.id, "prompt": s.prompt, "responses": s.responses, "where": s.source}
                               for s in sets))
    return sets


def write_consistency_results(path: Path, items: list[Item], fmt, records: dict, cfg: ConsistencySpec) -> int:
    """DIR/results.jsonl (``j1.eval.results``): every pair of each prompt's responses in both orders, nothing
    right or wrong (no labels); ``outcome`` holds the prompt's IPI, TOV and intransitive triples."""
    outcomes = {}
    for it in items:
        rec = records.get(it.id)
        if rec is not None and rec.complete(fmt.pairwise):
            p = C.prompt_consistency(verdict_matrix(fmt, rec, cfg.samples))
            outcomes[it.id] = {"ipi": p.ipi, "tov": p.tov, "tov_rate": p.tov_rate, "intransitive": p.intransitive,
                               "determined_triples": p.determined_triples}

    def view(item, rec):
        return pair_view(fmt, item, rec, k=cfg.samples, scheme=None, thoughts=cfg.texts)

    return write_results(path, "consistency", items, records, view, labelled=False, texts=cfg.texts,
                         outcomes=outcomes)


def run_consistency(cfg: ConsistencySpec, backend: Backend | None = None, *, open_backend: Callable[[], Backend] | None = None,
                    open_sampler: Callable[[], Backend] | None = None) -> dict:
    """Run ``j1 consistency`` for a ConsistencySpec; returns the metrics (see ``run_eval`` for the
    backend arguments; ``open_sampler`` builds the ``--sampler-model`` backend)."""
    folder = open_run(cfg, "consistency", stale=("metrics.json", "report.md", "results.jsonl"),
                      extra_keys=EXTRA_RESUME_KEYS)
    fmt = get_format(cfg.format, cfg.template)
    items = [to_item(s) for s in _response_sets(cfg, folder.path, open_sampler)]
    work = plan(items, fmt, judged_slots(folder.path), cfg.assistant_prefill)
    total = sum(len(item_prompts(fmt, it)) for it in items)
    log.info("consistency: %d prompts x %d responses, %d judge prompts x %d samples; %d already judged, %d to go",
             len(items), cfg.responses, total, cfg.samples, total - len(work), len(work))
    judge_run(cfg, folder, work, total, counts=dict(items=len(items)), backend=backend, open_backend=open_backend)
    write_consistency_results(folder.path / "results.jsonl", items, fmt, read_judgments(folder.result), cfg)
    metrics = score_consistency(folder.path, n_boot=cfg.n_boot)
    o = metrics["overall"]
    log.info("consistency %s: IPI %.3f, TOV %.2f (rate %.3f), intransitive %s, invalid %.3f (n=%d) -> %s", fmt.name,
             o["ipi"], o["tov"], o["tov_rate"], "–" if o["intransitive_rate"] is None else f"{o['intransitive_rate']:.3f}",
             o["invalid_rate"], metrics["n"], folder.path)
    return metrics
