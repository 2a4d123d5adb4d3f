"""Load on ``j1 serve``: N concurrent clients on loopback for a fixed time, beside one request at a time.

    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_serve.py --target local --clients 32 --seconds 240 \\
        --threads 1 --json results/serve/bench_local.json
    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_serve.py --target upstream --clients 32 --seconds 30 \\
        --json results/serve/bench_upstream.json
    python bench/bench_serve.py --target local --clients 1,32,64 --seconds 10 --cycle --dtype bfloat16  # a GPU

Targets (each a real ``j1 serve`` subprocess on a free loopback port):
  local     the shipped judge j1-135m (``--model``) on this machine: its GPU when torch sees one, else
            the CPU (``--threads`` torch threads), requests batched into the local generator
            (``--max-batch`` items, ``--batch-rows`` rows a forward);
  upstream  ``j1 serve --base-url`` on a scripted OpenAI-compatible server (a subprocess of this
            script, stdlib HTTP) that answers a well-formed pav verdict after ``--latency`` seconds.

Each target runs phases of ``--seconds`` each, side by side in one run: ``sequential`` (one client,
one request at a time) and ``concurrent`` for each client count of ``--clients`` above 1 (a list such
as ``1,32,64``: each client sends its next request as soon as the last is answered; the JSON's
``concurrent`` is the largest count, ``concurrent_by_clients`` has each). Requests are POST /v1/judge with real GSM8K pairs (the
shipped ``gsm8k_mismatch.jsonl``: a question, its gold solution, another question's solution, A/B
order drawn from ``--seed``), all distinct, so no batch holds two copies of one prompt. A phase stops
starting requests at ``--seconds`` (or when the 920 distinct requests are used up; ``--cycle`` starts
them over instead, for a server fast enough to use them up) and waits for those in flight;
judgments/s = answered / time to the last answer.

Counted per phase: dropped (any answer but 200, or a transport error) and wrong answers. Wrong means
a verdict (overall or of either order) other than the reference: for ``upstream`` the scripted
judge's known verdict (it prefers the gold solution), for ``local`` what the same server gives for
that request alone, one at a time: the sequential phase's answers, then, once per run after every
phase, an untimed pass over a seeded sample of at most ``--check-max`` of the other distinct requests
the concurrent phases answered, stopped after ``--seconds`` (so the check never takes longer than a
phase). Answers with no reference are counted ``unchecked``. The server's ``/health`` batching totals
give the batches actually formed and the time requests waited in the queue.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "j1" / "assets" / "data" / "gsm8k_mismatch.jsonl"
_REQUEST = re.compile(r"<request-\w+>\n(.*?)\n</request-\w+>", re.S)
_SHOWN = re.compile(r"<response_([AB])-\w+>\n(.*?)\n</response_\1-\w+>", re.S)


def http():
    """httpx2 (openai 3's client), else httpx."""
    try:
        import httpx2 as httpx
    except ImportError:
        import httpx
    return httpx


def load_rows() -> list[dict]:
    with DATA.open() as fh:
        return [json.loads(line) for line in fh]


def requests_in_order(rows: list[dict], seed: int) -> list[dict]:
    """Every pair in both A/B placements, shuffled under ``seed``: 2 x rows distinct requests, each
    with the verdict a judge that prefers the gold solution gives (``gold``)."""
    reqs = []
    for r in rows:
        reqs.append({"prompt": r["prompt"], "response_a": r["chosen"], "response_b": r["rejected"], "gold": "A"})
        reqs.append({"prompt": r["prompt"], "response_a": r["rejected"], "response_b": r["chosen"], "gold": "B"})
    random.Random(seed).shuffle(reqs)
    return reqs


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..1): the smallest value with at least q of them at or below it.

    >>> percentile([4.0, 1.0, 3.0, 2.0], 0.5), percentile([4.0, 1.0, 3.0, 2.0], 0.99), percentile([], 0.5)
    (2.0, 4.0, None)
    """
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---- the scripted upstream (run as a subprocess: ``bench_serve.py upstream-server``) ----

class _Upstream(ThreadingHTTPServer):
    request_queue_size = 512  # the stdlib's 5 would drop SYNs when 64 connections open at once
    daemon_threads = True


def serve_upstream(latency: float) -> None:
    """An OpenAI-compatible chat server whose judge prefers the gold solution of the request it is
    shown, after ``latency`` seconds; prints its base URL, then serves until killed."""
    gold = {r["prompt"]: r["chosen"] for r in load_rows()}

    def verdict(user: str) -> str:
        (request,) = _REQUEST.findall(user)
        shown = dict(_SHOWN.findall(user))
        picks = [pos for pos, text in shown.items() if text == gold[request]]
        return picks[0] if len(picks) == 1 else "tie"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the client reuses its connections

        def log_message(self, *args):
            pass

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._send(200, {"object": "list", "data": [{"id": "scripted-judge", "object": "model", "owned_by": "bench"}]})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            time.sleep(latency)
            user = next(m["content"] for m in body["messages"] if m["role"] == "user")
            pick = verdict(user)
            text = f"<think>the gold solution</think> <answer>[[{pick}]]</answer>" if pick != "tie" else "no verdict"
            n = int(body.get("n") or 1)
            self._send(200, {
                "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
                "choices": [{"index": k, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                            for k in range(n)],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10 * n, "total_tokens": 100 + 10 * n},
            })

    server = _Upstream(("127.0.0.1", 0), Handler)
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


# ---- the server under test ----

class Served:
    """A ``j1 serve`` subprocess (and, for the upstream target, the scripted upstream beside it)."""

    def __init__(self, args: argparse.Namespace, target: str):
        self.procs: list[subprocess.Popen] = []
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "NO_COLOR": "1"}
        serve = [sys.executable, "-m", "j1.cli.main", "serve", "--port", str(port), "--max_batch", str(args.max_batch),
                 "--max_queue", str(max(256, 2 * max(args.clients))), "--batch_wait_ms", str(args.batch_wait_ms)]
        if target == "local":
            serve += ["--model", args.model, "--batch_rows", str(args.batch_rows), "--dtype", args.dtype]
            if args.max_new_tokens:
                serve += ["--max_new_tokens", str(args.max_new_tokens)]
        else:
            up = subprocess.Popen([sys.executable, __file__, "upstream-server", "--latency", str(args.latency)],
                                  stdout=subprocess.PIPE, text=True, env=env)
            self.procs.append(up)
            self.upstream_url = up.stdout.readline().strip()
            serve += ["--base-url", self.upstream_url, "--model", "scripted-judge", "--format", "pav",
                      "--concurrency", str(args.concurrency)]
        self.command = ["j1", *serve[3:]]
        self.server = subprocess.Popen(serve, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        self.procs.append(self.server)
        self._wait_healthy()

    def _wait_healthy(self, timeout: float = 300) -> None:
        httpx = http()
        deadline = time.monotonic() + timeout
        while True:
            if self.server.poll() is not None:
                raise RuntimeError(f"j1 serve exited: {self.server.stderr.read()}")
            try:
                if httpx.get(self.url + "/health", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("j1 serve did not answer /health")
            time.sleep(0.5)

    def health(self) -> dict:
        return http().get(self.url + "/health", timeout=30).json()

    def close(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()


# ---- the clients ----

def verdicts(answer: dict) -> tuple[str, ...]:
    """The overall verdict and each order's, the parts a wrong answer would change."""
    return (answer["verdict"], *(o["verdict"] for o in answer["orders"]))


