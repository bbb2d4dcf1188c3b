"""A real OpenAI-compatible chat-completions server on loopback, answering from a script.

Used by the LLM tests instead of a model: it speaks the same HTTP protocol the `openai` client
speaks to vLLM or OpenAI (POST /v1/chat/completions, JSON with choices[0].message.content and
usage), so the client's request building, error mapping, retries and timeouts all run for real.
Like a real server it stops a reply at the request's max_tokens (counted in words here) and then
says finish_reason "length".

    with LoopbackLLMServer(["reply 1", "reply 2"]) as server:    # or a function of the request
        server.fail_next(429, times=2)                           # then: 429, 429, "reply 1"
        config = LLMConfig(base_url=server.base_url, model="m")
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Script = Sequence[str] | Callable[[dict[str, Any]], str]

REFERENCE = """import torch
import torch.nn as nn

N = 1024


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return [2.0]
"""

KERNEL = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scaled_relu(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        _scaled_relu[(triton.cdiv(n, 1024),)](x, out, n, self.scale, BLOCK=1024)
        return out
"""


def fenced(source: str, note: str = "Here is the kernel.") -> str:
    """A reply in the format the prompts ask for."""
    return f"{note}\n\n```python\n{source.strip()}\n```\n"


def _words(text: str) -> int:
    return len(text.split())


def _cut(text: str, limit: int | None) -> tuple[str, str]:
    """The reply as a server with a completion limit of `limit` tokens (words here) sends it."""
    if limit is None or _words(text) <= limit:
        return text, "stop"
    ends = [m.end() for m in re.finditer(r"\S+", text)]
    return text[: ends[limit - 1]] if limit > 0 else "", "length"


class LoopbackLLMServer:
    """Threaded HTTP server on 127.0.0.1 (port chosen by the OS) with scripted faults."""

    def __init__(self, script: Script = (), model: str = "loopback-model", delay_s: float = 0.0) -> None:
        self.script = script
        self.model = model
        self.delay_s = delay_s  # every answer waits this long (to overlap requests)
        self.requests: list[dict[str, Any]] = []  # every request body received, faults included
        self.headers: list[dict[str, str]] = []
        self.max_in_flight = 0
        self._faults: deque[tuple[str, float, float | None]] = deque()
        self._next = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------- faults
    def fail_next(self, status: int, times: int = 1, retry_after: float | None = None) -> None:
        """The next `times` requests get HTTP `status` (429, 500, 503, 400...)."""
        with self._lock:
            self._faults.extend([("status", float(status), retry_after)] * times)

    def hang_next(self, seconds: float, times: int = 1) -> None:
        """The next `times` requests get no answer for `seconds`, then the connection closes."""
        with self._lock:
            self._faults.extend([("hang", seconds, None)] * times)

    def drop_next(self, times: int = 1) -> None:
        """The next `times` connections close without any response."""
        with self._lock:
            self._faults.extend([("drop", 0.0, None)] * times)

    # ---------------------------------------------------------- lifecycle
    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LoopbackLLMServer:
        handler = _make_handler(self)
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        server.block_on_close = False  # a hanging handler must not block stop()
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.02,), name="llm-loopback", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close the port: later requests are refused at connect time."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ answers
    def _reply_for(self, body: dict[str, Any]) -> str | None:
        if callable(self.script):
            return self.script(body)
        with self._lock:
            if self._next >= len(self.script):
                return None
            reply = self.script[self._next]
            self._next += 1
            return reply

    def _take_fault(self) -> tuple[str, float, float | None] | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


def _make_handler(owner: LoopbackLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        active = False  # this request counts as in flight (`owner.max_in_flight`)

        def _done(self) -> None:
            """The request leaves the in-flight count before its answer is written: once written, the client
            may free its slot and send the next request before this thread runs again (seen under load)."""
            if self.active:
                self.active = False
                owner._leave()

        def _json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self._done()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            with owner._lock:
                owner.requests.append(body)
                owner.headers.append({k.lower(): v for k, v in self.headers.items()})
            owner._enter()
            self.active = True
            try:
                self._answer(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout): nothing to answer
            finally:
                self._done()

        def _answer(self, body: dict[str, Any]) -> None:
            fault = owner._take_fault()
            if fault is not None:
                kind, value, retry_after = fault
                if kind == "status":
                    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
                    message = {"error": {"message": f"scripted HTTP {int(value)}", "type": "scripted"}}
                    self._json(int(value), message, headers)
                    return
                if kind == "hang":
                    time.sleep(value)
                self.close_connection = True  # "hang" and "drop" end without a response
                return
            if owner.delay_s:
                time.sleep(owner.delay_s)
            reply = owner._reply_for(body)
            if reply is None:
                self._json(500, {"error": {"message": "loopback script exhausted", "type": "scripted"}})
                return
            prompt_tokens = sum(_words(str(m.get("content", ""))) for m in body.get("messages", []))
            limit = body.get("max_tokens", body.get("max_completion_tokens"))
            reply, finish_reason = _cut(reply, int(limit) if limit is not None else None)
            completion_tokens = _words(reply)
            self._json(
                200,
                {
                    "id": f"chatcmpl-{len(owner.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", owner.model),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply},
                            "finish_reason": finish_reason,
                        }
                    ],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "total_tokens": prompt_tokens + completion_tokens,
                    },
                },
            )

    return Handler
