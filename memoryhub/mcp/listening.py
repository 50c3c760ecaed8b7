"""Resource subscriptions (`subscriptions/listen`) on the shared streamable-HTTP server.

One server answers every key there, and one bus carries every tool call's resource-updated
events to every listen stream. So that a listener hears only of users its key reaches, each
listen request passes through `ListenerScopes` first: every resource it names must be one its
caller may read (else the request fails, as reading it would), and is rewritten to the user's
UUID spelling, which no other user shares (an external id is unique within one workspace
only, and `me` is every personal key's own user). Tool calls announce every spelling of what
they change (calls.resource_uris), so the UUID one reaches the listener, from whichever web
worker answered the tool call (mcp/bus.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from uuid import UUID

from asgiref.sync import sync_to_async
from django.db import close_old_connections, connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, SubscriptionsListenRequestParams

from memoryhub.api.auth import scope_for_key
from memoryhub.errors import MemoryHubError
from memoryhub.models import Channel

from .calls import OPEN_ITEMS, PROFILE, RESOURCE_URI, SESSIONS, Caller, check_mode

LISTEN = "subscriptions/listen"
USERS_PREFIX = RESOURCE_URI.split("{user}", 1)[0]  # memoryhub://users/
RESOURCE_NAMES = frozenset({PROFILE, OPEN_ITEMS, SESSIONS})


def _parts(uri: str) -> tuple[str, str, str]:
    """(user, mode, name) of one of our resource URIs; MCPError for anything else."""
    user, _, rest = uri.removeprefix(USERS_PREFIX).partition("/modes/")
    mode, _, name = rest.rpartition("/")
    if not uri.startswith(USERS_PREFIX) or not user or not mode or name not in RESOURCE_NAMES:
        raise MCPError(INVALID_PARAMS, f"not a MemoryHub resource: {uri}")
    return user, mode, name


def is_canonical(uri: str) -> bool:
    """Whether a resource URI names its user by UUID (the spelling listeners here hold)."""
    user = uri.removeprefix(USERS_PREFIX).partition("/")[0]
    try:
        UUID(user)
    except ValueError:
        return False
    return uri.startswith(USERS_PREFIX)


def canonical_uris(caller: Caller, uris: Sequence[str]) -> list[str]:
    """The URIs spelled by the user's UUID, if the caller may read every one of them."""
    close_old_connections()
    try:
        canonical = []
        for uri in uris:
            user, mode, name = _parts(uri)
            try:
                check_mode(caller, mode)
                scope = scope_for_key(
                    caller.api_key, user, mode, channel=Channel.MCP, ip=caller.client_ip
                )
            except MemoryHubError as exc:
                raise MCPError(INVALID_PARAMS, f"{exc.code}: {exc}") from None
            canonical.append(RESOURCE_URI.format(user=scope.user.pk, mode=mode, name=name))
        return canonical
    finally:
        # Runs on asgiref's executor thread, outside Django's request cycle: don't keep it open.
        connection.close()


@dataclasses.dataclass(frozen=True)
class ListenerScopes:
    """Server middleware: a listen request reaches the SDK's handler with its resource URIs
    checked against its caller and spelled by UUID (see the module docstring), once this
    worker receives the events of every worker (`listening`, mcp/bus.py)."""

    caller_of: Callable[[Any], Caller]
    listening: Callable[[], Awaitable[None]]

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method != LISTEN:
            return await call_next(ctx)
        params = SubscriptionsListenRequestParams.model_validate(ctx.params or {})
        requested = params.notifications.resource_subscriptions or []
        canonical = await sync_to_async(canonical_uris)(self.caller_of(ctx.request), requested)
        notifications = params.notifications.model_copy(
            update={"resource_subscriptions": canonical or None}
        )
        rewritten = params.model_copy(update={"notifications": notifications})
        wire = rewritten.model_dump(by_alias=True, exclude_none=True, mode="json")
        await self.listening()
        return await call_next(dataclasses.replace(ctx, params=wire))
