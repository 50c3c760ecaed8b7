"""The MCP server over streamable HTTP at /mcp, behind the same bearer keys as the HTTP API."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from uuid import UUID

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections, connection
from django.views.decorators.debug import sensitive_variables
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings

from memoryhub.api.auth import authenticate_key
from memoryhub.body_limit import limit_body
from memoryhub.errors import MemoryHubError, NotAuthenticatedError, RateLimitedError
from memoryhub.models import ApiKey
from memoryhub.services.agents import key_owner
from memoryhub.services.request_slots import acquire_request_slot, release_request_slot
from memoryhub.unavailable import (
    DATABASE_UNAVAILABLE_ERRORS,
    UNAVAILABLE_CODE,
    UNAVAILABLE_DETAIL,
    log_unavailable,
)

from .server import Caller, build_server

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
# Loose on purpose: Django's and Starlette's handlers spell the same ASGI types differently.
ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]

logger = logging.getLogger(__name__)
MCP_PATH = "/mcp"
API_KEY_SCOPE_KEY = "memoryhub.api_key"


@sensitive_variables("authorization", "token")
def _authenticate(authorization: str, client_ip: str | None) -> tuple[ApiKey, UUID | None]:
    """The caller's key and the concurrent-request slot it takes (release it when done)."""
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise NotAuthenticatedError("missing API key: send Authorization: Bearer <key>")
    close_old_connections()
    try:
        api_key = authenticate_key(token, client_ip=client_ip)
        return api_key, acquire_request_slot(key_owner(api_key))
    finally:
        # Runs on asgiref's executor thread, outside Django's request cycle: don't keep it open.
        connection.close()


def _release(slot_id: UUID | None) -> None:
    try:
        release_request_slot(slot_id)
    except DATABASE_UNAVAILABLE_ERRORS:
        logger.warning("could not release a request slot", exc_info=True)
    finally:
        connection.close()


def _caller_from_request(ctx: Context) -> Caller:
    request = ctx.request_context.request
    api_key = getattr(request, "scope", {}).get(API_KEY_SCOPE_KEY)
    if not isinstance(api_key, ApiKey):
        raise NotAuthenticatedError("missing, unknown or revoked API key")
    client = getattr(request, "client", None)
    return Caller(api_key=api_key, client_ip=client.host if client else None)


async def _send_error(send: Send, exc: MemoryHubError) -> None:
    extra: list[tuple[bytes, bytes]] = []
    if isinstance(exc, NotAuthenticatedError):
        extra.append((b"www-authenticate", b"Bearer"))
    if isinstance(exc, RateLimitedError):
        extra.append((b"retry-after", str(exc.retry_after_seconds).encode()))
    await _send_json(send, exc.status, {"detail": str(exc), "code": exc.code}, extra)


async def _send_unavailable(send: Send) -> None:
    retry_after = str(settings.MEMORYHUB_RETRY_AFTER_SECONDS).encode()
    body = {"detail": UNAVAILABLE_DETAIL, "code": UNAVAILABLE_CODE}
    await _send_json(send, 503, body, [(b"retry-after", retry_after)])


async def _send_json(
    send: Send, status: int, payload: dict[str, str], extra: list[tuple[bytes, bytes]]
) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*headers, *extra]})
    await send({"type": "http.response.body", "body": body})


def _transport_security() -> TransportSecuritySettings:
    # The same Host rules as Django's ALLOWED_HOSTS: this app is served outside Django.
    hosts = [host for host in settings.ALLOWED_HOSTS if host]
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    origins = list(settings.CSRF_TRUSTED_ORIGINS)
    for host in hosts:
        origins += [f"http://{host}", f"https://{host}", f"http://{host}:*", f"https://{host}:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *(f"{host}:*" for host in hosts)],
        allowed_origins=origins,
    )


def build_mcp_app() -> ASGIApp:
    """The streamable-HTTP MCP app; every request must carry a valid bearer key."""
    # One server answers every key here: no resource subscriptions (see build_server).
    server = build_server(_caller_from_request, has_subscriptions=False)
    # Stateless JSON responses: any worker can answer any request, no session affinity needed.
    inner: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=_transport_security(),
    )

    async def mcp_app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await inner(scope, receive, send)  # Lifespan: starts the session manager.
            return
        headers = dict(scope.get("headers") or [])
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        client = scope.get("client")
        try:
            api_key, slot_id = await sync_to_async(_authenticate)(
                authorization, client[0] if client else None
            )
        except MemoryHubError as exc:
            await _send_error(send, exc)
            return
        except DATABASE_UNAVAILABLE_ERRORS as exc:
            log_unavailable(exc)
            await _send_unavailable(send)
            return
        try:
            await inner({**scope, API_KEY_SCOPE_KEY: api_key}, receive, send)
        finally:
            # Also when the client disconnects and the request is cancelled.
            await asyncio.shield(sync_to_async(_release)(slot_id))

    return mcp_app


def with_mcp(django_app: ASGIApp, mcp_app: ASGIApp) -> ASGIApp:
    """Route /mcp (and /mcp/) and lifespan events to the MCP app, everything else to Django.

    Neither ever reads a request body over the limit: both get 413 JSON as it arrives.
    """

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await mcp_app(scope, receive, send)
        elif scope["type"] == "http" and scope["path"].rstrip("/") == MCP_PATH:
            path_scope = {**scope, "path": MCP_PATH, "raw_path": MCP_PATH.encode()}
            await mcp_app(path_scope, receive, send)
        else:
            await django_app(scope, receive, send)

    return limit_body(application)
