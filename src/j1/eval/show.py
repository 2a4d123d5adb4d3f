"""``j1 show RUN``: a run's results.jsonl printed example by example for a person to read: the prompt, the
responses side by side, then each judge prompt's order, verdict, right or wrong, and thought. Selecting
(``select``) and rendering (``render``) are pure functions of the records."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from itertools import zip_longest
from pathlib import Path

from j1.schema import ResultRecord, read_results

RULE = "━"


def is_wrong(r: ResultRecord) -> bool:
    """A verdict that misses the label in some order (an invalid one included): not right in every order."""
    return r.consistent is False


def has_invalid(r: ResultRecord) -> bool:
    return any(not j["valid"] for j in r.judgments)


def select(records: Sequence[ResultRecord], *, wrong: bool = False, flips: bool = False, invalid: bool = False,
           category: str | None = None) -> list[ResultRecord]:
    """The records that pass every filter given, in file (source) order.

    Raises:
        ValueError: ``category`` names none of the run's categories, or ``wrong`` asks a run without labels
            (j1 consistency, j1 label), naming what there is.
    """
    if category is not None and all(r.category != category for r in records):
        names = ", ".join(sorted({r.category for r in records}))
        raise ValueError(f"--category {category!r}: the run has none; its categories are {names}")
    if wrong and records and all(r.label is None and all(j["right"] is None for j in r.judgments) for r in records):
        raise ValueError(f"--wrong: this j1 {records[0].command} run has no labels, so no verdict is right or wrong; "
                         "use --flips or --invalid")
    return [r for r in records if (not wrong or is_wrong(r)) and (not flips or r.flipped is True)
            and (not invalid or has_invalid(r)) and (category is None or r.category == category)]


def cut(text: str | None, chars: int) -> str:
    """``text`` cut to ``chars`` characters (0: whole), saying how much was left out.

    >>> cut("abcdef", 3), cut("abc", 0), cut(None, 5)
    ('abc… (3 more characters)', 'abc', '(text not kept: the run used --no_texts)')
    """
    if text is None:
        return "(text not kept: the run used --no_texts)"
    if chars and len(text) > chars:
        return f"{text[:chars]}… ({len(text) - chars} more characters)"
    return text


def wrap(text: str, width: int) -> list[str]:
    """``text`` wrapped to ``width`` columns, its own line breaks kept.

    >>> wrap("one two three\\n\\nfour", 8)
    ['one two', 'three', '', 'four']
    """
    out: list[str] = []
    for line in text.splitlines() or [""]:
        out += textwrap.wrap(line, width, break_long_words=True, replace_whitespace=False) or [""]
    return out


def side_by_side(columns: Sequence[tuple[str, str]], width: int) -> list[str]:
    """Two columns ``(title, text)`` next to each other (one alone takes the whole width)."""
    if len(columns) == 1:
        title, text = columns[0]
        return [title, *wrap(text, width)]
    w = (width - 3) // 2
    left, right = ([title, "─" * min(w, len(title))] + wrap(text, w) for title, text in columns)
    return [f"{a:<{w}} │ {b}".rstrip() for a, b in zip_longest(left, right, fillvalue="")]


def _verdict(j: dict) -> str:
    """One judge prompt's reading: the verdict and the response it names, or the scores."""
    if j["verdict"] is not None:
        said = j["verdict"] + (f" ({j['pick']})" if j["pick"] and j["pick"] != j["verdict"] else "")
    else:
        said = "scored"
    if j["scores"]:
        said += " · " + ", ".join(f"{k} {'–' if v is None else f'{v:g}'}" for k, v in j["scores"].items())
    return said


def _mark(right: bool | None) -> str:
    return {True: "right", False: "WRONG", None: ""}[right]


def _label_line(r: ResultRecord) -> str:
    if len(r.pairs) == 1 and r.label is not None:
        p = r.pairs[0]
        better = {"A": f"{p['first']} is better", "B": f"{p['second']} is better", "tie": "a tie"}[r.label]
        return f"label: {better}"
    if r.label is None:
        return "no label"
    return f"label {r.label} for each of its {len(r.pairs)} pairs (the first named is better)" if r.pairs else \
        f"label: {r.responses[0]['name']} is better"


def _summary(r: ResultRecord) -> str:
    parts = [_label_line(r)]
    if len(r.pairs) == 1:
        parts.append(f"verdict {r.pairs[0]['verdict']}")
    if r.accuracy is not None:
        parts.append(f"accuracy {r.accuracy:.3g}")
    if r.consistent is not None:
        parts.append("right in every order" if r.consistent else "wrong in some order")
    if r.flipped:
        parts.append("FLIPPED with the order")
    if not r.complete:
        parts.append("not fully judged")
    return " · ".join(parts)


