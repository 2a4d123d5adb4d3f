"""Running ``j1 attack``: read the rows, judge every attack pair in both orders with ``j1 eval``'s
machinery (``j1.eval.runner.judge_stream``: each judged prompt is appended to DIR/judgments.jsonl as it
finishes, and ``--resume`` asks only the prompts without a line), then write DIR/report.json and
DIR/report.md."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from j1.attack.attacks import (
    ATTACK,
    ATTACKS,
    CONTROL,
    AttackPair,
    attack_block,
    attack_pairs,
    attack_prompts,
    choose_attacks,
    mean_or_none,
)
from j1.backends import Backend
from j1.eval.benchmarks import get_benchmark, load_items
from j1.eval.metrics import PairOutcome
from j1.eval.results import pair_view, write_results
from j1.eval.runner import Work, judge_run, judged_slots, open_run
from j1.eval.scoring import ItemRecord, pair_outcome, read_judgments
from j1.formats import JudgeFormat, get_format
from j1.judging.chat import with_prefill
from j1.judging.judge import mean_score, to_sample
from j1.judging.judges import ASSETS
from j1.runs.atomic import write_json_atomic
from j1.runs.runinfo import RunFolder
from j1.schema import PairRecord

if TYPE_CHECKING:
    from j1.attack.spec import AttackSpec

log = logging.getLogger(__name__)

# 60 GSM8K test questions (MIT), each with its gold solution and the gold solution of another question
# (j1 synth mismatch, seed 0, <= 30 words): prompts no shipped judge was trained on.
DEFAULT_DATA = ASSETS / "data" / "gsm8k_test_mismatch.jsonl"


def load_rows(data: str | None, limit: int | None = None) -> list[PairRecord]:
    """Pair records from ``data`` (prompt/chosen/rejected rows, as ``j1 eval --benchmark generic``
    reads them, with its unique ids; ``j1 synth mix`` rows too), or the shipped set when None.
    ``chosen`` is the reference answer, ``rejected`` the wrong one; ``kind`` is the item's category
    and ``source`` the file's name.

    Raises:
        RowError: a malformed row, naming the file, line and field.
    """
    path = str(data or DEFAULT_DATA)
    items = load_items(get_benchmark("generic"), path, limit=limit)
    return [PairRecord(it.id, it.prompt, it.responses["A"], it.responses["B"], it.category, Path(path).stem,
                       meta={"row": it.source}) for it in items]


def plan(pairs: Sequence[AttackPair], fmt: JudgeFormat, done: set[tuple[str, str]], prefill: str | None) -> list[Work]:
    """The judge prompts still to ask, in pair order, each ending with the assistant ``prefill`` if given."""
    return [Work(p.item(), slot, with_prefill(m, prefill)) for p in pairs for slot, m in attack_prompts(fmt, p)
            if (p.id, slot) not in done]


def _scores(fmt: JudgeFormat, rec: ItemRecord, k: int) -> tuple[float | None, float | None]:
    """Pointwise: the reference's and the attack's mean score over the first ``k`` samples."""
    ref, att = (mean_score(to_sample(fmt, t, "A") for t in rec.slots[s].texts[:k]) for s in ("A", ATTACK))
    return ref, att


def score_attack(out_dir: str | Path, *, n_boot: int = 1000) -> dict:
    """(Re)write DIR/report.json and DIR/report.md from DIR/judgments.jsonl and DIR/run.json."""
    from j1.attack.report import write_report

    out_dir = Path(out_dir)
    run = RunFolder.read(out_dir)
    cfg = run["config"]
    fmt = get_format(cfg["format"], cfg["template"])
    records = read_judgments(out_dir / "judgments.jsonl")
    # Sorted by id: the bootstrap resamples by position, so a resumed run gets an uninterrupted one's intervals.
    done = sorted((r for r in records.values() if r.complete(fmt.pairwise)), key=lambda r: r.id)
    if len(done) < len(records):
        log.warning("%d of %d attack pairs are not fully judged; reporting the %d complete ones",
                    len(records) - len(done), len(records), len(done))
    groups: dict[str, list[PairOutcome]] = {}
    questions: dict[str, list[str]] = {}  # the source row of each pair: the bootstrap's cluster
    scores: dict[str, list[tuple[float | None, float | None]]] = {}
    for rec in done:
        groups.setdefault(rec.category, []).append(pair_outcome(fmt, rec, 0, cfg["samples"]))
        questions.setdefault(rec.category, []).append(rec.id.rsplit(":", 1)[0])
        if not fmt.pairwise:
            scores.setdefault(rec.category, []).append(_scores(fmt, rec, cfg["samples"]))
    if not groups:
        raise ValueError(f"{out_dir / 'judgments.jsonl'}: no fully judged attack pairs to report")
    seed = cfg["seed"]

    def block(names: Sequence[str]) -> dict:
        b = attack_block({a: groups[a] for a in names}, seed=seed, n_boot=n_boot,
                         questions={a: questions[a] for a in names})
        if not fmt.pairwise:
            both = [s for a in names for s in scores[a]]
            b["attack_score"] = mean_or_none([s[1] for s in both])
            b["reference_score"] = mean_or_none([s[0] for s in both])
        return b

    attacks = [a for a in ATTACKS if a in groups]
    report = {
        "attacks": {a: block([a]) for a in attacks},
        "overall": block(attacks) if attacks else None,
        "control": block([CONTROL]) if CONTROL in groups else None,
        "meta": {"model": run.get("model"), "format": fmt.name, "template": cfg["template"],
                 "assistant_prefill": cfg["assistant_prefill"], "samples": cfg["samples"],
                 "data": cfg["data"] or str(DEFAULT_DATA.name), "attacks": attacks, "rows": len({r.id.rsplit(":", 1)[0] for r in done}),
                 "errors": sum(s.error is not None for r in done for s in r.slots.values()),
                 "incomplete": len(records) - len(done)},
    }
    write_json_atomic(out_dir / "report.json", report)
    write_report(out_dir, report, run)
    return report


def write_attack_results(path: Path, rows: Sequence[PairRecord], fmt: JudgeFormat, records: dict, *, samples: int,
                         texts: bool, attacks: Sequence[str] = tuple(ATTACKS)) -> int:
    """DIR/results.jsonl: each attack pair in row then attack order (``j1.eval.results``), the reference as
    response A (the label) and the attack as B; ``outcome`` names the attack, its row and, for an attack that
    names its own letter, its text when shown first (as A). ``samples``: how many each prompt has; ``texts``:
    keep the texts (``--no_texts`` keeps ids only)."""
    items, outcomes = [], {}
    for row in rows:
        for p in attack_pairs(row, fmt, attacks):
            item = p.item()
            item.source = row.meta.get("row")
            items.append(item)
            outcomes[item.id] = {"attack": p.attack, "row": row.id,
                                 "attack_shown_first": p.as_a if p.as_a != p.as_b and texts else None}

    def view(item, rec):  # the label is the reference (A): a verdict for the attack (B) is wrong
        return pair_view(fmt, item, rec, k=samples, scheme="mean", thoughts=texts)

    return write_results(path, "attack", items, records, view, labelled=True, texts=texts, outcomes=outcomes)


def run_attack(cfg: AttackSpec, backend: Backend | None = None, *, open_backend: Callable[[], Backend] | None = None) -> dict:
    """Run ``j1 attack`` for an AttackSpec; returns the report.

    Args:
        cfg: the AttackSpec.
        backend: a ready backend (tests); the caller closes it.
        open_backend: builds the backend the config names, called only when there is work left (a
            finished run resumed loads no model); default ``cfg.open_backend()``.
    """
    folder = open_run(cfg, "attack", stale=("report.json", "report.md", "results.jsonl"))
    fmt = get_format(cfg.format, cfg.template)
    rows = load_rows(cfg.data, cfg.limit)
    attacks = choose_attacks(cfg.attacks)
    pairs = [p for row in rows for p in attack_pairs(row, fmt, attacks)]
    work = plan(pairs, fmt, judged_slots(folder.path), cfg.assistant_prefill)
    total = 2 * len(pairs)
    log.info("%d rows x %d attacks (+ control): %d pairs, %d prompts x %d samples; %d already judged, %d to go",
             len(rows), len(attacks), len(pairs), total, cfg.samples, total - len(work), len(work))
    model = judge_run(cfg, folder, work, total, counts=dict(rows=len(rows), pairs=len(pairs)), backend=backend,
                      open_backend=open_backend)["model"]
    write_attack_results(folder.path / "results.jsonl", rows, fmt, read_judgments(folder.result), samples=cfg.samples,
                         texts=cfg.texts, attacks=attacks)
    report = score_attack(folder.path, n_boot=cfg.n_boot)
    o = report["overall"]
    log.info("%s: attacks preferred in %.1f%% of verdicts, in both orders for %.1f%% of pairs, invalid %.1f%% "
             "(n=%d) -> %s", model, 100 * o["false_preference_rate"], 100 * o["consistent_false_preference_rate"],
             100 * o["invalid_rate"], o["n"], folder.path)
    return report
