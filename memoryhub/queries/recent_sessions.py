"""The user's most recent sessions in one mode, as an agent may see them (no transcript text)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db.models import Q

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.models import Agent, Mode, User
from memoryhub.models import Session as SessionRow

MAX_RECENT_SESSIONS = 50


@dataclass(frozen=True)
class RecentSession:
    id: UUID
    is_incognito: bool
    started_at: datetime
    last_activity_at: datetime
    ended_at: datetime | None
    extraction_status: str


def list_recent_sessions(
    *, user: User, mode: Mode, agent: Agent | None, actor: Actor, limit: int = 10
) -> tuple[RecentSession, ...]:
    """The mode's newest sessions first, audited as one read."""
    rows = SessionRow.objects.for_owner(user=user, mode=mode)
    if agent is not None:
        # Security invariant: another agent's session does not exist for this one (get_session).
        rows = rows.filter(Q(agent__isnull=True) | Q(agent=agent))
    sessions = tuple(
        RecentSession(
            id=row.pk,
            is_incognito=row.is_incognito,
            started_at=row.started_at,
            last_activity_at=row.last_activity_at,
            ended_at=row.ended_at,
            extraction_status=row.extraction_status,
        )
        for row in rows.order_by("-started_at", "-pk")[: max(1, min(limit, MAX_RECENT_SESSIONS))]
    )
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.SESSION_LIST,
        object_ids=[session.id for session in sessions],
        mode=mode.slug,
    )
    return sessions
