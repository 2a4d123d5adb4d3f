"""``j1 synth mix``: pair files -> the training input (train and held-out rows, both orders).

Amounts: each input is ``PATH[:N]``; N pairs are drawn from that file without replacement (seeded;
more than the file holds is an error), no N or ``all`` takes every pair. The paper's mixture is
``chat.jsonl:17000 math.jsonl:5000``. Pairs with an id seen in an earlier input are skipped, and so are
pairs that share a prompt or a response text with a pair of an ``exclude`` file (an evaluation set the
training data must not touch), before the draw: N counts the pairs left.

Held-out split BY PROMPT: the drawn pairs are grouped by prompt text (whitespace-normalised, so
the same prompt under two pair ids is one group), groups are ordered by ``sha256(seed, prompt)``,
and the first ``round(heldout_fraction * groups)`` go to ``heldout.jsonl``: no prompt is in both.

Training row format (``train.jsonl``, ``heldout.jsonl``), one line per pair and order, the two
orders of a pair on consecutive lines::

    {"pair_id": "3f2a...", "order": "AB" | "BA", "prompt": "...",
     "response_a": "...", "response_b": "...", "label": "A" | "B", "label_shown": "A" | "B",
     "kind": "math" | "chat", "source": "gsm8k_train.jsonl", "schema_version": 1}

- ``response_a``/``response_b`` are the pair's two responses in its fixed *original* (AB) placement,
  the same on both lines of a pair. Which of chosen/rejected is ``response_a`` is drawn once per
  pair from ``random.Random(f"{seed}:{pair_id}")``, so the label is not always A.
- ``order`` says how the judge is shown them: ``AB`` = response_a first, ``BA`` = response_b first
  (``j1.pairs.render_both``).
- ``label`` names the better response in the original placement ("A" = ``response_a``), identical
  on both lines. That is the convention of ``j1.judging.judge``: ``to_sample(fmt, completion, order)``
  maps a parsed verdict back to the original responses, so the reward is
  ``to_sample(...).verdict == label``.
- ``label_shown`` is the better response's position *as shown* in this line (equal to ``label`` for
  AB, swapped for BA), for code that compares raw, un-oriented verdicts.

The rows are :class:`j1.schema.TrainRow`; read them with :func:`j1.schema.read_train_rows`, which
validates every line.
"""

from __future__ import annotations

import hashlib
import logging
import random
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

# both_orders (a pair's seeded A/B placement) lives in j1.schema, beside the records it maps.
from j1.runs.atomic import remove_stale_temps, write_jsonl_atomic
from j1.schema import PairRecord, both_orders, read_pairs

if TYPE_CHECKING:
    from j1.data.spec import MixSpec

log = logging.getLogger(__name__)


def parse_input(spec: str) -> tuple[Path, int | None]:
    """``PATH[:N]`` -> (path, N or None for all).

    >>> parse_input("runs/chat.jsonl:17000"), parse_input("math.jsonl"), parse_input("m.jsonl:all")
    ((PosixPath('runs/chat.jsonl'), 17000), (PosixPath('math.jsonl'), None), (PosixPath('m.jsonl'), None))
    """
    path, sep, amount = spec.rpartition(":")
    if not sep or not path or "/" in amount:
        return Path(spec), None
    if amount == "all":
        return Path(path), None
    try:
        n = int(amount)
    except ValueError:
        raise ValueError(f"--inputs {spec!r}: the part after ':' must be a pair count or 'all'") from None
    if n < 0:
        raise ValueError(f"--inputs {spec!r}: the pair count must be >= 0")
    return Path(path), n


def prompt_key(prompt: str) -> str:
    return " ".join(prompt.split())


def split_by_prompt(pairs: list[PairRecord], heldout_fraction: float, seed: int) -> tuple[list, list]:
    """(train, heldout) pairs; every prompt's pairs land on one side (see the module docstring)."""
    groups = sorted({prompt_key(p.prompt) for p in pairs},
                    key=lambda k: hashlib.sha256(f"{seed}\x00{k}".encode()).hexdigest())
    held = set(groups[: round(heldout_fraction * len(groups))])
    train = [p for p in pairs if prompt_key(p.prompt) not in held]
    heldout = [p for p in pairs if prompt_key(p.prompt) in held]
    return train, heldout


def texts(prompt: str, *responses: str) -> set[str]:
    """A pair's prompt and responses, whitespace-normalised: what an excluded pair may not share.

    >>> sorted(texts(" q  1", "a", "b\\n"))
    ['a', 'b', 'q 1']
    """
    return {prompt_key(t) for t in (prompt, *responses)}


