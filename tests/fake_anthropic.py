"""A fake Anthropic Messages API on loopback: records each request, replays scripted replies.

Replies use the real Messages API JSON shapes, so the real `anthropic` SDK parses them.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOL_NAME = "record_memories"
_ids = itertools.count(1)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    # Seconds to wait before answering, to trip the client's timeout.
    delay: float = 0.0


def tool_use_reply(
    tool_input: dict[str, Any],
    *,
    input_tokens: int = 1200,
    output_tokens: int = 300,
    cache_read_tokens: int = 0,
    cache_creation_tokens: int = 0,
    stop_reason: str = "tool_use",
    model: str = "claude-haiku-4-5",
) -> Reply:
    """A successful Messages API response whose content is one record_memories tool call."""
    number = next(_ids)
    return Reply(
        body={
            "id": f"msg_fake{number:04d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [
                {
                    "type": "tool_use",
                    "id": f"toolu_fake{number:04d}",
                    "name": TOOL_NAME,
                    "input": tool_input,
                }
            ],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cache_read_input_tokens": cache_read_tokens,
                "cache_creation_input_tokens": cache_creation_tokens,
            },
        }
    )


def text_reply(text: str) -> Reply:
    """A successful response with only text: the model ignored the forced tool."""
    number = next(_ids)
    return Reply(
        body={
            "id": f"msg_fake{number:04d}",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def error_reply(status: int, error_type: str, *, delay: float = 0.0) -> Reply:
    """An API error; `retry-after-ms: 1` makes the SDK retry after 1 ms instead of backing off."""
    return Reply(
        status=status,
        body={
            "type": "error",
            "error": {"type": error_type, "message": error_type.replace("_", " ")},
            "request_id": "req_fake",
        },
        headers={"retry-after-ms": "1"},
        delay=delay,
    )


class FakeAnthropic:
    """The fake server; use as a context manager, point the SDK's base_url at `url`."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        # Set on stop, so a reply that is still delaying returns at once.
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # A short poll interval makes shutdown quick between tests.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def add_replies(self, *replies: Reply) -> None:
        """Queue replies, served in order, one per request."""
        with self._lock:
            self._replies.extend(replies)

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._replies:
                return self._replies.popleft()
        # 400 is not retried, so a test that sends too many requests fails at once.
        return error_reply(400, "no_scripted_reply")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {key.lower(): value for key, value in self.headers.items()}
                reply = fake._next_reply(RecordedRequest(self.path, headers, body))
                if reply.delay:
                    fake._stopping.wait(reply.delay)
                payload = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.send_header("request-id", "req_fake")
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left; that is what the test wanted

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        return Handler