async def run_phase(url: str, reqs: list[dict], clients: int, seconds: float, cycle: bool = False) -> dict:
    """``clients`` clients send ``reqs`` in order (the next unsent one each) for ``seconds``, starting
    over when ``cycle`` and all are sent; one record per request: index (running), request (its index
    in ``reqs``), latency, HTTP status (None: transport error), verdicts."""
    httpx = http()
    records: list[dict] = []
    next_index = 0
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    async with httpx.AsyncClient(timeout=3600, limits=limits) as client:
        t0 = time.monotonic()
        deadline = t0 + seconds

        async def one_client() -> None:
            nonlocal next_index
            while time.monotonic() < deadline and (cycle or next_index < len(reqs)):
                i = next_index
                next_index += 1
                body = {k: reqs[i % len(reqs)][k] for k in ("prompt", "response_a", "response_b")}
                sent = time.monotonic()
                try:
                    resp = await client.post(url + "/v1/judge", json=body)
                    status, answer = resp.status_code, (resp.json() if resp.status_code == 200 else resp.text[:200])
                except httpx.TransportError as exc:
                    status, answer = None, f"{type(exc).__name__}: {exc}"
                done = time.monotonic()
                records.append({"index": i, "request": i % len(reqs), "latency_s": done - sent, "done_s": done - t0, "status": status,
                                "verdicts": verdicts(answer) if status == 200 else None,
                                "error": None if status == 200 else answer})

        await asyncio.gather(*(one_client() for _ in range(clients)))
    return {"records": records, "elapsed_s": max([r["done_s"] for r in records], default=seconds)}


