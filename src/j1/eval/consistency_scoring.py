"""Scores of a ``j1 consistency`` run from its judgments (metrics.json and report.md): the verdict
matrix of each prompt, then IPI, TOV and intransitive triples (``j1.eval.consistency``). Below both
``j1.eval.runner`` (``j1 score`` rescores a consistency run) and ``j1.eval.consistency_run``."""

from __future__ import annotations

import itertools
from pathlib import Path

from j1.eval import consistency as C
from j1.eval.items import pair_slot
from j1.eval.metrics import scaling_ks
from j1.eval.scoring import ItemRecord, read_judgments
from j1.formats import JudgeFormat, get_format
from j1.judging.judge import majority, mean_score, to_sample
from j1.pairs import flip_rate, flipped
from j1.runs.atomic import write_json_atomic
from j1.runs.runinfo import RunFolder


def verdict_matrix(fmt: JudgeFormat, rec: ItemRecord, k_samples: int) -> list[list[int | None]]:
    """y[i][j] (response i shown first) from the first ``k_samples`` samples of each judged prompt:
    the majority of the shown-position verdicts (pairwise), or the sign of the mean-score difference
    (pointwise)."""
    names = sorted({n for p in rec.pairs for n in p[:2]}, key=lambda n: int(n[1:]))
    index = {n: i for i, n in enumerate(names)}
    if not fmt.pairwise:
        return C.score_verdicts([mean_score(to_sample(fmt, t, "A") for t in rec.slots[n].texts[:k_samples]) for n in names])
    y: list[list[int | None]] = [[0] * len(names) for _ in names]
    for p, (first, second, _) in enumerate(rec.pairs):
        for order, (a, b) in (("AB", (first, second)), ("BA", (second, first))):
            texts = rec.slots[pair_slot(rec.pairs, p, order)].texts[:k_samples]
            # Shown positions: parse, not orient, since y is indexed by what was shown first.
            y[index[a]][index[b]] = C.verdict_code(majority(fmt.parse(t).verdict for t in texts).value)
    return y


_ORIGINAL = {1: "A", -1: "B", 0: "tie", None: "invalid"}  # a y code (i against j) as a verdict, i as A


def _pooled_rates(ys: list[list[list[int | None]]]) -> dict:
    """Flip (``j1.pairs.flipped`` on each pair's two orders) and first-shown (valid strict verdicts
    that pick the first shown response) rates, pooled over every pair and verdict."""
    flips = []
    first = strict = 0
    for y in ys:
        for i, j in itertools.combinations(range(len(y)), 2):
            # Back to original naming, i as A: y[i][j] shows i first, y[j][i] shows j first (mirrored).
            flips.append(flipped(_ORIGINAL[y[i][j]], _ORIGINAL[None if y[j][i] is None else -y[j][i]]))
        for i, j in itertools.permutations(range(len(y)), 2):
            if y[i][j] in (1, -1):
                strict += 1
                first += y[i][j] == 1
    return {"flip_rate": flip_rate(flips), "first_shown_rate": first / strict if strict else None}


def consistency_block(ys: list[list[list[int | None]]], *, seed: int, n_boot: int) -> dict:
    block = C.summarize([C.prompt_consistency(y) for y in ys], seed=seed, n_boot=n_boot)
    return block | _pooled_rates(ys)


def compute_consistency_metrics(fmt: JudgeFormat, records: dict[str, ItemRecord], *, model: str, samples: int,
                                seed: int = 0, n_boot: int = 1000) -> dict:
    """The metrics.json of a consistency run (complete prompts only)."""
    done = sorted((r for r in records.values() if r.complete(fmt.pairwise)), key=lambda r: r.id)
    if not done:
        raise ValueError("no fully judged prompts to score")
    ys = [verdict_matrix(fmt, r, samples) for r in done]
    per_prompt = []
    for r, y in zip(done, ys, strict=True):
        p = C.prompt_consistency(y)
        per_prompt.append({"id": r.id, "k": p.k, "ipi": p.ipi, "tov": p.tov, "tov_rate": p.tov_rate,
                           "intransitive": p.intransitive, "determined_triples": p.determined_triples,
                           "invalid_rate": p.invalid_rate, "verdicts": y})
    ks = sorted({len(y) for y in ys})
    return {
        "benchmark": "consistency",
        "format": fmt.name,
        "model": model,
        "n": len(done),
        "responses": ks[0] if len(ks) == 1 else ks,
        "overall": consistency_block(ys, seed=seed, n_boot=n_boot),
        "scaling": {str(k): consistency_block([verdict_matrix(fmt, r, k) for r in done], seed=seed, n_boot=n_boot)
                    for k in scaling_ks(samples)},
        "per_prompt": per_prompt,
        "samples": samples,
        "errors": sum(s.error is not None for r in done for s in r.slots.values()),
        "incomplete": len(records) - len(done),
        "method": {"tov": f"exact: enumeration of weak orders for K <= {C.ENUMERATE_MAX_K}, subset DP beyond",
                   "invalid": "an invalid verdict makes its pair unstable (IPI) and adds 1 to TOV"},
    }


def score_consistency(out_dir: Path, *, n_boot: int = 1000) -> dict:
    """(Re)compute DIR/metrics.json and DIR/report.md of a consistency run from its judgments."""
    from j1.eval.report_extra import write_consistency_report

    run = RunFolder.read(out_dir)
    cfg = run["config"]
    metrics = compute_consistency_metrics(
        get_format(cfg["format"], cfg.get("template", "full")), read_judgments(out_dir / "judgments.jsonl"),
        model=run.get("model") or cfg.get("model") or "default", samples=cfg["samples"], seed=cfg["seed"],
        n_boot=n_boot)
    write_json_atomic(out_dir / "metrics.json", metrics)
    write_consistency_report(out_dir, metrics, run)
    return metrics
