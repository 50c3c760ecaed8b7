"""Refuse request bodies over DATA_UPLOAD_MAX_MEMORY_SIZE as they arrive, before any app reads them."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]

TOO_LARGE_CODE = "content_too_large"
# A body over the limit is still read (and dropped) up to this many times the limit, so that
# the client gets to read the 413; anything bigger is cut off.
DRAIN_FACTOR = 2


# The routes that take an import file (API and dashboard): their bodies may be far larger.
IMPORT_PATHS = frozenset({"/api/v1/imports", "/dashboard/imports/"})


def body_limit() -> int:
    """The largest request body accepted, in bytes (Django's own limit, one setting for all)."""
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0)


def import_limit() -> int:
    """The largest import file accepted (MEMORYHUB_MAX_IMPORT_BYTES), plus room for the form."""
    return int(settings.MEMORYHUB_MAX_IMPORT_BYTES) + 64 * 1024


async def send_too_large(send: Send, limit: int) -> None:
    """Answer 413 with the API's error shape."""
    body = json.dumps(
        {"detail": f"the request body is over {limit} bytes", "code": TOO_LARGE_CODE}
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers") or []:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _count_within(receive: Receive, limit: int) -> Receive:
    """The body passed on as it arrives (an import file is not held in memory), counted: past
    `limit` the app hears that the client went away, and reads no more."""
    size = 0

    async def counted() -> Message:
        nonlocal size
        message = await receive()
        if message["type"] == "http.request":
            size += len(message.get("body", b""))
            if size > limit:
                return {"type": "http.disconnect"}
        return message

    return counted


async def _read_within(receive: Receive, limit: int) -> list[Message] | None:
    """The request's body messages, or None when they add up to more than `limit`."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages  # The client went away: the app sees the disconnect itself.
        size += len(message.get("body", b""))
        if size > limit:
            await _discard_rest(receive, size, limit * DRAIN_FACTOR)
            return None
        if not message.get("more_body", False):
            return messages


async def _discard_rest(receive: Receive, size: int, cap: int) -> None:
    # A server that answers while the client is still sending closes the connection on unread
    # bytes, and the client may lose the answer in the reset: read a moderate excess to its end.
    while size <= cap:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return
        size += len(message.get("body", b""))


def limit_body(app: ASGIApp) -> ASGIApp:
    """Wrap an ASGI app so that no body over the limit reaches it: 413 JSON instead.

    Django checks Content-Length, but a chunked body (no Content-Length) is spooled whole to a
    temporary file before Django looks at it; here bytes are counted as they arrive.
    """

    async def bounded(scope: Scope, receive: Receive, send: Send) -> None:
        limit = body_limit()
        if scope["type"] != "http" or limit <= 0:
            await app(scope, receive, send)
            return
        declared = _declared_length(scope)
        if scope.get("path") in IMPORT_PATHS:
            # Only these routes take a large body, and they stream it to a sealed file.
            big = import_limit()
            if declared is not None and declared > big:
                await send_too_large(send, big)
                return
            await app(scope, _count_within(receive, big), send)
            return
        if declared is not None and declared > limit * DRAIN_FACTOR:
            await send_too_large(send, limit)
            return
        messages = await _read_within(receive, limit)
        if messages is None:
            await send_too_large(send, limit)
            return

        async def replay() -> Message:
            # The body as it arrived, then the live channel (a disconnect, for a streaming reply).
            return messages.pop(0) if messages else await receive()

        await app(scope, replay, send)

    return bounded
