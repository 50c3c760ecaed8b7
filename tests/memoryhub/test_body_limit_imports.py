"""Only the import routes take a body over the request limit, streamed, up to the import limit."""

from __future__ import annotations

import asyncio
import json

from memoryhub.body_limit import limit_body


def _run(path: str, pieces: list[bytes], *, declared: int | None = None):
    """Send the body in pieces through limit_body; return (what the app read, the status sent)."""
    read: list[dict] = []
    sent: list[dict] = []

    async def app(scope, receive, send):
        while True:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    queue = [
        {"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1}
        for i, piece in enumerate(pieces)
    ]

    async def receive():
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    headers = [] if declared is None else [(b"content-length", str(declared).encode())]
    scope = {"type": "http", "path": path, "method": "POST", "headers": headers}
    asyncio.run(limit_body(app)(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return read, status, sent


def test_an_import_body_over_the_request_limit_reaches_the_app_piece_by_piece(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    settings.MEMORYHUB_MAX_IMPORT_BYTES = 100_000
    pieces = [b"x" * 1000 for _ in range(5)]
    read, status, _ = _run("/api/v1/imports", pieces, declared=5000)
    assert status == 202
    assert [m["body"] for m in read] == pieces


def test_the_same_body_elsewhere_is_a_413(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    read, status, sent = _run("/api/v1/memories/batch", [b"x" * 1000 for _ in range(5)])
    assert status == 413 and read == []
    assert json.loads(sent[-1]["body"])["code"] == "content_too_large"


def test_an_import_declared_over_the_import_limit_is_a_413_at_once(settings):
    settings.MEMORYHUB_MAX_IMPORT_BYTES = 2000
    read, status, _ = _run("/api/v1/imports", [b"x" * 1000], declared=10_000_000)
    assert status == 413 and read == []


def test_a_chunked_import_over_the_import_limit_is_cut_off(settings):
    settings.MEMORYHUB_MAX_IMPORT_BYTES = 0
    pieces = [b"x" * 40_000 for _ in range(5)]
    read, _, _ = _run("/dashboard/imports/", pieces)
    # 64 KiB of room for the form's other fields, then the app hears the client went away.
    assert [m["type"] for m in read] == ["http.request", "http.disconnect"]
