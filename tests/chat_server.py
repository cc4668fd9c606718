"""A real local HTTP server that speaks the chat-completions protocol from a scripted queue.

    with ChatServer() as server:
        server.push(http_error(500), completion("```cuda\n...\n```"))
        model = OpenAIModel("test-model", server.base_url, "dummy-key", max_retries=2)
        ...
        server.requests[-1].body["messages"]   # what the model was sent

Each POST /v1/chat/completions takes the next queued response (a Response, or a callable that
builds one from the request body); GET /v1/models lists `server.models`. Every request is recorded.
A Response can also be what a non-API URL sends (an HTML page, an event stream: set
`content_type`) or a stall: `trickle_s` sends the whole answer, status line first, one byte at a
time with that pause between bytes.
When the queue is empty the server answers HTTP 418 "script exhausted", which the client does not
retry, so a test that asks for more than it planned fails with a clear message.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Response:
    status: int = 200
    body: Any = None  # a dict is sent as JSON, a str or bytes as is
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # wait before answering (client timeouts)
    drop: bool = False  # close the connection without answering (a connection error)
    content_type: str = "application/json"
    trickle_s: float = 0.0  # > 0: one byte of the answer per this many seconds


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: Any

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages", []))

    def text(self, role: str = "user") -> str:
        """All message contents of one role, joined: what the model was told."""
        return "\n".join(str(m.get("content", "")) for m in self.messages if m.get("role") == role)


Responder = Response | Callable[[Any], Response]


def completion(text: str, *, usage: tuple[int, int] | None = (120, 40), model: str | None = None,
               reasoning_content: str | None = None, reasoning: str | None = None,
               finish_reason: str = "stop") -> Response:
    """A normal chat.completion; reasoning fields go beside `content` as some servers send them."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    if reasoning is not None:
        message["reasoning"] = reasoning
    body: dict[str, Any] = {
        "id": "chatcmpl-kgen-test", "object": "chat.completion", "created": int(time.time()),
        "model": model, "choices": [{"index": 0, "message": message, "logprobs": None,
                                     "finish_reason": finish_reason}]}
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                         "total_tokens": usage[0] + usage[1]}
    return Response(200, body)


def http_error(status: int, message: str | None = None, *, type: str = "server_error",
               code: str | None = None, retry_after_ms: int | None = 1) -> Response:
    """An error shaped like OpenAI's: {"error": {"message", "type", "param", "code"}}."""
    body = {"error": {"message": message or f"scripted HTTP {status}", "type": type,
                      "param": None, "code": code}}
    # A tiny Retry-After keeps the client's retries fast in tests (it honours retry-after-ms).
    headers = {"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else {}
    return Response(status, body, headers)


def auth_error(message: str = "Incorrect API key provided.") -> Response:
    return http_error(401, message, type="invalid_request_error", code="invalid_api_key")


def model_not_found(model: str = "no-such-model") -> Response:
    return http_error(404, f"The model `{model}` does not exist or you do not have access to it.",
                      type="invalid_request_error", code="model_not_found")


class ChatServer:
    """The server, bound to 127.0.0.1 on a free port (or `port`), serving from a background
    thread."""

    def __init__(self, models: tuple[str, ...] = ("test-model",), port: int = 0) -> None:
        self.models = list(models)
        self.requests: list[Recorded] = []
        self._queue: deque[Responder] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def completions(self) -> list[Recorded]:
        """The recorded chat-completion requests, in order."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def pending(self) -> int:
        return len(self._queue)

    def push(self, *responses: Responder) -> ChatServer:
        with self._lock:
            self._queue.extend(responses)
        return self

    def next_response(self, body: Any) -> Response:
        with self._lock:
            item = self._queue.popleft() if self._queue else None
        if item is None:
            return http_error(418, "chat_server: script exhausted (no response queued)",
                              type="test_error", retry_after_ms=None)
        return item(body) if callable(item) else item

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def _handler_for(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            server.record(Recorded("GET", self.path, _lower(self.headers), None))
            if self.path.rstrip("/").endswith("/models"):
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "kgen-test"}
                        for m in server.models]
                self._send(Response(200, {"object": "list", "data": data}))
            else:
                self._send(http_error(404, f"no route {self.path}", retry_after_ms=None))

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"null")
            except json.JSONDecodeError:
                body = raw.decode("utf-8", "replace")
            server.record(Recorded("POST", self.path, _lower(self.headers), body))
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(http_error(404, f"no route {self.path}", retry_after_ms=None))
                return
            response = server.next_response(body)
            if response.delay_s:
                time.sleep(response.delay_s)
            if response.trickle_s:
                self._trickle(response)
                return
            if response.drop:
                self.close_connection = True
                return
            if isinstance(response.body, dict) and response.body.get("model", "") is None:
                model = body.get("model") if isinstance(body, dict) else None
                response = Response(response.status, {**response.body, "model": model},
                                    response.headers)
            self._send(response)

        def _trickle(self, response: Response) -> None:
            data = _payload(response)
            head = (f"HTTP/1.1 {response.status} OK\r\ncontent-type: {response.content_type}\r\n"
                    f"content-length: {len(data)}\r\n\r\n").encode()
            self.close_connection = True
            try:
                for i in range(len(head + data)):
                    self.wfile.write((head + data)[i:i + 1])
                    self.wfile.flush()
                    time.sleep(response.trickle_s)
            except (BrokenPipeError, ConnectionResetError, OSError):
                pass  # the client gave up, as it should

        def _send(self, response: Response) -> None:
            data = _payload(response)
            try:
                self.send_response(response.status)
                self.send_header("content-type", response.content_type)
                self.send_header("content-length", str(len(data)))
                for key, value in response.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

    return Handler


def _payload(response: Response) -> bytes:
    """The body as sent: a str as is (surrogates kept as JSON escapes by the caller), else JSON."""
    if isinstance(response.body, bytes):
        return response.body
    text = response.body if isinstance(response.body, str) else json.dumps(response.body)
    return text.encode("utf-8", errors="surrogatepass")


@pytest.fixture
def chat_server():
    """A running ChatServer; stopped after the test."""
    with ChatServer() as server:
        yield server


def _lower(headers: Any) -> dict[str, str]:
    """Header names in lower case (HTTP names are case-insensitive; clients differ)."""
    return {k.lower(): v for k, v in headers.items()}
