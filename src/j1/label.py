"""``j1 label``: turn unlabelled responses into a preference dataset in TRL's format, judged in both orders.

Each input row is ``{"prompt", "responses": [...]}`` (two or more) or ``{"prompt", "response_a",
"response_b"}``, with an optional ``criteria`` (text or a rubric object; else ``--criteria``) and
``reference`` (a gold answer) the judge reads. Every pair of a row's responses is judged in both orders, as
``j1 eval`` does: all
judge prompts stream to the backend, each finished one is appended to DIR/judgments.jsonl (fsynced),
and ``--resume`` asks only the prompts without a line, so a killed run loses only what was in flight
and repeats nothing. DIR/preferences.jsonl is then written whole (temp + rename) from the judgments.

The rule (``preference``): each response's win rate over its pairs (``j1.rewards.group.win_rates``:
every judge sample of both orders is a vote, a tie half a win, an invalid vote dropped); ``chosen`` is
the highest rate, ``rejected`` the lowest (equal rates: the earlier response is chosen, the later
rejected). ``consistent``: the chosen-vs-rejected pair's verdicts agree in both orders and favour
``chosen``. ``vote_margin``: that pair's valid votes for ``chosen`` minus those for ``rejected``, over
its valid votes (-1..1). ``margin`` is the judge's confidence in ``chosen`` over ``rejected``, and
``margin_kind`` says which: ``logodds`` (a local ``pav`` judge, ``--margin auto|logodds``: the verdict
log-odds as ``j1 probe`` reads them, chosen's log p(letter) - log p(other letter) after a fixed thought,
averaged over both orders so a position preference cancels) or ``votes`` (``vote_margin``: a served
judge, another format, or ``--margin votes``). A row without any valid vote has no preference and is
never written; ``--keep consistent`` also drops the rows that are not consistent.

>>> spec = LabelSpec(data="rows.jsonl", out="labels")                  # doctest: +SKIP
>>> run_label(spec)["written"]                                          # doctest: +SKIP
20
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from j1.backends import Backend
from j1.backends.spec import BackendArgs, SamplingArgs
from j1.data.pairs_io import row_inputs
from j1.eval.items import Item, input_counts, item_prompts, pair_slot
from j1.formats import get_format, require_arity
from j1.judging.judge import assemble
from j1.judging.judges import warn_untrained_inputs
from j1.judging.spec import CriteriaArgs, JudgeArgs
from j1.pairs import ORDERS, Verdict, combine_orders, swap
from j1.rewards.group import win_rates
from j1.runs.atomic import write_jsonl_atomic
from j1.runs.spec import RunArgs
from j1.schema import RowError, read_json_rows, require

log = logging.getLogger(__name__)

KEEP = ("consistent", "all")
MARGINS = ("auto", "logodds", "votes")


@dataclass
class LabelSpec(RunArgs, JudgeArgs, CriteriaArgs, BackendArgs, SamplingArgs):
    """``j1 label``: judge unlabelled responses in both orders and write TRL preference rows."""

    data: str | None = field(
        default=None, metadata={"help": "JSONL/JSON/Parquet rows: 'prompt' and 'responses' (a list of two or more), "
                                "or 'prompt', 'response_a' and 'response_b'; an optional 'id'."})
    out: str | None = field(
        default=None, metadata={"help": "Run folder: judgments.jsonl (appended as judged), results.jsonl (each row "
                                "judged, in file order), preferences.jsonl "
                                "(prompt, chosen, rejected, verdicts, consistent, margin), run.json."})
    keep: str = field(
        default="consistent", metadata={"help": "consistent: only rows whose chosen-vs-rejected verdicts agree in "
                                        "both orders; all: every row with a valid vote."})
    margin: str = field(
        default="auto", metadata={"help": "The judge's margin for chosen over rejected: logodds (a local pav judge: "
                                  "the verdict log-odds as j1 probe reads them, both orders averaged), votes (the "
                                  "share of samples); auto: logodds where possible, else votes."})
    limit: int | None = field(default=None, metadata={"help": "Only the first N rows (file order)."})

    def __post_init__(self) -> None:
        self._setup_judge()
        self._setup_criteria()
        self._judges_as_written("j1 label keeps each response as written")
        require_arity(self.format, (2,), "j1 label")  # a preference is read from pairwise verdicts
        if not self.data:
            raise ValueError("j1 label needs --data (rows with 'prompt' and 'responses')")
        self._check_run("j1 label", "rows")
        if self.keep not in KEEP:
            raise ValueError(f"--keep {self.keep!r}: choose one of {', '.join(KEEP)}")
        if self.margin not in MARGINS:
            raise ValueError(f"--margin {self.margin!r}: choose one of {', '.join(MARGINS)}")
        readable = self.base_url is None and self.format == "pav"  # the probe reads a local model's letter logits
        if self.margin == "logodds" and not readable:
            raise ValueError("--margin logodds reads a local pav judge's logits; this judge is "
                             + (f"served at {self.base_url}" if self.base_url else f"{self.format!r}")
                             + ": use --margin votes")
        if self.margin == "auto":
            self.margin = "logodds" if readable else "votes"


@dataclass(frozen=True)
class PairVotes:
    """One judged pair of a row: responses ``first`` and ``second`` (indices), each order's verdict and
    every sample's vote, all in original naming (``A`` = ``first``)."""

    first: int
    second: int
    ab: str
    ba: str
    votes: list[str]


