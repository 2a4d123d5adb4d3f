"""The real judge in the GPU check (issue 51): j1-135m, on the embedded model's real weights, judges the
held-out pairs of ``make demo``, and its verdicts are set beside the CPU's on the same pairs.

    python bench/gpu_judge.py reference                       # here, on the CPU: writes REFERENCE (~4 min)
    python bench/gpu_judge.py judge --work DIR --json FILE    # in bench/gpu_check.py's judge step

The pairs are ``j1 demo --heldout_pairs 40``'s (``j1.demo.runner.heldout_rows``: 20 GSM8K test, 20 MATH/Alpaca),
judged as the demo judges them: j1-135m asked as its manifest says, greedy, both orders, through
``j1 eval``'s runner. ``reference`` judges them on the CPU (float32, ``j1.backends.decode``) and keeps every
answer's text in bench/gpu_check_cpu_j1_135m.json with the sha256 of the converted weights it used;
``judge`` judges them in each ``--dtypes`` (on a GPU ``auto`` is bfloat16 with ``generate``, the
product's path; ``float32`` the like-for-like one) and counts the judgments whose verdict and text are
the CPU's. Judging fewer pairs (the self-test's 2) compares those with the reference's same judgments.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REFERENCE = BENCH / "gpu_check_cpu_j1_135m.json"
JUDGE = "j1-135m"
PAIRS = 40  # make demo's --heldout_pairs
KEPT = ("n", "consistent_accuracy", "accuracy", "flip_rate", "invalid_rate")
SHOWN_DIFFERENCES = 10


def weights_sha256() -> str | None:
    """sha256 of the embedded model's converted weights (``model.safetensors`` in j1's cache), None when
    they are not converted yet: the same GGUF and versions convert to the same bytes."""
    from j1.models import EMBEDDED_NAME, cache_root

    path = cache_root() / EMBEDDED_NAME / "model.safetensors"
    if not path.is_file():
        return None
    sys.path.insert(0, str(BENCH))
    from gpu_parts import sha256_file

    return sha256_file(path)


def _metrics(metrics: dict) -> dict:
    """The numbers the table shows, overall and by group (category)."""
    keep = lambda m: {k: m.get(k) for k in KEPT}  # noqa: E731
    return {"overall": keep(metrics["overall"]), "groups": {g: keep(m) for g, m in sorted(metrics["categories"].items())}}


def judge_pairs(n: int, dtype: str, work: Path) -> dict:
    """Judge the first ``n`` demo pairs with j1-135m in ``dtype``; the run's metrics and every answer."""
    import torch

    from j1.demo.runner import heldout_rows
    from j1.device import default_device, local_dtype
    from j1.eval.runner import run_eval
    from j1.eval.spec import EvalSpec
    from j1.runs.atomic import write_jsonl_atomic
    from j1.schema import iter_jsonl

    data = work / "heldout.jsonl"
    write_jsonl_atomic(data, heldout_rows(n))
    out = work / f"eval-{dtype}"
    spec = EvalSpec(model=JUDGE, benchmark="generic", data=str(data), out=str(out), temperature=0.0, samples=1,
                    seed=0, dtype=dtype, progress=False)
    t0 = time.monotonic()
    metrics = run_eval(spec)
    seconds = time.monotonic() - t0
    device = default_device()
    answers = sorted(({"item": r["item"], "category": r["category"], "slot": r["slot"], "text": r["texts"][0]}
                      for _, r in iter_jsonl(out / "judgments.jsonl")), key=lambda a: (a["item"], a["slot"]))
    return {"model": JUDGE, "pairs": n, "device": device, "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
            "dtype": local_dtype(dtype, device), "asked_dtype": dtype, "seconds": round(seconds, 1),
            "metrics": _metrics(metrics), "answers": answers}