def render(r: ResultRecord, *, width: int = 100, chars: int = 800) -> str:
    """One record as text no wider than ``width``: a header, the prompt, the responses two by two side by
    side, each judgment (its order, verdict, right or wrong, thought) and, for several pairs, each pair."""
    head = f" [{r.index}] {r.id} · {r.category}" + (f" · {r.source}" if r.source else "") + " "
    head = head if len(head) <= width - 6 else head[:width - 8] + "… "
    lines = [RULE * 3 + head + RULE * max(3, width - 3 - len(head)), *wrap(_summary(r), width)]
    if r.outcome:
        lines += wrap("outcome: " + ", ".join(f"{k} {v}" for k, v in r.outcome.items() if v is not None), width)
    lines += ["", "PROMPT", *("  " + x for x in wrap(cut(r.prompt, chars), width - 2))]
    for name, text in (("CRITERIA", r.criteria), ("REFERENCE", r.reference)):  # what the judge read besides
        if text is not None:
            lines += ["", name, *("  " + x for x in wrap(cut(text, chars), width - 2))]
    lines += ["", "RESPONSES"]
    cols = [(resp["name"], cut(resp["text"], chars)) for resp in r.responses]
    for k in range(0, len(cols), 2):
        lines += ["  " + x for x in side_by_side(cols[k:k + 2], width - 2)] + [""]
    lines.append("JUDGMENTS")
    for j in r.judgments:
        where = f"judgments.jsonl:{j['line']}" if j["line"] else "not judged"
        mark = _mark(j["right"]) if j["valid"] or j["right"] is not None else ""
        row = f"{j['slot']:<8} shown {' | '.join(j['shown'])}  →  {_verdict(j)}  {mark}".rstrip() + f"   ({where})"
        lines += ["  " + x for x in wrap(row, width - 2)]
        if not j["valid"]:
            lines += ["      " + x for x in wrap("invalid: " + (j["reason"] or ""), width - 6)]
        if j.get("votes") and len(j["votes"]) > 1:
            lines += ["      " + x for x in wrap(f"samples: {' '.join(j['votes'])}", width - 6)]
        if j.get("thought"):
            lines += ["      " + x for x in wrap("thought: " + cut(j["thought"], chars), width - 6)]
    if len(r.pairs) > 1:
        lines += ["", "PAIRS"]
        for p in r.pairs:
            said = (f"{p['first']} vs {p['second']}: {p['verdict']}" + (f" {_mark(p['right'])}" if p["right"] is not None
                    else "") + (" (flipped)" if p["flipped"] else ""))
            lines += ["  " + x for x in wrap(said, width - 2)]
    return "\n".join(lines) + "\n"


def results_of(run_dir: str | Path) -> list[ResultRecord]:
    """RUN/results.jsonl, read and checked.

    Raises:
        FileNotFoundError: RUN has no results.jsonl (not a run folder, or a run that has not finished).
        RowError: a malformed line, naming it.
    """
    path = Path(run_dir) / "results.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: is {run_dir} a finished j1 eval, attack, consistency or label "
                                "run? (a run that stopped writes it when resumed with --resume and finished)")
    return read_results(path)


def _brief(r: ResultRecord) -> str:
    """What the judge said, in one line: each order's verdict (a one-pair item or a four-way rotation), or
    how many pairs it got wrong."""
    if len(r.pairs) > 1 or (r.pairs and r.judgments and r.judgments[0]["order"] is None):
        wrong = sum(p["right"] is False for p in r.pairs)
        flips = sum(bool(p["flipped"]) for p in r.pairs)
        return f"{wrong} of {len(r.pairs)} pairs wrong" + (f", {flips} flipped" if flips else "")
    said = []
    for j in r.judgments:
        verdict = (j["verdict"] or "invalid") + (f" ({j['pick']})" if j["pick"] and j["pick"] != j["verdict"] else "")
        said.append(f"{j['slot']} → {verdict}" + (f" {_mark(j['right']).lower()}" if j["right"] is not None else ""))
    return ", ".join(said)


def _example(kind: str, r: ResultRecord) -> str:
    lines = [str(j["line"]) for j in r.judgments if j["line"]]
    where = f" (judgments.jsonl:{', '.join(lines)})" if lines else ""
    prompt = " ".join((r.prompt or "").split())
    snippet = f' "{prompt[:90]}{"…" if len(prompt) > 90 else ""}"' if prompt else ""
    return f"- {kind} `{r.id}`{where}: {_brief(r)}.{snippet}"


def report_examples(records: Sequence[ResultRecord], run_dir: str, per_category: int = 3) -> list[str]:
    """report.md's "Examples" section: per category, up to ``per_category`` items whose verdict flipped
    with the order and as many others with a wrong verdict, in source order; nothing when there are none."""
    lines: list[str] = []
    for category in sorted({r.category for r in records}):
        members = [r for r in records if r.category == category]
        flips = [r for r in members if r.flipped][:per_category]
        wrong = [r for r in members if is_wrong(r) and not r.flipped][:per_category]
        if flips or wrong:
            lines += ["", f"### {category}", ""]
            lines += [_example("flip", r) for r in flips] + [_example("wrong", r) for r in wrong]
    if not lines:
        return []
    return ["", "## Examples", "", f"A few items per category whose verdict flipped with the order, then others "
            f"judged wrong (from results.jsonl, in source order); `j1 show {run_dir} --flips` (or `--wrong`, "
            "`--category C`) prints them whole, prompt and responses side by side.", *lines]


def examples_of(run_dir: str | Path, per_category: int = 3) -> list[str]:
    """``report_examples`` of RUN/results.jsonl; nothing for a run without one (made before j1 wrote it)."""
    path = Path(run_dir) / "results.jsonl"
    return report_examples(read_results(path), str(run_dir), per_category) if path.is_file() else []
