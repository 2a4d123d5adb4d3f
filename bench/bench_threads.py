"""How j1's CPU commands hold up on a shared machine: torch thread settings, idle and beside busy processes.

    .venv/bin/python bench/bench_threads.py [--loads 0,1,2] [--rounds 1] [--json results/bench/threads.json]

Runs, as a user would, three commands as subprocesses and times each from start to exit (the serve
command from its first request to its last answer, its start-up reported apart):

- ``judge``: the README's example, ``j1 judge --prompt "How many legs does a spider have?" ...`` (the
  shipped judge j1-135m, both orders);
- ``eval``: ``j1 eval --benchmark generic`` on the first ``--eval-pairs`` shipped held-out pairs;
- ``serve``: ``j1 serve`` of j1-135m, then ``--serve-requests`` distinct pair requests sent at once to
  ``/v1/judge`` (after one untimed warm-up request).

Each under every thread setting (its environment):

- ``torch default``: ``OMP_NUM_THREADS`` = the threads torch picks by itself here (j1 before issue 56);
- ``one per physical core``: ``OMP_NUM_THREADS`` = the physical cores (left out where that is torch's
  default: the same run);
- ``1 thread``: ``OMP_NUM_THREADS=1``;
- ``passive wait``: torch's default threads with ``OMP_WAIT_POLICY=PASSIVE`` (a thread that waits at
  an OpenMP barrier sleeps instead of spinning on a core another process needs);
- ``j1 default``: neither variable set, so j1 chooses (``j1.device.cpu_threads``).

And each on an idle machine and beside 1 and 2 busy processes (``--loads``: pure Python spin loops, started
by this script before a load level and killed after it). Within a load level the settings run in turn,
rotated each round. The load average before each run is recorded; the machine should be otherwise idle.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_serve import free_port, http, load_rows, requests_in_order  # noqa: E402

HELDOUT = ROOT / "src" / "j1" / "assets" / "data" / "heldout_mismatch.jsonl"
JUDGE = ["judge", "--prompt", "How many legs does a spider have?", "--response-a", "A spider has eight legs.",
         "--response-b", "Boil the pasta for ten minutes, then drain it."]
SPIN = "while True: pass"


def torch_default_threads() -> int:
    """The intra-op threads torch picks in a fresh process with no thread variables set."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"], env=env,
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def settings(torch_threads: int, physical: int) -> dict[str, dict[str, str]]:
    """name -> the thread variables of that setting (unset ones are removed from the environment)."""
    out = {"torch default": {"OMP_NUM_THREADS": str(torch_threads)}}
    if physical != torch_threads:
        out["one per physical core"] = {"OMP_NUM_THREADS": str(physical)}
    out["1 thread"] = {"OMP_NUM_THREADS": "1"}
    out["passive wait"] = {"OMP_NUM_THREADS": str(torch_threads), "OMP_WAIT_POLICY": "PASSIVE"}
    out["j1 default"] = {}
    return out


