"""A synthesis run's files, and how it resumes.

For ``--out runs/synth/math.jsonl`` the run keeps, side by side:

- ``math.jsonl``: the pairs, one :class:`j1.schema.PairRecord` per line;
- ``math.dropped.jsonl``: one line per prompt that gave no pair, one :class:`j1.schema.Dropped`
  per line: ``{"id", "prompt", "kind", "source", "reason", "meta", "schema_version"}``;
- ``math.stats.json``: counts over both files plus per-run tokens and time (rewritten at the end);
- ``math.run.json``: config, versions and git revision of the latest run.

Every prompt's outcome is appended (flushed, fsynced) to exactly one of the two JSONL files the
moment it is known, so the set of finished ids is the union of the ids in both files. A rerun of
the same command skips those ids: it asks the model nothing already done, and a pair is never
written twice. A crash mid-append leaves a torn last line, which is cut off on reopen (the prompt
is then simply redone).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

from j1.runs.atomic import JsonlAppender, remove_stale_temps, write_json_atomic
from j1.runs.runinfo import RunFolder
from j1.schema import Dropped, PairRecord, iter_jsonl, require

log = logging.getLogger(__name__)


def side_path(out: str | Path, what: str) -> Path:
    """``runs/x/math.jsonl`` -> ``runs/x/math.<what>``.

    >>> str(side_path("runs/x/math.jsonl", "stats.json"))
    'runs/x/math.stats.json'
    """
    out = Path(out)
    return out.with_name(f"{out.stem}.{what}")


def run_folder(out: str | Path, command: str, *, started: float) -> RunFolder:
    """The run folder of the pair file ``out``: its run.json is the side file ``OUT.run.json``.

    >>> import tempfile
    >>> run_folder(f"{tempfile.mkdtemp()}/math.jsonl", "j1 synth math", started=0.0).run_json.name
    'math.run.json'
    """
    record = side_path(out, "run.json")
    return RunFolder(record.parent, command=command, started=started, record=record.name)


class PairStore:
    """The pair file and its dropped-prompt side file, opened for appending.

    Args:
        out: the pair file (``.jsonl``).
        kind: ``math`` or ``chat``; rows of another kind in an existing file are an error (a
            different command's output).
    """

    def __init__(self, out: str | Path, kind: str):
        self.out = Path(out)
        self.dropped_path = side_path(self.out, "dropped.jsonl")
        self.stats_path = side_path(self.out, "stats.json")
        self.run_path = side_path(self.out, "run.json")
        self.kind = kind
        for side in (self.stats_path, self.run_path):  # left by a killed run; both are rewritten whole
            remove_stale_temps(side)
        self.pairs: dict[str, dict] = {}
        self.dropped: dict[str, dict] = {}
        self._read_existing()
        self._pairs_fh = JsonlAppender(self.out)
        self._dropped_fh = JsonlAppender(self.dropped_path)

    def _read_existing(self) -> None:
        for path, into in ((self.out, self.pairs), (self.dropped_path, self.dropped)):
            if not path.exists():
                continue
            for lineno, obj in iter_jsonl(path, allow_torn_tail=True):
                where = f"{path}:{lineno}"
                if into is self.dropped:
                    obj = _dropped_entry(Dropped.from_row(obj, where))
                rid = require(obj, "id", str, where)
                kind = require(obj, "kind", str, where)
                if kind != self.kind:
                    raise ValueError(f"{where}: a {kind!r} record in a {self.kind!r} output; use another --out")
                into[rid] = obj
        if self.pairs or self.dropped:
            log.info("%s: resuming; %d pairs and %d dropped prompts already done",
                     self.out, len(self.pairs), len(self.dropped))

    @property
    def done(self) -> set[str]:
        return set(self.pairs) | set(self.dropped)

    def add_pair(self, pair: PairRecord) -> None:
        if pair.id in self.done:  # a caller bug; never write an id twice
            raise ValueError(f"pair {pair.id} is already in {self.out}")
        self._pairs_fh.write(pair)
        self.pairs[pair.id] = {"id": pair.id, "kind": pair.kind, "meta": pair.meta}

    def add_dropped(self, dropped: Dropped) -> None:
        if dropped.id in self.done:
            raise ValueError(f"prompt {dropped.id} is already in {self.out} or {self.dropped_path}")
        self._dropped_fh.write(dropped)
        self.dropped[dropped.id] = _dropped_entry(dropped)

    def close(self) -> None:
        self._pairs_fh.close()
        self._dropped_fh.close()

    def __enter__(self) -> PairStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stats(self, *, prompts_seen: int, run: dict[str, Any], extra: dict[str, Any] | None = None) -> dict:
        """The stats over everything in the files, plus this run appended to the earlier runs'.

        ``tokens.completion`` sums each record's ``meta.completion_tokens`` (crash-proof: it covers
        every finished prompt of every run, even one that was killed); prompt tokens and seconds
        are only known per completed run.
        """
        records = list(self.pairs.values()) + list(self.dropped.values())
        reasons = Counter(d["reason"] for d in self.dropped.values())
        runs = []
        if self.stats_path.exists():
            import json

            try:
                runs = json.loads(self.stats_path.read_text(encoding="utf-8")).get("runs", [])
            except (OSError, ValueError):
                log.warning("%s: unreadable; earlier runs' times are not carried over", self.stats_path)
        runs = [*runs, run]
        done = len(records)
        return {
            "kind": self.kind,
            "out": str(self.out),
            "prompts_seen": prompts_seen,
            "done": done,
            "pairs": len(self.pairs),
            "dropped": dict(sorted(reasons.items())),
            "pair_rate": round(len(self.pairs) / done, 4) if done else None,
            "tokens": {
                "completion": sum(int(r.get("meta", {}).get("completion_tokens", 0)) for r in records),
                "prompt": sum(int(r.get("prompt_tokens", 0)) for r in runs),
            },
            "seconds": round(sum(float(r.get("seconds", 0)) for r in runs), 1),
            **(extra or {}),
            "runs": runs,
        }

    def write_stats(self, stats: dict) -> None:
        write_json_atomic(self.stats_path, stats)


def _dropped_entry(dropped: Dropped) -> dict:
    """What the store keeps of a dropped prompt for its stats (not the prompt text)."""
    return {"id": dropped.id, "kind": dropped.kind, "reason": dropped.reason, "meta": dropped.meta}


def run_entry(started: float, backend, processed: int, skipped: int) -> dict:
    """One ``runs`` entry of the stats: this invocation's time, work and backend usage."""
    usage = backend.usage
    return {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "seconds": round(time.time() - started, 1),
        "processed": processed,
        "skipped_already_done": skipped,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "requests": usage.requests,
        "model": backend.model_name,
    }


def summary_text(stats: dict) -> str:
    """The summary a person reads at the end of ``j1 synth``."""
    lines = [
        f"{stats['kind']} pairs: {stats['pairs']} of {stats['done']} prompts done "
        f"({stats['prompts_seen']} in the source) -> {stats['out']}",
    ]
    for reason, n in stats["dropped"].items():
        lines.append(f"  dropped {reason}: {n}")
    last = stats["runs"][-1]
    lines.append(
        f"  this run: {last['processed']} prompts in {last['seconds']}s, {last['completion_tokens']} completion "
        f"tokens, {last['skipped_already_done']} already done"
    )
    return "\n".join(lines)