def preference(n: int, pairs: Sequence[PairVotes]) -> dict | None:
    """The preference of a row of ``n`` responses (the module's rule); None without a valid vote.

    Returns:
        ``{"chosen", "rejected"}`` (indices), ``win_rates``, ``verdicts`` (``{"AB", "BA"}`` of the
        chosen-vs-rejected pair, ``A`` = chosen), ``consistent`` and ``margin``.

    >>> preference(2, [PairVotes(0, 1, "B", "B", ["B", "B"])])["chosen"]
    1
    >>> p = preference(2, [PairVotes(0, 1, "A", "B", ["A", "B"])])             # a flip: no winner
    >>> p["chosen"], p["rejected"], p["consistent"], p["margin"]
    (0, 1, False, 0.0)
    """
    rates = win_rates(n, [(p.first, p.second, p.votes) for p in pairs], no_contest=None)
    valid = [k for k in range(n) if rates[k] is not None]
    if len(valid) < 2:
        return None
    chosen = max(valid, key=lambda k: (rates[k], -k))
    rejected = min((k for k in valid if k != chosen), key=lambda k: (rates[k], -k))
    direct = next((p for p in pairs if {p.first, p.second} == {chosen, rejected}), None)
    verdicts, consistent, margin = None, False, None
    if direct is not None:
        flip = direct.first != chosen  # name the chosen response A
        ab, ba = (swap(v) if flip else Verdict(v) for v in (direct.ab, direct.ba))
        verdicts = {"AB": ab.value, "BA": ba.value}
        consistent = combine_orders(ab, ba) == Verdict.A.value
        votes = [swap(v) if flip else Verdict(v) for v in direct.votes]
        counted = [v for v in votes if v in (Verdict.A, Verdict.B, Verdict.TIE)]
        if counted:
            margin = (votes.count(Verdict.A) - votes.count(Verdict.B)) / len(counted)
    return {"chosen": chosen, "rejected": rejected, "win_rates": rates, "verdicts": verdicts,
            "consistent": consistent, "margin": margin}


@dataclass(frozen=True)
class Row:
    id: str
    prompt: str
    responses: list[str]
    source: str | None = None  # where it was read (file:line)
    criteria: str | None = None  # what the judge reads besides the responses (j1.formats.base.Guidance)
    reference: str | None = None


def parse_row(obj: dict, where: str, default_id: str) -> Row:
    """One input row: ``prompt`` and ``responses`` (two or more strings) or ``response_a``/``response_b``;
    optional ``id``, ``criteria`` (text or a rubric object) and ``reference``.

    Raises:
        RowError: naming ``where`` and the field.
    """
    prompt = require(obj, "prompt", str, where)
    if "responses" in obj:
        responses = require(obj, "responses", list, where)
        bad = next((i for i, r in enumerate(responses) if not isinstance(r, str)), None)
        if bad is not None:
            raise RowError(f"{where}: field 'responses'[{bad}] must be a string, got {type(responses[bad]).__name__}")
        if len(responses) < 2:
            raise RowError(f"{where}: field 'responses' has {len(responses)}; a preference needs at least 2")
    elif "response_a" in obj or "response_b" in obj:
        responses = [require(obj, "response_a", str, where), require(obj, "response_b", str, where)]
    else:
        raise RowError(f"{where}: missing field 'responses' (a list of two or more strings; or 'response_a' "
                       "and 'response_b')")
    return Row(str(obj.get("id", default_id)), prompt, list(responses), where, **row_inputs(obj, where))


