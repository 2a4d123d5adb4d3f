"""``j1 export judge SRC --out DIR [--merged] [--gguf FILE]``: a trained judge as a folder PEFT, transformers and
vLLM load, and as a GGUF file for llama.cpp (``j1.export.judge``), e.g. into src/j1/assets/judges/NAME to ship it.

``j1 export verl --pairs FILE --format F --out DIR``: training pairs as parquet in verl's RL dataset
schema, so verl (the J1 paper's engine) trains a judge on the same prompts as ``j1 train``.

Each judge prompt (both orders of every pair; both slots for pos) is one row, a pair's rows adjacent:

- ``data_source``: ``j1/<format>``; ``ability``: ``judge``;
- ``prompt``: the chat messages, rendered with j1's judge template (``j1.train.data.unit_rows``,
  as ``j1 train`` renders them); verl applies the chat template with a generation prompt;
- ``reward_model``: ``{"style": "rule", "ground_truth": ...}``: the better response's shown position
  (pairwise) or the better response (pos);
- ``extra_info``: ``pair_id``, ``order`` (AB/BA; pos: the slot A/B), ``label`` (the better response in
  the original placement), ``label_shown`` (its shown position; null for pos), ``format``, ``index``.

``j1.integrations.verl.compute_score`` reads ``extra_info`` and ``PairSampler`` keeps each pair's
rows in one batch.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from j1.cli.common import parse, removed_on_error, setup_logging
from j1.export.spec import ExportJudgeSpec
from j1.integrations.verl_spec import ExportVerlSpec
from j1.runs.atomic import temp_file_beside
from j1.runs.runinfo import RunFolder

log = logging.getLogger(__name__)

SUBCOMMANDS = {
    "judge": "a trained judge as a folder PEFT and vLLM load (its adapter, or --merged into its base) and/or a "
             "--gguf file for llama.cpp, with its judge.json and card",
    "verl": "pairs as parquet in verl's RL dataset schema (prompt, reward_model, extra_info)",
}
ABILITY = "judge"


def usage() -> str:
    rows = "\n".join(f"  {name:<6} {help_}" for name, help_ in SUBCOMMANDS.items())
    return f"usage: j1 export {{{','.join(SUBCOMMANDS)}}} [options]   (j1 export SUB --help)\n\n{rows}\n"


def verl_rows(pairs, formulation: str, *, template: str = "full", data_source: str = "j1") -> list[dict]:
    """The verl rows of ``pairs`` (``j1.train.data.Pair``), a pair's rows adjacent (see the module docstring).

    >>> from j1.train.data import Pair
    >>> rows = verl_rows([Pair("p1", "2+2?", "4", "5", "A")], "pav")
    >>> [(r["extra_info"]["order"], r["extra_info"]["label_shown"], r["reward_model"]["ground_truth"]) for r in rows]
    [('AB', 'A', 'A'), ('BA', 'B', 'B')]
    """
    from j1.formats import get_format
    from j1.pairs import shown_label
    from j1.train.data import unit_rows

    rows = []
    for pair in pairs:
        for row in unit_rows(pair, formulation, template):
            fmt = row["judge_format"]
            pairwise = get_format(fmt).pairwise
            label_shown = shown_label(row["label"], row["order"]) if pairwise else None
            rows.append({
                "data_source": f"{data_source}/{fmt}",
                "prompt": row["prompt"],
                "ability": ABILITY,
                "reward_model": {"style": "rule", "ground_truth": label_shown if pairwise else row["label"]},
                "extra_info": {"pair_id": row["pair_id"], "order": row["order"], "label": row["label"],
                               "label_shown": label_shown, "format": fmt, "index": len(rows)},
            })
    return rows


def verl_schema():
    """The parquet schema of the rows: explicit, so a column that is null in every row (``label_shown``
    for pos) keeps its string type and files of every format read alike."""
    import pyarrow as pa

    text = pa.string()
    return pa.schema([
        ("data_source", text),
        ("prompt", pa.list_(pa.struct([("role", text), ("content", text)]))),
        ("ability", text),
        ("reward_model", pa.struct([("style", text), ("ground_truth", text)])),
        ("extra_info", pa.struct([("pair_id", text), ("order", text), ("label", text), ("label_shown", text),
                                  ("format", text), ("index", pa.int64())])),
    ])


def write_parquet_atomic(rows: list[dict], path: Path) -> None:
    """Write ``rows`` as parquet through a temp file and a rename, so a killed export leaves no partial file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fd, tmp = temp_file_beside(path, suffix=".parquet")
    os.close(fd)
    try:
        pq.write_table(pa.Table.from_pylist(rows, schema=verl_schema()), tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run_export_verl(cfg: ExportVerlSpec) -> dict:
    """Export every ``cfg.pairs`` file to ``cfg.out/<stem>.parquet``; returns run.json's content."""
    from j1.train.data import load_pairs

    started = time.time()
    out = Path(cfg.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {cfg.out}: is a file; give a folder")
    # Every file is read and rendered before the folder is made: a bad one leaves nothing behind.
    rendered = []
    for src in cfg.pairs:
        pairs = load_pairs(src, pair_seed=cfg.pair_seed)[: cfg.max_pairs]
        if not pairs:
            raise ValueError(f"{src}: no pairs")
        rendered.append((src, len(pairs), verl_rows(pairs, cfg.format, template=cfg.template,
                                                   data_source=cfg.data_source)))
    folder = RunFolder(out, command="j1 export verl", started=started)
    files = {}
    for src, n_pairs, rows in rendered:
        target = out / f"{Path(src).stem}.parquet"
        write_parquet_atomic(rows, target)
        files[str(target)] = {"source": src, "pairs": n_pairs, "rows": len(rows)}
        log.info("%d pairs -> %d rows -> %s", n_pairs, len(rows), target)
    return folder.write(cfg, files=files)


def main(argv: Sequence[str]) -> int:
    argv = list(argv)
    if not argv or argv[0] in {"-h", "--help"}:
        sys.stdout.write(usage())
        return 0
    if argv[0] not in SUBCOMMANDS:
        raise ValueError(f"unknown export target {argv[0]!r}; choose one of {sorted(SUBCOMMANDS)}")
    prog = f"j1 export {argv[0]}"
    if argv[0] == "judge":
        rest = argv[1:]
        if rest and not rest[0].startswith("-"):  # j1 export judge SRC --out DIR
            rest = ["--model", *rest]
        cfg = parse(ExportJudgeSpec, rest, prog=prog)
        setup_logging()
        from j1.export.judge import export_judge

        record = export_judge(cfg.model, cfg.out, merged=cfg.merged, base=cfg.base, dtype=cfg.dtype, gguf=cfg.gguf,
                              gguf_type=cfg.gguf_type)
        if cfg.out:
            sys.stdout.write(f"{cfg.out}: {record['kind']} judge from {cfg.model} (step {record['step']})\n")
        if cfg.gguf:
            g = record["gguf"]
            sys.stdout.write(f"{cfg.gguf}: {g['qtype']} GGUF of {cfg.model}, {g['bytes'] / 1e6:.0f} MB\n")
        return 0
    cfg = parse(ExportVerlSpec, argv[1:], prog=prog)
    setup_logging()
    with removed_on_error(cfg.out):  # a failed write leaves no empty folder
        run_export_verl(cfg)
    return 0