def batching(before: dict, after: dict) -> dict:
    """The server's batches during a phase, from its /health totals before and after."""
    d = {k: after["batches"][k] - before["batches"][k] for k in ("batches", "requests", "items", "wait_s", "run_s")}
    return {**{k: round(v, 3) for k, v in d.items()},
            "mean_batch_items": round(d["items"] / d["batches"], 2) if d["batches"] else None,
            "mean_queue_wait_s": round(d["wait_s"] / d["requests"], 3) if d["requests"] else None,
            "largest_so_far": after["batches"]["largest"]}


def summarise(phase: dict, clients: int, batches: dict, server_cpu_s: float, load: list[float]) -> dict:
    recs = phase["records"]
    ok = [r for r in recs if r["status"] == 200]
    lat = [r["latency_s"] for r in ok]
    dropped: dict[str, int] = {}
    for r in recs:
        if r["status"] != 200:
            key = str(r["status"] or r["error"].split(":")[0])
            dropped[key] = dropped.get(key, 0) + 1
    return {
        "clients": clients, "sent": len(recs), "answered": len(ok), "dropped": sum(dropped.values()),
        "dropped_by": dropped, "elapsed_s": round(phase["elapsed_s"], 3),
        "judgments_per_s": round(len(ok) / phase["elapsed_s"], 4) if phase["elapsed_s"] else None,
        "p50_s": _r(percentile(lat, 0.5)), "p99_s": _r(percentile(lat, 0.99)),
        "server": {**batches, "cpu_s": round(server_cpu_s, 1)}, "loadavg_1m": load,
    }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def wrong_answers(recs: list[dict], reference: dict[int, tuple]) -> list[dict]:
    """Answers whose verdicts differ from their request's reference (``reference``: request -> verdicts)."""
    return [{"index": r["index"], "request": r["request"], "got": r["verdicts"], "reference": reference[r["request"]]}
            for r in recs if r["status"] == 200 and tuple(r["verdicts"]) != tuple(reference[r["request"]])]


def check_sample(recs: list[dict], reference: dict[int, tuple], most: int, seed: int) -> list[int]:
    """The requests to judge alone: a seeded sample of at most ``most`` of the distinct requests answered
    in ``recs`` that have no reference yet, in sampled order.

    >>> recs = [{"status": 200, "request": i % 5} for i in range(12)] + [{"status": 503, "request": 7}]
    >>> check_sample(recs, {0: ("A",)}, most=2, seed=0) == check_sample(recs, {0: ("A",)}, most=2, seed=0)
    True
    >>> sorted(check_sample(recs, {0: ("A",)}, most=10, seed=0))
    [1, 2, 3, 4]
    """
    needed = sorted({r["request"] for r in recs if r["status"] == 200 and r["request"] not in reference})
    return random.Random(seed).sample(needed, min(most, len(needed)))


