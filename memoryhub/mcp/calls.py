"""What every MCP tool, resource and prompt shares: the caller, its scope, and error mapping."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import anyio.from_thread
from django.db import close_old_connections, connection
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import BaseModel, ValidationError

from memoryhub.api.auth import OWN_USER, Scope, scope_for_key
from memoryhub.errors import MemoryHubError, PermissionDeniedError
from memoryhub.models import ApiKey, Channel

P = ParamSpec("P")
R = TypeVar("R")

# The resources of one user and mode (mcp/reading.py); `user` as the client spells it.
RESOURCE_URI = "memoryhub://users/{user}/modes/{mode}/{name}"
PROFILE, OPEN_ITEMS, SESSIONS = "profile", "open-items", "sessions"


def resource_uris(scope: Scope, names: Iterable[str]) -> list[str]:
    """Every spelling of these resources' URIs for the scope: by UUID, external id, or `me`."""
    spellings = [str(scope.user.pk)]
    if scope.user.external_id:
        spellings.append(scope.user.external_id)
    if scope.agent is None:
        spellings.append(OWN_USER)
    return [
        RESOURCE_URI.format(user=user, mode=scope.mode.slug, name=name)
        for name in names
        for user in spellings
    ]


@dataclass(frozen=True)
class Caller:
    """The authenticated key behind one tool call, and where the call came from."""

    api_key: ApiKey
    client_ip: str | None = None
    # The modes an OAuth grant allows (mcp/oauth.py); None for a bearer key (its own rules).
    modes: frozenset[str] | None = None


# Returns the caller of the current tool call; raises NotAuthenticatedError or RateLimitedError.
CallerSource = Callable[[Context], Caller]


def check_mode(caller: Caller, mode: str) -> None:
    """Raise PermissionDeniedError unless the caller may use the mode."""
    if caller.modes is not None and mode not in caller.modes:
        # Security invariant: an OAuth grant reaches only the modes the person consented to.
        raise PermissionDeniedError(f"this sign-in was not granted the {mode!r} mode")


@dataclass(frozen=True)
class Callers:
    """Resolves who calls, and the (user, mode) scope they may reach, for one MCP request."""

    source: CallerSource

    def caller(self, ctx: Context) -> Caller:
        return self.source(ctx)

    def scope(self, ctx: Context, user: str, mode: str) -> Scope:
        caller = self.source(ctx)
        check_mode(caller, mode)
        return scope_for_key(caller.api_key, user, mode, channel=Channel.MCP, ip=caller.client_ip)

    def changed(self, ctx: Context, scope: Scope, *names: str) -> None:
        """Tell the server's listeners (`subscriptions/listen`) that these resources changed.

        Called from a sync tool body, on the worker thread anyio started it on. Every spelling
        of each URI is announced; a listener on the shared HTTP server holds only the UUID one,
        checked against its key (mcp/listening.py).
        """
        for uri in resource_uris(scope, names):
            anyio.from_thread.run(ctx.notify_resource_updated, uri)


def _django_call(fn: Callable[P, R], to_error: Callable[[str, str], Exception]) -> Callable[P, R]:
    """Run a sync body like a Django request: fresh DB connection, domain errors mapped."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        except MemoryHubError as exc:
            # Details of a server-side failure are for the logs, never for the client.
            message = "internal error" if exc.status >= 500 else str(exc)
            raise to_error(exc.code, message) from None
        except ValidationError as exc:
            # Location and message only, like the API's 422 (api/api.py).
            errors = exc.errors()
            where = ".".join(str(part) for part in errors[0]["loc"]) if errors else ""
            message = str(errors[0]["msg"]) if errors else "invalid input"
            raise to_error("invalid_input", f"{where}: {message}" if where else message) from None
        finally:
            # Tools run on anyio's pooled threads, where Django's per-request clean-up never
            # happens: close the thread's connection so none lingers between calls.
            connection.close()

    return wrapper


def tool_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """A tool body: domain errors come back as a tool error `"<code>: <detail>"`."""
    return _django_call(fn, lambda code, message: ToolError(f"{code}: {message}"))


def read_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """A resource or prompt body: domain errors come back as a protocol error with the code."""
    return _django_call(
        fn, lambda code, message: MCPError(INVALID_PARAMS, f"{code}: {message}", {"code": code})
    )


def dump(schema: BaseModel) -> dict[str, Any]:
    return schema.model_dump(mode="json")