def compare(answers: list[dict], reference: list[dict]) -> dict:
    """How many of ``answers`` have the reference's verdict and text for the same (item, order); the first
    few that differ. Answers the reference lacks are not compared.

    >>> ref = [{"item": "p", "slot": "AB", "text": "<think>t</think><answer>[[A]]</answer>"},
    ...        {"item": "p", "slot": "BA", "text": "<think>t</think><answer>[[B]]</answer>"}]
    >>> got = [{"item": "p", "slot": "AB", "text": "<think>u</think><answer>[[A]]</answer>"},
    ...        {"item": "p", "slot": "BA", "text": "<think>t</think><answer>[[A]]</answer>"},
    ...        {"item": "q", "slot": "AB", "text": "x"}]
    >>> c = compare(got, ref)
    >>> c["compared"], c["same_verdict"], c["same_text"], c["differ"][0]["cpu"], c["differ"][0]["here"]
    (2, 1, 0, 'B', 'A')
    """
    from j1.formats import get_format

    parse = get_format("pav").parse
    ref = {(r["item"], r["slot"]): r["text"] for r in reference}
    same_verdict = same_text = compared = 0
    differ = []
    for a in answers:
        want = ref.get((a["item"], a["slot"]))
        if want is None:
            continue
        compared += 1
        got_v, want_v = str(parse(a["text"]).verdict), str(parse(want).verdict)
        same_text += a["text"] == want
        same_verdict += got_v == want_v
        if got_v != want_v and len(differ) < SHOWN_DIFFERENCES:
            differ.append({"item": a["item"], "slot": a["slot"], "cpu": want_v, "here": got_v})
    return {"compared": compared, "same_verdict": same_verdict, "same_text": same_text, "differ": differ}


def reference(n: int, path: Path, work: Path) -> dict:
    """Judge the demo pairs on the CPU and write ``path``: the answers, metrics, versions and weights' sum."""
    import torch
    import transformers

    from j1.runs.atomic import write_json_atomic

    result = judge_pairs(n, "float32", work)
    if result["device"] != "cpu":
        raise SystemExit("gpu_judge reference: run it on a CPU machine (the reference is the CPU's verdicts)")
    ref = {"what": "j1-135m's answers on make demo's held-out pairs, on the CPU: the GPU check's reference",
           "command": "python bench/gpu_judge.py reference", "torch": torch.__version__,
           "transformers": transformers.__version__, "weights_sha256": weights_sha256(),
           **{k: v for k, v in result.items() if k != "gpu"}}
    write_json_atomic(path, ref)
    return ref


def judge(n: int, dtypes: list[str], work: Path, ref_path: Path, json_path: Path) -> dict:
    """The check's judge step: each dtype's run beside the reference, ``json_path`` rewritten after each
    (a step cut by its timeout keeps the runs it finished)."""
    ref = json.loads(ref_path.read_text())
    out = {"reference": {"path": str(ref_path.relative_to(BENCH.parent)) if ref_path.is_relative_to(BENCH.parent)
                         else str(ref_path), "pairs": ref["pairs"], "device": ref["device"], "dtype": ref["dtype"],
                         "torch": ref["torch"], "metrics": ref["metrics"]},
           "weights_sha256": weights_sha256(), "reference_weights_sha256": ref["weights_sha256"], "runs": {}}
    for dtype in dtypes:
        run = judge_pairs(n, dtype, work)
        run["versus_cpu"] = compare(run["answers"], ref["answers"])
        out["runs"][dtype] = run
        tmp = json_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1) + "\n")
        tmp.replace(json_path)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("reference", help="judge the demo pairs on the CPU and write the reference file")
    r.add_argument("--pairs", type=int, default=PAIRS)
    r.add_argument("--out", default=str(REFERENCE))
    r.add_argument("--work", default=None, help="folder for the eval runs (default: a temp folder)")
    j = sub.add_parser("judge", help="judge the demo pairs here and compare with the reference")
    j.add_argument("--work", required=True)
    j.add_argument("--json", required=True)
    j.add_argument("--pairs", type=int, default=PAIRS)
    j.add_argument("--dtypes", default="auto,float32", help="comma-separated: auto, float32, bfloat16")
    j.add_argument("--reference", default=str(REFERENCE))
    a = p.parse_args(argv)
    logging_setup()
    if a.command == "reference":
        import tempfile

        work = Path(a.work or tempfile.mkdtemp(prefix="j1-gpu-judge-"))
        ref = reference(a.pairs, Path(a.out), work)
        print(json.dumps({"out": a.out, **ref["metrics"]["overall"], "weights_sha256": ref["weights_sha256"]}))
        return 0
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    result = judge(a.pairs, [d for d in a.dtypes.split(",") if d], work, Path(a.reference), Path(a.json))
    for dtype, run in result["runs"].items():
        c = run["versus_cpu"]
        print(f"{dtype} ({run['dtype']} on {run['device']}): {c['same_verdict']} of {c['compared']} verdicts and "
              f"{c['same_text']} texts as on the CPU; consistent accuracy {run['metrics']['overall']['consistent_accuracy']}")
    return 0


def logging_setup() -> None:
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


if __name__ == "__main__":
    sys.exit(main())
