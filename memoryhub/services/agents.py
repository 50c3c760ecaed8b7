"""Register agents and manage bearer keys (agent keys and personal access keys)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field

from django.db import connections, router, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop
from django.views.decorators.debug import sensitive_variables

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import InvalidInputError, NotFoundError
from memoryhub.model_rows import RowShape
from memoryhub.models import Agent, ApiKey, Mode, User, Workspace

KEY_PREFIX = "mh_"
# An active key's row with its agent's and its mode's (see `find_active_key`).
_KEY = RowShape(ApiKey, "k")
_KEY_AGENT = RowShape(Agent, "a")
_KEY_MODE = RowShape(Mode, "md")
_ACTIVE_KEY_SQL = (
    f"SELECT {_KEY.sql}, {_KEY_AGENT.sql}, {_KEY_MODE.sql} "  # noqa: S608  # Our own names.
    f"FROM {ApiKey._meta.db_table} k "
    f'LEFT JOIN {Agent._meta.db_table} a ON a."id" = k."agent_id" '
    f'LEFT JOIN {Mode._meta.db_table} md ON md."id" = k."mode_id" '
    'WHERE k."key_hash" = %s AND k."revoked_at" IS NULL LIMIT 1'
)


@sensitive_variables("raw_key")
def hash_key(raw_key: str) -> str:
    """SHA-256 of a bearer key: keys are long random strings, so a plain hash is enough."""
    return hashlib.sha256(raw_key.encode()).hexdigest()


@dataclass(frozen=True)
class IssuedKey:
    """A freshly issued key: `raw_key` is shown once and never stored."""

    api_key: ApiKey
    raw_key: str = field(repr=False)  # Out of tracebacks and logs.


@sensitive_variables("raw_key")
def _issue(
    *,
    agent: Agent | None,
    user: User | None,
    mode: Mode | None,
    name: str,
    is_review_key: bool = False,
) -> IssuedKey:
    raw_key = KEY_PREFIX + secrets.token_urlsafe(32)
    api_key = ApiKey.objects.create(
        agent=agent,
        user=user,
        mode=mode,
        name=name[:100],
        is_review_key=is_review_key,
        prefix=raw_key[:12],
        key_hash=hash_key(raw_key),
    )
    return IssuedKey(api_key=api_key, raw_key=raw_key)


def get_or_create_workspace(*, slug: str, name: str = "") -> Workspace:
    workspace, _ = Workspace.objects.get_or_create(slug=slug, defaults={"name": name or slug})
    return workspace


def create_agent(*, workspace: Workspace, name: str, persona: str = "") -> tuple[Agent, IssuedKey]:
    """Register an agent and issue its first key."""
    name = name.strip()
    if not name:
        raise InvalidInputError(gettext_noop("an agent needs a name"))
    with transaction.atomic():
        agent, _ = Agent.objects.get_or_create(
            workspace=workspace, name=name, defaults={"persona": persona}
        )
        issued = _issue(agent=agent, user=None, mode=None, name=f"{name} key")
    return agent, issued


def rotate_agent_key(*, agent: Agent) -> IssuedKey:
    """Revoke every active key of the agent and issue a new one."""
    with transaction.atomic():
        ApiKey.objects.filter(agent=agent, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        return _issue(agent=agent, user=None, mode=None, name=f"{agent.name} key")


def create_personal_key(*, user: User, name: str, mode: Mode | None = None) -> IssuedKey:
    """Issue a personal access key that can only ever act for this user (and mode, if given)."""
    if mode is not None and mode.user_id != user.pk:
        raise InvalidInputError(gettext_noop("the mode must belong to the key's user"))
    return _issue(agent=None, user=user, mode=mode, name=name or "personal key")


def create_review_key(*, reviewer: User, name: str, actor: Actor) -> IssuedKey:
    """Issue a reviewer key: it acts as this reviewer on the review routes only (audited).

    The caller has checked the reviewer role and re-authenticated them (review/views.py); the
    API checks the role again on every request, so a key outlives no demotion.
    """
    with transaction.atomic():
        issued = _issue(
            agent=None, user=reviewer, mode=None, name=name or "reviewer key", is_review_key=True
        )
        record_access(
            actor=actor,
            subject_user_id=reviewer.pk,
            action=AuditAction.REVIEW_KEY_CREATE,
            object_ids=[issued.api_key.pk],
        )
    return issued


def revoke_review_key(*, reviewer: User, key_id: int, actor: Actor) -> ApiKey:
    """Revoke one of the reviewer's reviewer keys (audited); another's key is NotFound."""
    with transaction.atomic():
        api_key = (
            ApiKey.objects.select_for_update()
            .filter(pk=key_id, user=reviewer, is_review_key=True)
            .first()
        )
        if api_key is None:
            raise NotFoundError(gettext_noop("no such reviewer key"))
        revoke_key(api_key=api_key)
        record_access(
            actor=actor,
            subject_user_id=reviewer.pk,
            action=AuditAction.REVIEW_KEY_REVOKE,
            object_ids=[api_key.pk],
        )
    return api_key


def revoke_key(*, api_key: ApiKey) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key


def revoke_personal_keys(*, user: User, actor: Actor) -> list[ApiKey]:
    """Revoke every active personal key of the user, audited; return the keys revoked.

    A new password calls it (accounts/adapter.py): whoever knew the old one may have minted
    keys with it, and those must not outlive it.
    """
    with transaction.atomic():
        active = list(ApiKey.objects.select_for_update().filter(user=user, revoked_at__isnull=True))
        if not active:
            return []
        now = timezone.now()
        ApiKey.objects.filter(pk__in=[key.pk for key in active]).update(revoked_at=now)
        for key in active:
            key.revoked_at = now
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.API_KEY_REVOKE_ALL,
            object_ids=[key.pk for key in active],
        )
    return active


def key_owner(api_key: ApiKey) -> str:
    """Whose key this is: "agent:<id>" for an agent's keys, "user:<id>" for personal keys.

    What a key owner is allowed (requests per minute, idempotency keys) is shared by all of
    its keys: issuing another key never buys more.
    """
    if api_key.agent_id is not None:
        return f"agent:{api_key.agent_id}"
    return f"user:{api_key.user_id}"


@sensitive_variables("raw_key")
def find_active_key(raw_key: str) -> ApiKey | None:
    """The active key matching a presented bearer key, or None.

    Security invariant: read from the database on every request, never cached, so that a
    revoked key (or a disabled agent, which the caller checks) is refused on the next request.
    """
    if not raw_key.startswith(KEY_PREFIX):
        return None
    # Every request runs this, so it is one hand-written statement: the ORM's compile of it
    # (select_related, first()) was the largest Python cost of authentication (issue 34;
    # tests/api/test_auth.py holds that ORM query as the oracle). The agent and mode come
    # along (the scope needs them), but not their workspaces, wide rows that only a few
    # endpoints read, nor a personal key's user: an agent key has none. A personal key loads
    # its user when the scope asks for it.
    using = router.db_for_read(ApiKey)
    with connections[using].cursor() as cursor:
        cursor.execute(_ACTIVE_KEY_SQL, [hash_key(raw_key)])
        row = cursor.fetchone()
    if row is None:
        return None
    api_key = _KEY.build(row, start=0, using=using)
    if api_key is None:  # Impossible: the key's id is never NULL.
        return None
    agent = _KEY_AGENT.build(row, start=_KEY.width, using=using)
    mode = _KEY_MODE.build(row, start=_KEY.width + _KEY_AGENT.width, using=using)
    ApiKey.agent.field.set_cached_value(api_key, agent)
    ApiKey.mode.field.set_cached_value(api_key, mode)
    return api_key
