"""Spec of ``j1 serve``: the judge (as ``j1 judge`` names it) and how the server takes requests."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from j1.backends.spec import BackendArgs, SamplingArgs
from j1.formats import get_format
from j1.formats.spec import FORMAT_NAMES
from j1.judging.spec import JudgeArgs
from j1.serve.protocol import SERVED_ARITIES, served_format

SERVED_FORMATS = [name for name in FORMAT_NAMES if get_format(name).arity in SERVED_ARITIES]


@dataclass
class ServeSpec(JudgeArgs, BackendArgs, SamplingArgs):
    """``j1 serve``: a judge behind HTTP. POST /get_reward is OpenRLHF's remote reward model
    (--remote_rm_url http://HOST:PORT/get_reward), POST /v1/judge answers as j1 judge --json; requests
    are batched together for the judge."""

    # Only the formats a request can be judged in (the four-way pick is no pair or single response).
    format: str | None = field(
        default=None, metadata={"help": f"Judge format: {', '.join(SERVED_FORMATS)}. Default: the judge's manifest "
                                "(judge.json), else pav."})
    # Here the key clients of this server send; the judge's upstream key is --upstream_api_key_env.
    api_key_env: str | None = field(
        default=None, metadata={"help": "Environment variable holding the key clients must send as "
                                "'Authorization: Bearer KEY' (401 otherwise). Unset: no key is asked."})
    upstream_api_key_env: str = field(
        default="OPENAI_API_KEY", metadata={"help": "With --base-url: environment variable holding the judge "
                                            "server's API key."})
    host: str = field(
        default="127.0.0.1", metadata={"help": "Address to listen on; 0.0.0.0 exposes the judge to the network."})
    port: int = field(default=8000, metadata={"help": "Port to listen on."})
    max_batch: int | None = field(
        default=None, metadata={"help": "Most judge items (queries or pairs) gathered from requests into one judge "
                                "call; a larger request runs alone. Default: 32, or 128 for a local judge on a GPU."})
    max_queue: int = field(
        default=256, metadata={"help": "Most requests waiting for the judge; more are answered 503 (retry later)."})
    batch_wait_ms: float = field(
        default=10.0, metadata={"help": "How long a batch waits for more requests after its first, in ms."})
    max_body_bytes: int = field(
        default=16 * 2**20, metadata={"help": "Largest request body in bytes; larger ones are answered 413."})
    request_timeout: float = field(
        default=300.0, metadata={"help": "Seconds a request may take; later it is answered 504 and its judgment "
                                 "dropped."})
    shutdown_timeout: float = field(
        default=10.0, metadata={"help": "On SIGTERM/SIGINT: seconds the requests in flight may still be answered; "
                                "then the rest get 503 and the process exits, even mid-batch."})
    error_reward: float = field(
        default=0.0, metadata={"help": "/get_reward: the reward of an item that cannot be judged (e.g. too long "
                               "for the context); the batch's other items are judged as usual."})
    group_opponents: int | None = field(
        default=None, metadata={"help": "/get_reward without labels (a pairwise judge): each response meets this "
                                "many random others of its prompt's group (default: every pair); its reward is "
                                "its win rate."})

    # On by default as in any FastAPI server (client generators read /openapi.json); off for a public deployment.
    docs: bool = field(
        default=True, metadata={"help": "Serve the API's schema at /openapi.json and its pages at /docs "
                                "(--no_docs: neither)."})

    def __post_init__(self) -> None:
        self._setup_judge()
        served_format(self.format)
        if not self.host:
            raise ValueError("--host is empty: give an address such as 127.0.0.1")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"--port {self.port}: must be in 0..65535")
        for name in ("max_batch", "max_queue", "max_body_bytes"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"--{name} {getattr(self, name)}: must be >= 1")
        if self.batch_wait_ms < 0:
            raise ValueError(f"--batch_wait_ms {self.batch_wait_ms}: must be >= 0 (0 = no waiting)")
        for name in ("request_timeout", "shutdown_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"--{name} {getattr(self, name)}: must be > 0 seconds")
        if not math.isfinite(self.error_reward):
            raise ValueError(f"--error_reward {self.error_reward}: must be a finite number")
        if self.group_opponents is not None and self.group_opponents < 1:
            raise ValueError(f"--group_opponents {self.group_opponents}: must be >= 1 (or leave it out for every pair)")