def excluded_texts(paths: list[str]) -> set[str]:
    """The texts of every pair in ``paths``: pair files or the train/held-out rows of another mix."""
    from j1.train.data import load_pairs

    out: set[str] = set()
    for spec in paths:
        path = Path(spec)
        if not path.exists():
            raise FileNotFoundError(f"--exclude {spec!r}: no such pair file")
        for p in load_pairs(path):
            out |= texts(p.prompt, p.response_a, p.response_b)
    return out


def mix(inputs: list[str], heldout_fraction: float, seed: int,
        exclude: list[str] = ()) -> tuple[list[PairRecord], list[PairRecord], dict]:
    """Draw the pairs of each input, then split by prompt. Returns (train, heldout, per-input counts)."""
    drawn: list[PairRecord] = []
    seen: set[str] = set()
    per_input: dict[str, dict] = {}
    banned = excluded_texts(list(exclude))
    for spec in inputs:
        path, n = parse_input(spec)
        if not path.exists():
            raise FileNotFoundError(f"--inputs {spec!r}: no such pair file {path}")
        records = read_pairs(path)
        if not records:
            raise ValueError(f"--inputs {spec!r}: {path} has no pairs")
        fresh = [p for p in records if p.id not in seen]
        pairs = [p for p in fresh if not texts(p.prompt, p.chosen, p.rejected) & banned]
        if n is not None and n > len(pairs):
            raise ValueError(f"--inputs {spec!r}: asks for {n} pairs but {path} has {len(pairs)} new ones; "
                             f"lower N or use {path}:all")
        take = pairs if n is None else random.Random(f"{seed}:{path.name}").sample(pairs, n)
        seen.update(p.id for p in take)
        drawn.extend(take)
        per_input[str(path)] = {"available": len(pairs), "drawn": len(take),
                                "kinds": dict(Counter(p.kind for p in take))}
        if banned:
            per_input[str(path)]["excluded"] = len(fresh) - len(pairs)
    drawn.sort(key=lambda p: p.id)  # output order independent of the draw order and of the inputs' order
    train, heldout = split_by_prompt(drawn, heldout_fraction, seed)
    return train, heldout, per_input


OUTPUTS = ("train.jsonl", "heldout.jsonl", "mix.stats.json", "mix.run.json")


def run_mix_config(cfg: MixSpec) -> dict:
    """Run ``j1 synth mix`` for a :class:`j1.data.spec.MixSpec`; returns its stats."""
    from j1.runs.atomic import write_json_atomic
    from j1.runs.runinfo import RunFolder

    started = time.time()
    train, heldout, per_input = mix(cfg.inputs, cfg.heldout_fraction, cfg.seed, cfg.exclude)
    out = Path(cfg.out_dir)
    for name in OUTPUTS:  # a rerun after a kill: the whole files are rewritten, half-written temps go
        remove_stale_temps(out / name)
    n_train = write_jsonl_atomic(out / "train.jsonl", [r for p in train for r in both_orders(p, cfg.seed)])
    n_held = write_jsonl_atomic(out / "heldout.jsonl", [r for p in heldout for r in both_orders(p, cfg.seed)])
    stats = {
        "inputs": per_input,
        "train": {"pairs": len(train), "rows": n_train, "kinds": dict(Counter(p.kind for p in train)),
                  "prompts": len({prompt_key(p.prompt) for p in train}),
                  "chosen_is_response_a": sum(both_orders(p, cfg.seed)[0].label == "A" for p in train)},
        "heldout": {"pairs": len(heldout), "rows": n_held, "kinds": dict(Counter(p.kind for p in heldout)),
                    "prompts": len({prompt_key(p.prompt) for p in heldout})},
        "heldout_fraction": cfg.heldout_fraction,
        "exclude": list(cfg.exclude),
        "seed": cfg.seed,
        "out_dir": str(out),
    }
    write_json_atomic(out / "mix.stats.json", stats)
    RunFolder(out, command="j1 synth mix", started=started, record="mix.run.json").write(
        cfg, train_rows=n_train, heldout_rows=n_held)
    return stats


def summary_text(stats: dict) -> str:
    t, h = stats["train"], stats["heldout"]
    return (f"train: {t['pairs']} pairs ({t['rows']} rows, both orders) {t['kinds']}; "
            f"held out: {h['pairs']} pairs ({h['rows']} rows) {h['kinds']} -> {stats['out_dir']}")
