"""The MCP server over streamable HTTP at /mcp, behind the same bearer keys as the HTTP API."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
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
from memoryhub.services.agents import KEY_PREFIX, key_owner
from memoryhub.services.request_slots import acquire_request_slot, release_request_slot
from memoryhub.unavailable import (
    DATABASE_UNAVAILABLE_ERRORS,
    UNAVAILABLE_CODE,
    UNAVAILABLE_DETAIL,
    log_unavailable,
)

from .bus import PostgresSubscriptionBus
from .listening import ListenerScopes
from .oauth import MCP_PATH, METADATA_PATH, authenticate_access_token, resource_url
from .server import Caller, build_server

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
# Loose on purpose: Django's and Starlette's handlers spell the same ASGI types differently.
ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]

logger = logging.getLogger(__name__)
API_KEY_SCOPE_KEY = "memoryhub.api_key"


@dataclass(frozen=True)
class Authenticated:
    """The caller of one MCP request, and the concurrent-request slot it takes."""

    api_key: ApiKey
    modes: frozenset[str] | None
    slot_id: UUID | None


@sensitive_variables("authorization", "token")
def _authenticate(authorization: str, client_ip: str | None, origin: str) -> Authenticated:
    """An agent key, a personal key, or an OAuth access token for this endpoint (release the
    slot when done)."""
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise NotAuthenticatedError(
            "missing credentials: send Authorization: Bearer <key or token>"
        )
    close_old_connections()
    try:
        modes: frozenset[str] | None = None
        if token.startswith(KEY_PREFIX) or not settings.MEMORYHUB_MCP_OAUTH:
            api_key = authenticate_key(token, client_ip=client_ip)
        else:
            access = authenticate_access_token(
                token, resource=resource_url(origin), client_ip=client_ip
            )
            api_key, modes = access.api_key, access.modes
        return Authenticated(api_key, modes, acquire_request_slot(key_owner(api_key)))
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
    return _caller_of(ctx.request_context.request)


def _caller_of(request: Any) -> Caller:
    """The caller of an HTTP request that passed `mcp_app` (set on its ASGI scope there)."""
    authenticated = getattr(request, "scope", {}).get(API_KEY_SCOPE_KEY)
    if not isinstance(authenticated, Authenticated):
        raise NotAuthenticatedError("missing, unknown or revoked API key")
    client = getattr(request, "client", None)
    return Caller(
        api_key=authenticated.api_key,
        client_ip=client.host if client else None,
        modes=authenticated.modes,
    )


async def _send_error(send: Send, exc: MemoryHubError, origin: str) -> None:
    extra: list[tuple[bytes, bytes]] = []
    if isinstance(exc, NotAuthenticatedError):
        challenge = "Bearer"
        if settings.MEMORYHUB_MCP_OAUTH:
            # MCP authorization: where an OAuth client finds the authorization server (RFC 9728).
            challenge = f'Bearer resource_metadata="{origin}{METADATA_PATH}{MCP_PATH}"'
        extra.append((b"www-authenticate", challenge.encode()))
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


def _origin(scope: Scope, headers: dict[bytes, bytes]) -> str:
    # The Host was checked against ALLOWED_HOSTS by the transport security below (DNS
    # rebinding protection) before any tool runs; a token bound to another host fails anyway.
    host = headers.get(b"host", b"").decode("latin-1") or "localhost"
    return f"{scope.get('scheme', 'http')}://{host}"


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
    # One server answers every key here: a listener names only resources its key may read,
    # spelled by UUID, so it never hears of another key's users (mcp/listening.py).
    bus = PostgresSubscriptionBus()
    server = build_server(_caller_from_request, subscriptions=bus)
    server.middleware.append(ListenerScopes(_caller_of, bus.listening))
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
        origin = _origin(scope, headers)
        client = scope.get("client")
        try:
            authenticated = await sync_to_async(_authenticate)(
                authorization, client[0] if client else None, origin
            )
        except MemoryHubError as exc:
            await _send_error(send, exc, origin)
            return
        except DATABASE_UNAVAILABLE_ERRORS as exc:
            log_unavailable(exc)
            await _send_unavailable(send)
            return
        try:
            await inner({**scope, API_KEY_SCOPE_KEY: authenticated}, receive, send)
        finally:
            # Also when the client disconnects and the request is cancelled.
            await asyncio.shield(sync_to_async(_release)(authenticated.slot_id))

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
