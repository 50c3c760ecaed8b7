"""Bearer-key authentication and (user, mode) scope resolution for the API and the MCP server."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.db import connections, router
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_noop
from django.views.decorators.debug import sensitive_variables
from ninja.security import HttpBearer

from memoryhub.actors import Actor
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder, embedder_for_workspace
from memoryhub.errors import (
    AgentBlockedError,
    InvalidInputError,
    NotAuthenticatedError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
)
from memoryhub.http import client_ip
from memoryhub.model_rows import RowShape
from memoryhub.models import ActorType, Agent, AgentBlock, ApiKey, Channel, Mode, User, Workspace
from memoryhub.queries.access_log import REFUSED_ACTION
from memoryhub.services.agents import find_active_key, key_owner
from memoryhub.services.ratelimit import (
    RateLimitState,
    check_rate_limit,
    count_invalid_key,
    invalid_key_budget,
)
from memoryhub.services.request_slots import acquire_request_slot
from memoryhub.services.users import ensure_mode

DEFAULT_MODE = "personal"
# What a personal key may write for `user` to mean its own owner (so may leave it out).
OWN_USER = "me"
# Where an API request keeps the id of its concurrent-request slot until it ends.
REQUEST_SLOT_KEY = "memoryhub.request_slot"
# Where an API request keeps the budget it was counted against, for the X-RateLimit-* headers.
RATE_LIMIT_KEY = "memoryhub.rate_limit"
# last_used_at is informative only: one write per key per minute is plenty.
LAST_USED_RESOLUTION = timedelta(minutes=1)
# An agent request's scope, by hand-written SQL (see `_find_agent_scope`).
_SCOPE_MODE = RowShape(Mode, "md")
_SCOPE_USER = RowShape(User, "u")
_SCOPE_WORKSPACE = RowShape(Workspace, "w")
_USER_BY_EXTERNAL_ID_SQL = (
    f'SELECT u."id" FROM {User._meta.db_table} u '  # noqa: S608  # Our own names.
    'WHERE u."workspace_id" = %s AND u."external_id" = %s LIMIT 1'
)
# The mode, its user and their workspace, and whether the user blocked the agent: every
# table read by the user's id (the shard key, docs/scaling.md), the user also by the agent's
# workspace (security invariant: no other workspace's user is reachable).
_AGENT_SCOPE_SQL = (
    f"SELECT {_SCOPE_MODE.sql}, {_SCOPE_USER.sql}, {_SCOPE_WORKSPACE.sql}, "  # noqa: S608
    f"EXISTS (SELECT 1 FROM {AgentBlock._meta.db_table} b "
    'WHERE b."user_id" = %s AND b."agent_id" = %s) '
    f"FROM {Mode._meta.db_table} md "
    f'JOIN {User._meta.db_table} u ON u."id" = md."user_id" '
    f'JOIN {Workspace._meta.db_table} w ON w."id" = u."workspace_id" '
    'WHERE md."user_id" = %s AND u."workspace_id" = %s AND md."slug" = %s LIMIT 1'
)


@dataclass(frozen=True)
class Scope:
    """Who is asking (actor, agent, key) about whose memory (user) in which mode."""

    user: User
    mode: Mode
    actor: Actor
    agent: Agent | None
    api_key: ApiKey

    @property
    def embedder(self) -> Embedder:
        """The embedder of the user's workspace: what writes and searches for them embed with."""
        return embedder_for_workspace(self.user.workspace)


def _ignore_budget(state: RateLimitState | None) -> None:
    pass


@sensitive_variables("raw_key")
def authenticate_key(
    raw_key: str,
    *,
    client_ip: str | None = None,
    on_budget: Callable[[RateLimitState | None], None] = _ignore_budget,
) -> ApiKey:
    """Return the active key for a presented bearer key, counting it against the rate limit.

    `on_budget` hears of the budget the request was counted against (the key owner's, or the
    IP's for an invalid key), also when the request is refused. Raises NotAuthenticatedError
    (missing, unknown, revoked key or disabled agent) and RateLimitedError (past the key
    owner's budget, or too many invalid keys from this IP).
    """
    api_key = find_active_key(raw_key.strip()) if raw_key else None
    try:
        if api_key is None or (api_key.agent is not None and not api_key.agent.is_active):
            on_budget(count_invalid_key(client_ip))
            raise NotAuthenticatedError(gettext_noop("missing, unknown or revoked API key"))
        # One budget per owner: all of an agent's keys, or all of a user's personal keys.
        on_budget(check_rate_limit(key_owner(api_key)))
    except RateLimitedError as error:
        on_budget(error.rate_limit if isinstance(error.rate_limit, RateLimitState) else None)
        raise
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    return api_key