def load_rows(path: str | Path, limit: int | None = None, criteria: str | None = None) -> list[Row]:
    """The first ``limit`` rows of ``path``; ``criteria`` for the rows that give none of their own.

    Raises:
        RowError: a malformed row (``file:line: field …``), a repeated id, or no rows.
    """
    rows: list[Row] = []
    seen: set[str] = set()
    for lineno, obj in read_json_rows(path):
        if limit is not None and len(rows) >= limit:
            break
        where = f"{path}:{lineno}"
        row = parse_row(obj, where, str(lineno))
        if row.criteria is None and criteria is not None:
            row = replace(row, criteria=criteria)
        if row.id in seen:
            raise RowError(f"{where}: field 'id' {row.id!r} repeats an earlier row; ids must be unique")
        seen.add(row.id)
        rows.append(row)
    if not rows:
        raise RowError(f"{path}: no rows")
    return rows


def label_rows(judge, rows: Sequence[dict], keep: str = "consistent", samples: int | None = None) -> list[dict]:
    """``j1 label`` in memory with a loaded ``j1.api.Judge`` (``Judge.label``): every pair of each row
    judged in both orders in one ``compare_many`` call; the rows ``preference_rows`` writes.

    Raises:
        ValueError: a bad ``keep``, a pointwise judge, or a malformed row (``row K: field …``).
    """
    if keep not in KEEP:
        raise ValueError(f"keep {keep!r}: choose one of {', '.join(KEEP)}")
    if not judge.format.pairwise:
        raise ValueError(f"label() reads pairwise verdicts; this judge is {judge.format.name!r} (pointwise)")
    parsed = [parse_row(obj, f"row {k}", str(k)) for k, obj in enumerate(rows)]
    asks = [(r, to_item(r)) for r in parsed]
    flat = [{"prompt": r.prompt, "response_a": it.responses[a], "response_b": it.responses[b], "criteria": r.criteria,
             "reference": r.reference} for r, it in asks for a, b, _ in it.pairs]
    judgments = iter(judge.compare_many(flat, samples))
    out = []
    for row, item in asks:
        pairs = []
        for first, second, _ in item.pairs:
            j = next(judgments)
            ab, ba = (o.verdict for o in j.orders)
            pairs.append(PairVotes(int(first[1:]), int(second[1:]), ab, ba, [s.verdict for o in j.orders for s in o.samples]))
        record = _record(row, preference(len(row.responses), pairs))
        if record is not None and (keep == "all" or record["consistent"]):
            out.append(record)
    return out


def _record(row: Row, pref: dict | None) -> dict | None:
    """The preferences.jsonl line of ``row`` (TRL's prompt, chosen, rejected first); None without a preference."""
    if pref is None:
        return None
    return {"id": row.id, "prompt": row.prompt, "chosen": row.responses[pref["chosen"]],
            "rejected": row.responses[pref["rejected"]], "chosen_index": pref["chosen"],
            "rejected_index": pref["rejected"], "verdicts": pref["verdicts"], "consistent": pref["consistent"],
            "margin": pref["margin"], "margin_kind": "votes", "vote_margin": pref["margin"],
            "win_rates": pref["win_rates"]}


def to_item(row: Row) -> Item:
    """A row as an eval Item: responses r0..r{K-1}, every pair i < j (the label slot is unused)."""
    names = [f"r{i}" for i in range(len(row.responses))]
    return Item(id=row.id, category="label", prompt=row.prompt, responses=dict(zip(names, row.responses, strict=True)),
                pairs=[(a, b, "tie") for a, b in itertools.combinations(names, 2)], source=row.source,
                criteria=row.criteria, reference=row.reference)


def preference_rows(fmt, rows: Sequence[Row], records: dict, keep: str) -> tuple[list[dict], dict, dict]:
    """The preference dataset from the read-back judgments, the counts of what was dropped, and each row's
    outcome by id (results.jsonl: chosen and rejected by name, consistent, vote margin, written or why not)."""
    out, counts = [], {"rows": len(rows), "no_valid_vote": 0, "inconsistent": 0, "incomplete": 0}
    outcomes: dict[str, dict] = {}
    for row in rows:
        rec = records.get(row.id)
        item = to_item(row)
        if rec is None or not rec.complete(True):
            counts["incomplete"] += 1
            outcomes[row.id] = _outcome(None, "incomplete")
            continue
        pairs = []
        for p, (first, second, _) in enumerate(item.pairs):
            judgment = assemble(fmt, {o.value: rec.slots[pair_slot(item.pairs, p, o)].texts for o in ORDERS})
            ab, ba = (o.verdict for o in judgment.orders)
            votes = [s.verdict for o in judgment.orders for s in o.samples]
            pairs.append(PairVotes(int(first[1:]), int(second[1:]), ab, ba, votes))
        record = _record(row, preference(len(row.responses), pairs))
        if record is None:
            counts["no_valid_vote"] += 1
            outcomes[row.id] = _outcome(None, "no_valid_vote")
            continue
        if keep == "consistent" and not record["consistent"]:
            counts["inconsistent"] += 1
            outcomes[row.id] = _outcome(record, "inconsistent")
            continue
        outcomes[row.id] = _outcome(record, None)
        out.append(record)
    counts["written"] = len(out)
    return out, counts, outcomes


