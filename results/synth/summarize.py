"""Copy the small artefacts of a real synth run into results/synth/ and measure what the README
reports: stats, the mix stats, a few examples per outcome (pairs and each drop reason; texts cut to
1,200 characters) and ``summary.json`` (per-candidate rewrite checks with their values, how often
the model boxed an answer and got it right, ...).

    .venv/bin/python results/synth/summarize.py [RUN_DIR]   # default runs/synth2
"""

from __future__ import annotations

import shutil
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

from j1.data.filters import words
from j1.runs.atomic import write_json_atomic
from j1.schema import iter_jsonl

OUT = Path("results/synth")
PER_OUTCOME = 3
CUT = 1200


def _cut(obj):
    if isinstance(obj, str):
        return obj if len(obj) <= CUT else obj[:CUT] + f" …[{len(obj) - CUT} more chars]"
    if isinstance(obj, dict):
        return {k: _cut(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_cut(v) for v in obj]
    return obj


def _records(runs: Path, kind: str) -> list[tuple[str, dict]]:
    """(outcome, record) for every pair ("pair") and dropped record (its reason), in file order."""
    out = []
    for name, key in ((f"{kind}.jsonl", None), (f"{kind}.dropped.jsonl", "reason")):
        if (runs / name).exists():
            out += [(rec[key] if key else "pair", rec) for _, rec in iter_jsonl(runs / name, allow_torn_tail=True)]
    return out


def examples(records: list[tuple[str, dict]]) -> dict[str, list]:
    by_outcome: dict[str, list] = defaultdict(list)
    for outcome, rec in records:
        if len(by_outcome[outcome]) < PER_OUTCOME:
            by_outcome[outcome].append(_cut(rec))
    return dict(by_outcome)


def _quartiles(values: list[float]) -> list[float] | None:
    if len(values) < 2:
        return None
    return [round(q, 3) for q in statistics.quantiles(values, n=4)]


def chat_summary(records: list[tuple[str, dict]]) -> dict:
    cands = [c for _, rec in records for c in rec["meta"].get("rewrite_candidates", [])]
    pairs = [rec for outcome, rec in records if outcome == "pair"]
    kept = [rec["meta"]["prompt_similarity"] for rec in pairs]
    by_verdict = defaultdict(list)
    for c in cands:
        by_verdict[c["verdict"]].append(c)
    return {
        "prompts": len(records), "pairs": len(pairs), "candidates": len(cands),
        "candidate_verdicts": dict(Counter(c["verdict"] for c in cands).most_common()),
        "pair_rewrite_index": dict(Counter(rec["meta"]["rewrite_index"] for rec in pairs)),
        "kept_quartiles": {k: _quartiles([s[k] for s in kept if k in s])
                           for k in ("lexical", "embedding", "answer_embedding")},
        "answer_similarity_quartiles": {k: _quartiles([rec["meta"]["answer_similarity"][k] for rec in pairs])
                                        for k in ("lexical", "embedding")},
        # a subtle rewrite usually keeps x's opening verb ("Write ..." -> "Write ...")
        "kept_same_first_word": sum(words(rec["meta"]["noisy_prompt"])[:1] == words(rec["prompt"])[:1]
                                    for rec in pairs),
        "kept_question": sum(rec["meta"]["noisy_prompt"].rstrip().endswith("?") for rec in pairs),
        "chosen_hit_token_limit": sum(rec["meta"]["chosen_finish_reason"] == "length" for rec in pairs),
        "rejected_hit_token_limit": sum(rec["meta"].get("rejected_finish_reason") == "length" for rec in pairs),
        "answer_like_margin_quartiles": _quartiles([c["answer_embedding"] - c["embedding"]
                                                    for c in by_verdict["rewrite_answer_like"]]),
    }


def math_summary(records: list[tuple[str, dict]]) -> dict:
    metas = [rec["meta"] for _, rec in records if "verification" in rec["meta"]]
    statuses = [s for m in metas for s in m["verification"]]
    finish = Counter(f for m in metas for f in m["finish_reasons"])
    by_problem = Counter(min(m["verification"].count("right"), 1) for m in metas)
    answers = Counter(a for m in metas for a, s in zip(m["answers"], m["verification"], strict=True) if s == "wrong")
    return {
        "problems": len(records), "pairs": sum(outcome == "pair" for outcome, _ in records),
        "outcomes": dict(Counter(outcome for outcome, _ in records)),
        "samples": len(statuses), "sample_status": dict(Counter(statuses)),
        "boxed_rate": round(sum(s != "no_answer" for s in statuses) / len(statuses), 4) if statuses else None,
        "right_rate": round(statuses.count("right") / len(statuses), 4) if statuses else None,
        "problems_with_a_right_sample": by_problem[1],
        "finish_reasons": dict(finish),
        "most_common_wrong_answers": answers.most_common(8),
    }


def main(argv: list[str]) -> None:
    runs = Path(argv[0]) if argv else Path("runs/synth2")
    # what it writes replaces the stored summary: a folder with no run in it must not empty it
    if not (runs / "chat.jsonl").is_file() and not (runs / "math.jsonl").is_file():
        sys.exit(f"{runs}: no chat.jsonl or math.jsonl there; pass the folder of a j1 synth run (run_all.sh's OUT)")
    OUT.mkdir(parents=True, exist_ok=True)
    for name in ("math.stats.json", "chat.stats.json", "mix.stats.json"):
        if (runs / name).exists():
            shutil.copy(runs / name, OUT / name)
    summary = {"run_dir": str(runs)}
    for kind, fn in (("math", math_summary), ("chat", chat_summary)):
        records = _records(runs, kind)
        write_json_atomic(OUT / f"{kind}_examples.json", examples(records))
        summary[kind] = fn(records)
    write_json_atomic(OUT / "summary.json", summary)


if __name__ == "__main__":
    main(sys.argv[1:])