class ApiKeyAuth(HttpBearer):
    """`Authorization: Bearer <key>`; request.auth becomes the ApiKey."""

    def __call__(self, request: HttpRequest) -> ApiKey | None:
        if not request.headers.get(self.header):
            raise NotAuthenticatedError(
                gettext_noop("missing API key: send Authorization: Bearer <key>")
            )
        result = super().__call__(request)
        if result is None:
            raise NotAuthenticatedError(
                gettext_noop("malformed Authorization header: expected Bearer <key>")
            )
        return result  # type: ignore[no-any-return]  # authenticate() below returns ApiKey.

    @sensitive_variables("token")
    def authenticate(self, request: HttpRequest, token: str) -> ApiKey:
        api_key = authenticate_key(
            token,
            client_ip=client_ip(request),
            on_budget=lambda state: note_budget(request, state),
        )
        self.check_key_kind(api_key)
        # Given back by ReleaseRequestSlotMiddleware (api/request_slots.py) however the
        # request ends.
        request.META[REQUEST_SLOT_KEY] = acquire_request_slot(key_owner(api_key))
        return api_key

    def check_key_kind(self, api_key: ApiKey) -> None:
        """Refuse a reviewer key: it acts as a reviewer, on the review routes only.

        Security invariant: a reviewer reads scrubbed candidates, never anyone's memory, and
        their reviewer key must not become a personal key to their own memory either.
        """
        if api_key.is_review_key:
            raise PermissionDeniedError(
                gettext_noop("a reviewer key works on the /review routes only")
            )


def note_budget(request: HttpRequest, state: RateLimitState | None) -> None:
    """Keep the request's budget for the X-RateLimit-* headers (api/rate_limit_headers.py)."""
    request.META[RATE_LIMIT_KEY] = state


def budget_of(request: HttpRequest) -> RateLimitState | None:
    """The budget the request was counted against, or (no key counted) its IP's, or None."""
    if RATE_LIMIT_KEY in request.META:
        state = request.META[RATE_LIMIT_KEY]
        return state if isinstance(state, RateLimitState) else None
    return invalid_key_budget(client_ip(request))


def actor_for_key(api_key: ApiKey, *, channel: Channel, ip: str | None) -> Actor:
    """The audit actor of a key: its agent, or the personal key itself.

    A personal key acts as an agent too (software working for the user), so the user's
    memory pause applies to it like to any agent.
    """
    if api_key.agent is not None:
        return Actor(
            ActorType.AGENT, str(api_key.agent.pk), channel, label=api_key.agent.name, client_ip=ip
        )
    return Actor(
        ActorType.AGENT,
        f"personal-key:{api_key.pk}",
        channel,
        label=f"personal key {api_key.prefix}",
        client_ip=ip,
    )


def _check_text(value: str, field: str) -> str:
    # PostgreSQL refuses NUL bytes and lone surrogates: turn them into a 422, not a 500.
    if "\x00" in value:
        raise InvalidInputError(
            gettext_noop("{field} must not contain NUL characters"), field=field
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            gettext_noop("{field} is not valid UTF-8 text"), field=field
        ) from None
    return value.strip()


def _find_user(workspace_id: int, user_ref: str) -> User:
    # Security invariant: only users of the key's own workspace are reachable.
    users = User.objects.filter(workspace_id=workspace_id).select_related("workspace")
    # The reference is the hub user's UUID or the workspace's external id for them, never
    # both: a UUID names that user first, so an external id shaped like another user's UUID
    # cannot stand in for them.
    user = None
    with contextlib.suppress(ValueError):
        user = users.filter(pk=uuid.UUID(user_ref)).first()
    if user is None:
        user = users.filter(external_id=user_ref).first()
    if user is None:
        raise NotFoundError(gettext_noop("user not found"))
    return user