def environment(variables: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY")}
    return {**env, **variables, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1", "TOKENIZERS_PARALLELISM": "false"}


def j1(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "j1.cli.main", *args]


def timed_command(args: list[str], env: dict) -> dict:
    t0 = time.perf_counter()
    done = subprocess.run(j1(args), env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode:
        raise RuntimeError(f"j1 {args[0]} failed: {done.stderr.strip()[-2000:]}")
    warned = [line for line in done.stderr.splitlines() if ": warning: " in line]
    return {"seconds": seconds, "warnings": warned}


def timed_serve(env: dict, requests: int) -> dict:
    httpx = http()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    t0 = time.perf_counter()
    server = subprocess.Popen(j1(["serve", "--port", str(port)]), env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"j1 serve exited: {server.stderr.read()[-2000:]}")
            try:
                if httpx.get(url + "/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        started = time.perf_counter() - t0
        reqs = requests_in_order(load_rows(), seed=0)
        body = [{k: r[k] for k in ("prompt", "response_a", "response_b")} for r in reqs[: requests + 1]]
        assert httpx.post(url + "/v1/judge", json=body[-1], timeout=3600).status_code == 200  # warm-up

        async def all_at_once() -> list[int]:
            async with httpx.AsyncClient(timeout=3600) as client:
                answers = await asyncio.gather(*(client.post(url + "/v1/judge", json=b) for b in body[:requests]))
            return [a.status_code for a in answers]

        t1 = time.perf_counter()
        statuses = asyncio.run(all_at_once())
        seconds = time.perf_counter() - t1
        if any(s != 200 for s in statuses):
            raise RuntimeError(f"j1 serve answered {statuses}")
        return {"seconds": seconds, "startup_seconds": started, "judgments_per_s": requests / seconds}
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def run_one(command: str, env: dict, a, scratch: Path, tag: str) -> dict:
    if command == "judge":
        return timed_command(JUDGE, env)
    if command == "eval":
        return timed_command(["eval", "--benchmark", "generic", "--data", str(HELDOUT), "--limit", str(a.eval_pairs),
                              "--out", str(scratch / f"eval-{tag}"), "--no_progress"], env)
    return timed_serve(env, a.serve_requests)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", default="0,1,2", help="busy processes beside the commands, one level after another")
    ap.add_argument("--rounds", type=int, default=1, help="times each setting runs each command at each load")
    ap.add_argument("--commands", default="judge,eval,serve")
    ap.add_argument("--settings", default=None, help="a comma list of setting names (default: all)")
    ap.add_argument("--eval-pairs", type=int, default=6)
    ap.add_argument("--serve-requests", type=int, default=8)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from j1.device import physical_cores

    torch_threads, physical = torch_default_threads(), physical_cores()
    names = settings(torch_threads, physical)
    if a.settings:
        names = {k: v for k, v in names.items() if k in a.settings.split(",")}
    commands = a.commands.split(",")
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="j1-threads-") as tmp:
        for load in [int(x) for x in a.loads.split(",")]:
            spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(load)]
            try:
                time.sleep(1.0 if load else 0.0)
                for r in range(a.rounds):
                    order = list(names)[r % len(names):] + list(names)[: r % len(names)]
                    for name in order:
                        for command in commands:
                            before = os.getloadavg()[0]
                            tag = f"{load}-{r}-{len(runs)}"
                            result = run_one(command, environment(names[name]), a, Path(tmp), tag)
                            runs.append({"load": load, "round": r, "setting": name, "command": command,
                                         "load_average_before": round(before, 2), **result})
                            print(f"busy {load}, {name:<22} {command:<6} {result['seconds']:6.1f} s "
                                  f"(load average before {before:.2f})", flush=True)
            finally:
                for p in spinners:
                    p.kill()
                    p.wait()
    table = summary(runs)
    print(f"\nmedian seconds (torch default threads {torch_threads}, physical cores {physical}); x: over the same "
          "setting idle")
    for command, by_setting in table.items():
        for name, by_load in by_setting.items():
            cells = "  ".join(f"busy {load}: {v['seconds']:6.1f} s ({v['vs_idle']:.2f}x)" if v.get("vs_idle")
                              else f"busy {load}: {v['seconds']:6.1f} s" for load, v in by_load.items())
            print(f"{command:<6} {name:<22} {cells}")
    if a.json:
        Path(a.json).write_text(json.dumps({"args": vars(a), "torch_default_threads": torch_threads,
                                            "physical_cores": physical, "settings": names, "summary": table,
                                            "runs": runs}, indent=2) + "\n", encoding="utf-8")


def summary(runs: list[dict]) -> dict:
    """command -> setting -> load -> {seconds: median, vs_idle: over the same setting at load 0}."""
    import statistics

    out: dict = {}
    for run in runs:
        out.setdefault(run["command"], {}).setdefault(run["setting"], {}).setdefault(run["load"], []).append(run["seconds"])
    for by_setting in out.values():
        for name, by_load in by_setting.items():
            idle = statistics.median(by_load[0]) if 0 in by_load else None
            by_setting[name] = {load: {"seconds": statistics.median(v),
                                       "vs_idle": statistics.median(v) / idle if idle and load else None}
                                for load, v in sorted(by_load.items())}
    return out


if __name__ == "__main__":
    main()
