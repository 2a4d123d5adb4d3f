"""A scripted OpenAI-compatible chat-completions server on loopback, for tests and benchmarks.

It speaks the real wire protocol over real HTTP (``GET /v1/models``, ``POST /v1/chat/completions``
with ``n``), so the client code under test is exercised exactly as against vLLM; only the text of
the answers is scripted. ``reply`` maps (messages, choice index, request body) to the answer text;
``fail_first`` makes the first k requests fail with an HTTP status, to test retries; ``latency``
sleeps per request, to measure concurrency.
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
    ):
        self.reply = reply
        self.model = model
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.fail_when = fail_when  # a request body for which this is true gets fail_status too
        self.latency = latency
        self.honour_n = honour_n
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

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                try:
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client cancelled this request (a stream left early): nothing to answer

            def do_GET(self):
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model", "owned_by": "test"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
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
                    self._send(server.fail_status, {"error": {"message": "scripted failure"}})
                    return
                n = int(body.get("n") or 1) if server.honour_n else 1
                choices = []
                for k in range(n):
                    text = server.reply(body["messages"], k, body)
                    choices.append({"index": k, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}})
                self._send(200, {
                    "id": f"chatcmpl-{count}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", server.model), "choices": choices,
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5 * n, "total_tokens": 10 + 5 * n},
                })

        return Handler
