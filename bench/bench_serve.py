"""Load on ``j1 serve``: N concurrent clients on loopback for a fixed time, beside one request at a time.

    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_serve.py --target local --clients 32 --seconds 240 \\
        --threads 1 --json results/serve/bench_local.json
    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_serve.py --target upstream --clients 32 --seconds 30 \\
        --json results/serve/bench_upstream.json

Targets (each a real ``j1 serve`` subprocess on a free loopback port):
  local     the shipped judge j1-135m on this machine's CPU (``--threads`` torch threads), requests
            batched into the local generator (``--max-batch`` items, ``--batch-rows`` rows a forward);
  upstream  ``j1 serve --base-url`` on a scripted OpenAI-compatible server (a subprocess of this
            script, stdlib HTTP) that answers a well-formed pav verdict after ``--latency`` seconds.

Each target runs two phases of ``--seconds`` each, side by side in one run: ``sequential`` (one
client, one request at a time) and ``concurrent`` (``--clients`` clients, each sending its next
request as soon as the last is answered). Requests are POST /v1/judge with real GSM8K pairs (the
shipped ``gsm8k_mismatch.jsonl``: a question, its gold solution, another question's solution, A/B
order drawn from ``--seed``), all distinct, so no batch holds two copies of one prompt. A phase stops
starting requests at ``--seconds`` (or when the 920 distinct requests are used up) and waits for
those in flight; judgments/s = answered / time to the last answer.

Counted per phase: dropped (any answer but 200, or a transport error) and wrong answers. Wrong means
a verdict (overall or of either order) other than the reference: for ``upstream`` the scripted
judge's known verdict (it prefers the gold solution), for ``local`` what the same server gives for
that request alone, one at a time (the sequential phase, then an untimed pass over the requests the
sequential phase did not reach). The server's ``/health`` batching totals give the batches actually
formed and the time requests waited in the queue.
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
                 "--max_queue", str(max(256, 2 * args.clients)), "--batch_wait_ms", str(args.batch_wait_ms)]
        if target == "local":
            serve += ["--model", "j1-135m", "--batch_rows", str(args.batch_rows)]
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


async def run_phase(url: str, reqs: list[dict], clients: int, seconds: float) -> dict:
    """``clients`` clients send ``reqs`` in order (the next unsent one each) for ``seconds``; one
    record per request: index, latency, HTTP status (None: transport error), verdicts."""
    httpx = http()
    records: list[dict] = []
    next_index = 0
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    async with httpx.AsyncClient(timeout=3600, limits=limits) as client:
        t0 = time.monotonic()
        deadline = t0 + seconds

        async def one_client() -> None:
            nonlocal next_index
            while time.monotonic() < deadline and next_index < len(reqs):
                i = next_index
                next_index += 1
                body = {k: reqs[i][k] for k in ("prompt", "response_a", "response_b")}
                sent = time.monotonic()
                try:
                    resp = await client.post(url + "/v1/judge", json=body)
                    status, answer = resp.status_code, (resp.json() if resp.status_code == 200 else resp.text[:200])
                except httpx.TransportError as exc:
                    status, answer = None, f"{type(exc).__name__}: {exc}"
                done = time.monotonic()
                records.append({"index": i, "latency_s": done - sent, "done_s": done - t0, "status": status,
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
    return [{"index": r["index"], "got": r["verdicts"], "reference": reference[r["index"]]}
            for r in recs if r["status"] == 200 and tuple(r["verdicts"]) != tuple(reference[r["index"]])]


def bench_target(args: argparse.Namespace, target: str, reqs: list[dict]) -> dict:
    served = Served(args, target)
    try:
        # Warm-up: the first judgment pays one-off costs (kernels, connection pools); it is not timed.
        warm = {k: reqs[-1][k] for k in ("prompt", "response_a", "response_b")}
        assert http().post(served.url + "/v1/judge", json=warm, timeout=3600).status_code == 200
        phases, raw = {}, {}
        for name, clients in (("sequential", 1), ("concurrent", args.clients)):
            print(f"[{target}] {name}: {clients} client(s) for {args.seconds:g}s", file=sys.stderr, flush=True)
            before, cpu0, load0 = served.health(), cpu_seconds(served.server.pid), os.getloadavg()[0]
            raw[name] = asyncio.run(run_phase(served.url, reqs, clients, args.seconds))
            after, cpu1 = served.health(), cpu_seconds(served.server.pid)
            phases[name] = summarise(raw[name], clients, batching(before, after), cpu1 - cpu0,
                                     [round(load0, 2), round(os.getloadavg()[0], 2)])
        # The references: the scripted judge's known verdict; for the local judge, what it gives for
        # each request alone (the sequential phase's answers, then one at a time for the rest).
        if target == "upstream":
            reference = {i: (r["gold"], r["gold"], r["gold"]) for i, r in enumerate(reqs)}
            unchecked = []
        else:
            reference = {r["index"]: tuple(r["verdicts"]) for r in raw["sequential"]["records"] if r["status"] == 200}
            needed = sorted({r["index"] for r in raw["concurrent"]["records"]
                             if r["status"] == 200 and r["index"] not in reference})
            print(f"[{target}] checking {len(needed)} concurrent answers one at a time", file=sys.stderr, flush=True)
            unchecked = []
            for i in needed:
                sub = asyncio.run(_one_alone(served.url, reqs, i))
                if sub["status"] == 200:
                    reference[i] = tuple(sub["verdicts"])
                else:
                    unchecked.append(i)
        for name in phases:
            recs = [r for r in raw[name]["records"] if r["index"] in reference]
            phases[name]["wrong"] = len(wrong_answers(recs, reference))
            phases[name]["wrong_examples"] = wrong_answers(recs, reference)[:5]
            phases[name]["unchecked"] = sum(1 for r in raw[name]["records"]
                                            if r["status"] == 200 and r["index"] not in reference)
        seq, conc = phases["sequential"]["judgments_per_s"], phases["concurrent"]["judgments_per_s"]
        return {"server_command": served.command, **phases,
                "speedup": round(conc / seq, 2) if seq else None,
                "goal": args.goal_local if target == "local" else args.goal_upstream,
                "verdict_mix": _mix(raw["concurrent"]["records"])}
    finally:
        served.close()


async def _one_alone(url: str, reqs: list[dict], i: int) -> dict:
    httpx = http()
    body = {k: reqs[i][k] for k in ("prompt", "response_a", "response_b")}
    async with httpx.AsyncClient(timeout=3600) as client:
        resp = await client.post(url + "/v1/judge", json=body)
    return {"status": resp.status_code, "verdicts": verdicts(resp.json()) if resp.status_code == 200 else None}


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
        for name in ("sequential", "concurrent"):
            p = res[name]
            speed = f"**{res['speedup']}x** ({res['goal']}x)" if name == "concurrent" else ""
            lines.append(f"| {target} | {name} | {p['clients']} | {p['answered']} | {p['dropped']} | {p['wrong']} | "
                         f"{p['p50_s']} | {p['p99_s']} | {p['judgments_per_s']} | {p['server']['mean_batch_items']} | "
                         f"{p['server']['mean_queue_wait_s']} | {speed} |")
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "upstream-server":
        ap = argparse.ArgumentParser()
        ap.add_argument("upstream-server")
        ap.add_argument("--latency", type=float, required=True)
        serve_upstream(ap.parse_args().latency)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", choices=("local", "upstream", "both"), default="both")
    ap.add_argument("--clients", type=int, default=32)
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

    from j1.runinfo import git_revision, versions

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