def serving_device() -> str:
    """Where ``j1 serve`` runs a local judge: CUDA when torch sees a GPU (``LocalBackend``'s default)."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def bench_target(args: argparse.Namespace, target: str, reqs: list[dict]) -> dict:
    served = Served(args, target)
    try:
        # Warm-up: the first judgment pays one-off costs (kernels, connection pools); it is not timed.
        warm = {k: reqs[-1][k] for k in ("prompt", "response_a", "response_b")}
        assert http().post(served.url + "/v1/judge", json=warm, timeout=3600).status_code == 200
        phases, raw = {}, {}
        runs = [("sequential", 1)] + [(f"concurrent-{c}", c) for c in sorted(set(args.clients) - {1})]
        for name, clients in runs:
            print(f"[{target}] {name}: {clients} client(s) for {args.seconds:g}s", file=sys.stderr, flush=True)
            before, cpu0, load0 = served.health(), cpu_seconds(served.server.pid), os.getloadavg()[0]
            raw[name] = asyncio.run(run_phase(served.url, reqs, clients, args.seconds, args.cycle))
            after, cpu1 = served.health(), cpu_seconds(served.server.pid)
            phases[name] = summarise(raw[name], clients, batching(before, after), cpu1 - cpu0,
                                     [round(load0, 2), round(os.getloadavg()[0], 2)])
        # The references: the scripted judge's known verdict; for the local judge, what it gives for
        # each request alone: the sequential phase's answers, then a sample of the other requests the
        # concurrent phases answered, judged one at a time once for all phases, within one phase's time.
        check = {"sampled": 0, "checked": 0, "seconds": 0.0, "budget_s": args.seconds}
        if target == "upstream":
            reference = {i: (r["gold"], r["gold"], r["gold"]) for i, r in enumerate(reqs)}
        else:
            reference = {r["request"]: tuple(r["verdicts"]) for r in raw["sequential"]["records"]
                         if r["status"] == 200}
            answered = [r for name, _ in runs[1:] for r in raw[name]["records"]]
            sample = check_sample(answered, reference, args.check_max, args.seed)
            print(f"[{target}] checking {len(sample)} concurrent answers one at a time (at most {args.seconds:g}s)",
                  file=sys.stderr, flush=True)
            t0 = time.monotonic()
            found = asyncio.run(_alone(served.url, reqs, sample, t0 + args.seconds))
            reference.update(found)
            check.update(sampled=len(sample), checked=len(found), seconds=round(time.monotonic() - t0, 2))
        for name in phases:
            recs = [r for r in raw[name]["records"] if r["request"] in reference]
            phases[name]["wrong"] = len(wrong_answers(recs, reference))
            phases[name]["wrong_examples"] = wrong_answers(recs, reference)[:5]
            phases[name]["checked"] = len([r for r in recs if r["status"] == 200])
            phases[name]["unchecked"] = sum(1 for r in raw[name]["records"]
                                            if r["status"] == 200 and r["request"] not in reference)
        seq = phases["sequential"]["judgments_per_s"]
        by_clients = {str(c): phases.pop(name) for name, c in runs[1:]}
        speedups = {c: round(p["judgments_per_s"] / seq, 2) if seq and p["judgments_per_s"] else None
                    for c, p in by_clients.items()}
        largest = str(max(int(c) for c in by_clients))
        return {"server_command": served.command, "device": serving_device() if target == "local" else None,
                "dtype": args.dtype if target == "local" else None, **phases,
                "concurrent": by_clients[largest], "speedup": speedups[largest],
                "goal": args.goal_local if target == "local" else args.goal_upstream,
                "verdict_mix": _mix(raw[runs[-1][0]]["records"]), "concurrent_by_clients": by_clients,
                "speedup_by_clients": speedups, "reference_check": check}
    finally:
        served.close()


async def _alone(url: str, reqs: list[dict], indices: list[int], deadline: float) -> dict[int, tuple]:
    """The verdicts of ``reqs[i]`` judged one at a time, for each ``i`` in turn until ``deadline``
    (monotonic); a request answered other than 200 gets none."""
    httpx = http()
    found = {}
    async with httpx.AsyncClient(timeout=3600) as client:
        for i in indices:
            if time.monotonic() > deadline:
                break
            body = {k: reqs[i][k] for k in ("prompt", "response_a", "response_b")}
            resp = await client.post(url + "/v1/judge", json=body)
            if resp.status_code == 200:
                found[i] = verdicts(resp.json())
    return found


def _mix(recs: list[dict]) -> dict[str, int]:
    """How many answers said A, B, tie, invalid: a benchmark of all-A answers would hide mix-ups."""
    mix: dict[str, int] = {}
    for r in recs:
        if r["status"] == 200:
            mix[r["verdicts"][0]] = mix.get(r["verdicts"][0], 0) + 1
    return mix


def table(results: dict) -> str:
    lines = ["| target | phase | clients | answered | dropped | wrong | p50 s | p99 s | judgments/s | "
             "mean batch | mean queue wait s | speed-up (goal) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for target, res in results.items():
        for name, p in [("sequential", res["sequential"])] + [
                (f"concurrent-{c}", phase) for c, phase in res["concurrent_by_clients"].items()]:
            speed = f"**{res['speedup_by_clients'][str(p['clients'])]}x** ({res['goal']}x)" if name != "sequential" else ""
            lines.append(f"| {target} | {name} | {p['clients']} | {p['answered']} | {p['dropped']} | {p['wrong']} | "
                         f"{p['p50_s']} | {p['p99_s']} | {p['judgments_per_s']} | {p['server']['mean_batch_items']} | "
                         f"{p['server']['mean_queue_wait_s']} | {speed} |")
    return "\n".join(lines)


def client_counts(text: str) -> list[int]:
    """``--clients``: one count or a comma list, each >= 1, at least one above 1.

    >>> client_counts("32"), client_counts("1,32,64")
    ([32], [1, 32, 64])
    """
    counts = [int(c) for c in text.split(",") if c.strip()]
    if not counts or min(counts) < 1 or max(counts) < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: give client counts >= 1, at least one above 1 (e.g. 1,32,64)")
    return counts


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "upstream-server":
        ap = argparse.ArgumentParser()
        ap.add_argument("upstream-server")
        ap.add_argument("--latency", type=float, required=True)
        serve_upstream(ap.parse_args().latency)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", choices=("local", "upstream", "both"), default="both")
    ap.add_argument("--clients", type=client_counts, default=[32],
                    help="concurrent clients, or a list (1,32,64) measured in turn against one reference")
    ap.add_argument("--model", default="j1-135m", help="local: the judge j1 serve loads")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="local: j1 serve --max_new_tokens "
                    "(default the judge's manifest)")
    ap.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                    help="local: j1 serve --dtype (it runs on CUDA when torch sees a GPU)")
    ap.add_argument("--cycle", action="store_true",
                    help="start the requests over when a phase has sent them all (a fast server)")
    ap.add_argument("--check-max", type=int, default=64,
                    help="local: most concurrent answers re-judged alone to check them (within --seconds)")
    ap.add_argument("--seconds", type=float, default=60.0, help="length of each phase")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the local judge's server")
    ap.add_argument("--max-batch", type=int, default=32, help="j1 serve --max_batch")
    ap.add_argument("--batch-wait-ms", type=float, default=10.0, help="j1 serve --batch_wait_ms")
    ap.add_argument("--batch-rows", type=int, default=32, help="local: j1 serve --batch_rows (rows a forward)")
    ap.add_argument("--latency", type=float, default=0.2, help="upstream: seconds the scripted server takes")
    ap.add_argument("--concurrency", type=int, default=64, help="upstream: j1 serve --concurrency")
    ap.add_argument("--goal-local", type=float, default=5.0)
    ap.add_argument("--goal-upstream", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()

    from j1.runs.runinfo import git_revision, versions

    reqs = requests_in_order(load_rows(), args.seed)
    started = time.time()
    targets = ("local", "upstream") if args.target == "both" else (args.target,)
    results = {t: bench_target(args, t, reqs) for t in targets}
    print(table(results))
    if args.json:
        out = {"config": vars(args) | {"json": str(args.json)}, "argv": sys.argv, "versions": versions(),
               "git": git_revision(ROOT), "cpus": os.cpu_count(),
               "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
               "seconds": round(time.time() - started, 1), "results": results}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.json.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1) + "\n")
        tmp.replace(args.json)


if __name__ == "__main__":
    main()
