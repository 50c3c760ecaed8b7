"""The user's own settings: pause, memory off per mode, retention, agents that may reach them,
the language."""

from __future__ import annotations

from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import InvalidInputError, NotFoundError
from memoryhub.models import Agent, AgentBlock, AgentGrant, AgentPermission, Mode, User

# Ten years: beyond this a retention limit is "keep", and a typo of extra zeros is refused.
MAX_RETENTION_DAYS = 3650


def set_memory_paused(*, user: User, is_paused: bool, actor: Actor) -> User:
    """Pause or resume memory: while paused, agents and the system cannot write anything new."""
    with transaction.atomic():
        user.is_memory_paused = is_paused
        user.save(update_fields=["is_memory_paused"])
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.MEMORY_PAUSE if is_paused else AuditAction.MEMORY_RESUME,
        )
    return user


def set_mode_memory_off(*, user: User, mode: Mode, is_off: bool, actor: Actor) -> Mode:
    """Turn memory off or on in one mode: while off, agents get and save nothing of it there.

    Raises NotFoundError for a mode of another user.
    """
    if mode.user_id != user.pk:
        raise NotFoundError(gettext_noop("no such mode"))
    with transaction.atomic():
        mode.is_memory_off = is_off
        mode.save(update_fields=["is_memory_off"])
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.MODE_MEMORY_OFF if is_off else AuditAction.MODE_MEMORY_ON,
            mode=mode.slug,
        )
    return mode


def set_retention(*, user: User, retention_days: int | None, actor: Actor) -> User:
    """Auto-delete memories older than `retention_days` (None: keep until the user deletes)."""
    if retention_days is not None and not 1 <= retention_days <= MAX_RETENTION_DAYS:
        raise InvalidInputError(
            gettext_noop("retention must be between 1 and {days} days"), days=MAX_RETENTION_DAYS
        )
    with transaction.atomic():
        user.retention_days = retention_days
        user.save(update_fields=["retention_days"])
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.SETTINGS_RETENTION,
            object_ids=[retention_days or "keep"],
        )
    return user


def set_language(*, user: User, language: str) -> User:
    """Keep the person's language, for what is sent to them outside a request (emails).

    Raises InvalidInputError for a language the hub does not offer.
    """
    if language not in dict(settings.LANGUAGES):
        raise InvalidInputError(gettext_noop("no such language"))
    if user.language != language:
        user.language = language
        user.save(update_fields=["language"])
    return user


def _agent_of_workspace(user: User, agent_id: UUID) -> Agent:
    agent = Agent.objects.filter(pk=agent_id, workspace_id=user.workspace_id).first()
    if agent is None:
        raise InvalidInputError(gettext_noop("no such agent in your workspace"))
    return agent


def block_agent(*, user: User, agent: Agent, actor: Actor) -> AgentBlock:
    """Stop this agent from reading or writing anything of the user (the API refuses it)."""
    agent = _agent_of_workspace(user, agent.pk)
    with transaction.atomic():
        block, _ = AgentBlock.objects.get_or_create(user=user, agent=agent)
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.AGENT_BLOCK,
            object_ids=[agent.pk],
        )
    return block


def unblock_agent(*, user: User, agent: Agent, actor: Actor) -> int:
    """Let a blocked agent reach the user's memory again; return how many blocks were lifted."""
    with transaction.atomic():
        deleted, _ = AgentBlock.objects.filter(user=user, agent=agent).delete()
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.AGENT_UNBLOCK,
            object_ids=[agent.pk],
        )
    return deleted


def set_agent_permission(
    *, user: User, agent: Agent, permission: AgentPermission, is_allowed: bool, actor: Actor
) -> bool:
    """Turn one permission on or off for one agent of the user's workspace; return it.

    Raises InvalidInputError for an agent of another workspace.
    """
    agent = _agent_of_workspace(user, agent.pk)
    with transaction.atomic():
        if is_allowed:
            AgentGrant.objects.get_or_create(user=user, agent=agent, permission=permission)
        else:
            AgentGrant.objects.filter(user=user, agent=agent, permission=permission).delete()
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.AGENT_ALLOW if is_allowed else AuditAction.AGENT_DISALLOW,
            object_ids=[agent.pk, permission.value],
        )
    return is_allowed