def _outcome(record: dict | None, dropped: str | None) -> dict:
    """A row's ``outcome`` in results.jsonl: its preference (responses named r0, r1, ...), and whether it went
    into preferences.jsonl or the reason it did not (incomplete, no_valid_vote, inconsistent)."""
    pref = {"chosen": None, "rejected": None, "consistent": None, "vote_margin": None} if record is None else {
        "chosen": f"r{record['chosen_index']}", "rejected": f"r{record['rejected_index']}",
        "consistent": record["consistent"], "vote_margin": record["vote_margin"]}
    return pref | {"written": dropped is None, "dropped": dropped}


def logodds_margins(cfg: LabelSpec, records: Sequence[dict], backend: Backend | None = None,
                    guides: dict | None = None) -> list[float]:
    """Each record's chosen-over-rejected verdict log-odds from the local judge ``cfg.model``, as ``j1 probe``
    reads them (``j1.probe.runner.pair_margins``), with its row's criteria and reference (``guides``, by row
    id): from ``backend``'s model when it is the local judge (loaded once, in the dtype it judged in), else from
    the judge loaded for the probe."""
    from j1.probe.runner import pair_margins, probe_model

    if backend is not None and hasattr(backend, "model"):
        model, tokenizer = backend.model, backend.tokenizer
    else:
        model, tokenizer = probe_model(cfg.model)
    return pair_margins(model, tokenizer, [(r["prompt"], r["chosen"], r["rejected"]) for r in records],
                        template=cfg.template, prefill=cfg.assistant_prefill, progress=cfg.progress,
                        guides=[guides[r["id"]] for r in records] if guides is not None else None)


def run_label(cfg: LabelSpec, backend: Backend | None = None, *,
              open_backend: Callable[[], Backend] | None = None) -> dict:
    """Run ``j1 label``; returns the counts (rows, written, dropped by reason). See ``run_eval`` for the
    backend arguments."""
    from j1.eval.results import pair_view, write_results
    from j1.eval.runner import judge_run, judged_slots, open_run, plan
    from j1.eval.scoring import read_judgments

    rows = load_rows(cfg.data, cfg.limit, cfg.criteria)  # bad data fails before any folder or model
    # keep only filters what is written: a run may be resumed with the other choice
    folder = open_run(cfg, "label", stale=("preferences.jsonl", "results.jsonl"))
    fmt = get_format(cfg.format, cfg.template)
    items = [to_item(r) for r in rows]
    inputs = input_counts(items)
    warn_untrained_inputs(cfg.manifest, inputs, set(), cfg.model)
    work = plan(items, fmt, judged_slots(folder.path), cfg.assistant_prefill)
    total = sum(len(item_prompts(fmt, it)) for it in items)
    log.info("label: %d rows, %d judge prompts x %d samples; %d already judged, %d to go", len(rows), total,
             cfg.samples, total - len(work), len(work))
    # Log-odds margins read the local judge too: it is opened once, for both, when there is work for it.
    own = backend is None and cfg.margin == "logodds" and not cfg.base_url and bool(work)
    if own:
        backend = open_backend() if open_backend is not None else cfg.open_backend()
    try:
        info = judge_run(cfg, folder, work, total, counts=dict(items=len(rows), inputs=inputs), backend=backend,
                         open_backend=open_backend)
        records = read_judgments(folder.result)
        prefs, counts, outcomes = preference_rows(fmt, rows, records, cfg.keep)
        if cfg.margin == "logodds" and prefs:
            guides = {it.id: it.guidance for it in items}
            for record, value in zip(prefs, logodds_margins(cfg, prefs, backend, guides), strict=True):
                record.update(margin=value, margin_kind="logodds")
    finally:
        if own:
            backend.close()
    write_jsonl_atomic(folder.path / "preferences.jsonl", prefs)

    def view(item, rec):  # no labels: nothing is right or wrong
        return pair_view(fmt, item, rec, k=cfg.samples, scheme=None, thoughts=cfg.texts)

    write_results(folder.path / "results.jsonl", "label", items, records, view, labelled=False, texts=cfg.texts,
                  outcomes=outcomes)
    folder.write(cfg, **info, labels=counts)
    log.info("label: wrote %d of %d rows -> %s", counts["written"], len(rows), folder.path / "preferences.jsonl")
    return counts
