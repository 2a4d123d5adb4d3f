"""A scripted OpenAI-compatible server on loopback, for tests and benchmarks.

It speaks the real wire protocol over real HTTP (``GET /v1/models``, ``POST /v1/chat/completions``
and ``POST /v1/completions`` with ``n``), so the client code under test is exercised exactly as against
vLLM; only the text of the answers is scripted. ``reply`` maps (messages, choice index, request body)
to the answer text (for ``/completions``, messages is ``[{"role": "prompt", "content": PROMPT}]``);
``fail_first`` makes the first k requests fail with an HTTP status, to test retries; ``latency``
sleeps per request, to measure concurrency. The engine edges real servers differ on are switches:
``honour_n`` (False: one choice, as llama.cpp's Python server), ``refuse_n`` (a 400 for n > 1),
``retry_after`` (sent with scripted failures), ``context`` (a 400 in vLLM's words for a prompt whose
characters plus max_tokens exceed it), ``stop_reason`` (vLLM's field naming the stop matched) and
logprobs (each answer's characters as tokens, the top alternatives scripted by ``top_logprobs``).
Stop strings are honoured as engines do: the text ends before the first one, which is not returned.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def echo_reply(messages: list[dict], index: int, body: dict) -> str:
    return f"<think>scripted {index}</think> <answer>[[A]]</answer>"


class FakeOpenAIServer:
    def __init__(
        self,
        reply: Callable[[list[dict], int, dict], str] = echo_reply,
        *,
        model: str = "scripted-judge",
        fail_first: int = 0,
        fail_status: int = 503,
        fail_when: Callable[[dict], bool] | None = None,
        latency: float = 0.0,
        honour_n: bool = True,
        refuse_n: bool = False,
        retry_after: str | None = None,
        context: int | None = None,
        stop_reason: bool = False,
        top_logprobs: Callable[[str, int], dict[str, float]] | None = None,
        max_model_len: int | None = None,
    ):
        self.reply = reply
        self.model = model
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.fail_when = fail_when  # a request body for which this is true gets fail_status too
        self.latency = latency
        self.honour_n = honour_n
        self.refuse_n = refuse_n
        self.retry_after = retry_after
        self.context = context
        self.stop_reason = stop_reason
        self.top_logprobs = top_logprobs
        self.max_model_len = max_model_len
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0  # most requests being served at once: shows client concurrency
        self.connections = 0  # TCP connections opened: shows whether the client keeps them alive
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do (every answer sends Content-Length)

            def setup(self):
                super().setup()
                with server._lock:
                    server.connections += 1

            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                try:
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client cancelled this request (a stream left early): nothing to answer

            def do_GET(self):
                if self.path.rstrip("/") == "/v1/models":
                    entry = {"id": server.model, "object": "model", "owned_by": "test"}
                    if server.max_model_len is not None:
                        entry["max_model_len"] = server.max_model_len
                    self._send(200, {"object": "list", "data": [entry]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/v1/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                body["_endpoint"] = "chat" if "/chat/" in self.path else "completions"
                with server._lock:
                    server.requests.append(body)
                    count = len(server.requests)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    self._answer(body, count)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _answer(self, body: dict, count: int) -> None:
                if server.latency:
                    time.sleep(server.latency)
                if count <= server.fail_first or (server.fail_when is not None and server.fail_when(body)):
                    headers = {"Retry-After": server.retry_after} if server.retry_after else None
                    self._send(server.fail_status, {"error": {"message": "scripted failure"}}, headers)
                    return
                chat = body["_endpoint"] != "completions"
                messages = body["messages"] if chat else [{"role": "prompt", "content": body["prompt"]}]
                n = int(body.get("n") or 1)
                if server.refuse_n and n > 1:
                    self._send(400, {"error": {"message": "n must be 1 on this engine", "code": 400}})
                    return
                if server.context is not None:
                    size = sum(len(m["content"]) for m in messages) + int(body.get("max_tokens") or 0)
                    if size > server.context:
                        self._send(400, {"error": {"message": f"This model's maximum context length is "
                                                   f"{server.context} tokens. However, you requested {size} tokens.",
                                                   "type": "BadRequestError"}})
                        return
                n = n if server.honour_n else 1
                stops = body.get("stop") or []
                stops = [stops] if isinstance(stops, str) else stops
                choices = []
                for k in range(n):
                    text = server.reply(messages, k, body)
                    finish, matched = "stop", None
                    cuts = [(text.index(s), s) for s in stops if s in text]
                    if cuts:
                        at, matched = min(cuts)
                        text = text[:at]
                    choice = {"index": k, "finish_reason": finish}
                    if server.stop_reason:
                        choice["stop_reason"] = matched
                    if chat:
                        choice["message"] = {"role": "assistant", "content": text}
                    else:
                        choice["text"] = text
                    if body.get("logprobs"):
                        choice["logprobs"] = self._logprobs(text, chat, body)
                    choices.append(choice)
                self._send(200, {
                    "id": f"cmpl-{count}", "object": "chat.completion" if chat else "text_completion",
                    "created": int(time.time()), "model": body.get("model", server.model), "choices": choices,
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5 * n, "total_tokens": 10 + 5 * n},
                })

            def _logprobs(self, text: str, chat: bool, body: dict) -> dict:
                """Each character a token at logprob -0.1; its alternatives from ``top_logprobs``."""
                tops = [server.top_logprobs(text, i) if server.top_logprobs else {ch: -0.1}
                        for i, ch in enumerate(text)]
                if chat:
                    return {"content": [{"token": ch, "logprob": -0.1, "bytes": None,
                                         "top_logprobs": [{"token": t, "logprob": v, "bytes": None}
                                                          for t, v in top.items()]}
                                        for ch, top in zip(text, tops, strict=True)]}
                return {"tokens": list(text), "token_logprobs": [-0.1] * len(text), "top_logprobs": tops,
                        "text_offset": list(range(len(text)))}

        return Handler
