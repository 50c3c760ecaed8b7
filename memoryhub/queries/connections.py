"""Who can reach a user's memory: the agents of their workspace, and their personal keys."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db.models import Count, Max

from memoryhub.models import Agent, AgentBlock, AgentGrant, AgentPermission, ApiKey, Session, User


@dataclass(frozen=True)
class ConnectedAgent:
    id: UUID
    name: str
    is_blocked: bool
    # The user let this agent export all their data (GET /export); off unless turned on.
    can_export: bool
    # The user let this agent upload files to import (POST /imports); off unless turned on.
    can_import: bool
    session_count: int
    last_seen_at: datetime | None


def list_connected_agents(*, user: User) -> list[ConnectedAgent]:
    """The agents of the user's workspace, with whether they are blocked and when last seen."""
    seen: dict[UUID, tuple[int, datetime | None]] = {
        agent_id: (sessions, last_seen_at)
        for agent_id, sessions, last_seen_at in Session.objects.filter(
            user=user, agent__isnull=False
        )
        .values("agent_id")
        .annotate(sessions=Count("id"), last_seen_at=Max("last_activity_at"))
        .values_list("agent_id", "sessions", "last_seen_at")
    }
    blocked = set(AgentBlock.objects.filter(user=user).values_list("agent_id", flat=True))
    grants = AgentGrant.objects.filter(user=user).values_list("agent_id", "permission")
    exporters = {
        agent_id for agent_id, permission in grants if permission == AgentPermission.EXPORT
    }
    importers = {
        agent_id for agent_id, permission in grants if permission == AgentPermission.IMPORT
    }
    agents = Agent.objects.filter(workspace_id=user.workspace_id).order_by("name")
    return [
        ConnectedAgent(
            id=agent.pk,
            name=agent.name,
            is_blocked=agent.pk in blocked,
            can_export=agent.pk in exporters,
            can_import=agent.pk in importers,
            session_count=seen.get(agent.pk, (0, None))[0],
            last_seen_at=seen.get(agent.pk, (0, None))[1],
        )
        for agent in agents
        if agent.is_active or agent.pk in blocked
    ]


def list_personal_keys(*, user: User) -> list[ApiKey]:
    """The user's personal access keys, newest first (only prefixes: keys are never stored)."""
    keys = ApiKey.objects.filter(user=user, is_review_key=False)  # Reviewer keys: review pages.
    return list(keys.select_related("mode").order_by("-created_at"))


def list_review_keys(*, user: User) -> list[ApiKey]:
    """The reviewer's reviewer keys, newest first (only prefixes: keys are never stored)."""
    return list(ApiKey.objects.filter(user=user, is_review_key=True).order_by("-created_at"))


def is_agent_allowed(*, user: User, agent: Agent, permission: AgentPermission) -> bool:
    """Whether the user turned this permission on for this agent (every one is off by default)."""
    return AgentGrant.objects.filter(user=user, agent=agent, permission=permission).exists()