def _find_agent_scope(
    agent: Agent, user_ref: str, mode_slug: str
) -> tuple[User, Mode, bool] | None:
    """The user, their existing mode and whether they blocked the agent (every agent request
    asks: three statements before, one or two now); None sends the caller to the long way.

    It answers only where `_find_user` would name the same user: by UUID when the reference
    is one, else by external id (looked up first, so that the mode and the block are read by
    their shard key, `user_id`: docs/scaling.md). A UUID that names nobody may still be an
    external id, and a mode not made yet is made on demand: both go the long way.
    """
    # Hand-written SQL: every agent request runs these, and the ORM's compile of them (a
    # select_related over three tables and an Exists) cost more Python than the rest of the
    # request's authentication (issue 34; tests/api/test_auth.py holds the ORM queries as the
    # oracle). Nothing is cached: a block, a pause or a new mode counts on the next request.
    using = router.db_for_read(Mode)
    with connections[using].cursor() as cursor:
        try:
            user_id = uuid.UUID(user_ref)
        except ValueError:
            cursor.execute(_USER_BY_EXTERNAL_ID_SQL, [agent.workspace_id, user_ref])
            found = cursor.fetchone()
            if found is None:
                return None
            user_id = found[0]
        cursor.execute(
            _AGENT_SCOPE_SQL, [user_id, agent.pk, user_id, agent.workspace_id, mode_slug]
        )
        row = cursor.fetchone()
    if row is None:
        return None
    mode = _SCOPE_MODE.build(row, start=0, using=using)
    user = _SCOPE_USER.build(row, start=_SCOPE_MODE.width, using=using)
    workspace = _SCOPE_WORKSPACE.build(
        row, start=_SCOPE_MODE.width + _SCOPE_USER.width, using=using
    )
    if mode is None or user is None or workspace is None:  # Impossible: inner joins.
        return None
    User.workspace.field.set_cached_value(user, workspace)
    Mode.user.field.set_cached_value(mode, user)
    return user, mode, bool(row[-1])


def scope_for_key(
    api_key: ApiKey,
    user_ref: str | None,
    mode_slug: str = DEFAULT_MODE,
    *,
    channel: Channel = Channel.API,
    ip: str | None = None,
) -> Scope:
    """Resolve the user and mode a key may reach.

    Raises NotFoundError for users outside the key's reach (another workspace, another user of
    a personal key, another mode of a mode-bound key, an unknown mode) and AgentBlockedError
    when the user blocked the agent.
    """
    if api_key.is_review_key:  # The MCP server comes here without ApiKeyAuth.
        raise PermissionDeniedError(gettext_noop("a reviewer key works on the /review routes only"))
    user_ref = _check_text(user_ref or "", "user")
    mode_slug = _check_text(mode_slug or DEFAULT_MODE, "mode")
    if not user_ref and api_key.agent is not None:
        raise InvalidInputError(
            gettext_noop("user is required: an agent key names the user it acts for")
        )
    mode: Mode | None = None
    if api_key.agent is not None:
        found = _find_agent_scope(api_key.agent, user_ref, mode_slug)
        if found is not None:
            user, mode, is_blocked = found
        else:  # The mode is not made yet, or the reference needs the second look.
            user = _find_user(api_key.agent.workspace_id, user_ref)
            is_blocked = AgentBlock.objects.filter(user=user, agent=api_key.agent).exists()
        if is_blocked:
            # The user sees refused attempts in "Who accessed my memory" (dashboard access log).
            record_access(
                actor=actor_for_key(api_key, channel=channel, ip=ip),
                subject_user_id=user.pk,
                action=REFUSED_ACTION,
                mode=mode_slug
                if mode is not None or user.modes.filter(slug=mode_slug).exists()
                else "",
            )
            raise AgentBlockedError(gettext_noop("this user has blocked this agent"))
    else:
        owner = api_key.user
        if owner is None:  # Impossible by a DB constraint: a key has an agent or a user.
            raise NotAuthenticatedError(gettext_noop("this key belongs to nobody"))
        # A personal key acts for its owner unless told otherwise: no `user`, or `me`.
        is_owner = user_ref in ("", OWN_USER) or user_ref == str(owner.pk)
        user = owner if is_owner else _find_user(owner.workspace_id, user_ref)
        # A personal key only ever acts for its own user; anyone else simply does not exist.
        if user.pk != owner.pk:
            raise NotFoundError(gettext_noop("user not found"))
        if api_key.mode is not None and api_key.mode.slug != mode_slug:
            raise NotFoundError(
                gettext_noop("mode {slug!r} does not exist for this user"), slug=mode_slug
            )
    if mode is None:
        mode = ensure_mode(user=user, slug=mode_slug)
    return Scope(
        user=user,
        mode=mode,
        actor=actor_for_key(api_key, channel=channel, ip=ip),
        agent=api_key.agent,
        api_key=api_key,
    )


def request_key(request: HttpRequest) -> ApiKey:
    """The key that authenticated an API request."""
    api_key = request.auth  # type: ignore[attr-defined]  # Set by ApiKeyAuth on every route.
    if not isinstance(api_key, ApiKey):
        raise NotAuthenticatedError(gettext_noop("missing, unknown or revoked API key"))
    return api_key


def resolve_scope(
    request: HttpRequest, user_ref: str | None, mode_slug: str = DEFAULT_MODE
) -> Scope:
    """The scope of an authenticated API request (see `scope_for_key`)."""
    return scope_for_key(
        request_key(request), user_ref, mode_slug, channel=Channel.API, ip=client_ip(request)
    )
