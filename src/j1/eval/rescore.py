"""``j1 score DIR``: recompute a finished or interrupted run's metrics and report from its judgments, with
no model. It reads run.json to learn which command made the folder and rescores the runs it can: ``j1
eval`` (metrics.json, report.md), ``j1 consistency`` (the same) and ``j1 attack`` (report.json,
report.md). Any other folder, or a run.json that lacks what the rescoring needs, is a ValueError in one
line that names the file and what is wrong."""

from __future__ import annotations

from pathlib import Path

from j1.runs.runinfo import RunFolder

# The command run.json records -> what rescoring it needs in run.json's config.
RESCORED = {"eval": ("benchmark", "format", "samples", "seed"), "consistency": ("format", "samples", "seed"),
            "attack": ("format", "template", "assistant_prefill", "data", "samples", "seed")}


def run_record(run_dir: str | Path) -> dict:
    """DIR/run.json, checked for what ``rescore`` needs.

    Raises:
        FileNotFoundError: DIR has no run.json or no judgments.jsonl.
        ValueError: run.json is not JSON, names a command that ``j1 score`` does not rescore (``j1 label``,
            ``j1 train``, ...), or its config lacks a field; the message names the file.
    """
    run_dir = Path(run_dir)
    for need in ("run.json", "judgments.jsonl"):
        if not (run_dir / need).is_file():
            raise FileNotFoundError(f"{run_dir / need} not found; is {run_dir} a j1 eval, consistency or attack "
                                    "run folder?")
    path = run_dir / "run.json"
    run = RunFolder.read(run_dir)
    if not isinstance(run, dict) or not isinstance(run.get("config"), dict):
        raise ValueError(f"{path}: field 'config' missing; not the run.json of a j1 run")
    command = run.get("command", "eval")  # a run.json from before commands were recorded is an eval run
    if command not in RESCORED:
        redo = " (j1 label --resume rewrites preferences.jsonl and results.jsonl from the judgments)" \
            if command == "label" else ""
        raise ValueError(f"{path}: a j1 {command} run; j1 score rescores j1 "
                         f"{', '.join(sorted(RESCORED))} runs{redo}")
    missing = [k for k in RESCORED[command] if k not in run["config"]]
    if missing:
        raise ValueError(f"{path}: field 'config.{missing[0]}' missing; j1 score cannot rescore this j1 {command} run")
    return run


def rescore(run_dir: str | Path, *, n_boot: int = 1000) -> dict:
    """Rescore the run in ``run_dir`` (see the module docstring); returns its metrics (an attack run: its
    report), each with ``benchmark``, ``format``, ``model``, ``n`` and ``overall``.

    Raises:
        FileNotFoundError, ValueError: as ``run_record``; RowError for a malformed judgments line.
    """
    run_dir = Path(run_dir)
    command = run_record(run_dir).get("command", "eval")
    if command == "consistency":
        from j1.eval.consistency_scoring import score_consistency

        return score_consistency(run_dir, n_boot=n_boot)
    if command == "attack":
        from j1.attack.runner import score_attack

        report = score_attack(run_dir, n_boot=n_boot)
        meta = report["meta"]
        return {"benchmark": "attack", "format": meta["format"], "model": meta["model"],
                "n": report["overall"]["n"] if report["overall"] else 0, "overall": report["overall"]}
    from j1.eval.runner import score_run

    return score_run(run_dir, n_boot=n_boot)
