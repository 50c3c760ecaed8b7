"""A memory's history: every text it has had, oldest first, with who changed it, why, when.

Memories as they were at a moment are `as_of.py`; docs/history.md says what both can show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access, subject_pseudonym
from memoryhub.errors import NotFoundError
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.memory_rows import (
    decrypt_memory,
    get_memory_row,
    memories_of,
    open_version_content,
    open_version_payload,
)
from memoryhub.models import (
    ActorType,
    AuditEntry,
    Memory,
    MemorySource,
    MemoryStatus,
    MemoryVersion,
    Mode,
    User,
)
from memoryhub.queries.memories import is_memory_in_use
from memoryhub.replicas import read_for_user

# Who wrote a memory's first text, by its source (the actor of later texts is on each version).
_CREATOR_TYPES: dict[str, str] = {
    MemorySource.AGENT: ActorType.AGENT,
    MemorySource.EXPLICIT: ActorType.AGENT,
    MemorySource.EXTRACTED: ActorType.SYSTEM,
    MemorySource.USER: ActorType.USER,
    MemorySource.REVIEWER: ActorType.REVIEWER,
    MemorySource.SYSTEM: ActorType.SYSTEM,
}


@dataclass(frozen=True)
class HistoryEntry:
    """One text a memory had: what it said and how sure, who made it so and why, and when."""

    version: int
    content: str
    payload: dict[str, Any]
    # None on versions kept before these were recorded.
    kind: str | None
    confidence: str | None
    status: str | None
    changed_by_type: str
    changed_by_id: str
    reason: str
    valid_from: datetime
    valid_to: datetime | None


@dataclass(frozen=True)
class MemoryHistory:
    memory_id: UUID
    status: str
    supersedes: UUID | None
    superseded_by: tuple[UUID, ...]
    entries: tuple[HistoryEntry, ...]


# The audit actions that bring a memory row into being.
_CREATING_ACTIONS = [
    AuditAction.MEMORY_CREATE,
    AuditAction.MEMORY_EXTRACT,
    AuditAction.MEMORY_COPY,
    AuditAction.MEMORY_CONSOLIDATE,
    AuditAction.SESSION_COMPACT,
]


def _creator(memory: Memory, versions: Sequence[MemoryVersion]) -> tuple[str, str]:
    """Who wrote the first text: the actor audited creating the row, else told by its source."""
    created = (
        AuditEntry.objects.filter(
            subject=subject_pseudonym(memory.user_id),
            action__in=_CREATING_ACTIONS,
            object_ids__contains=[str(memory.pk)],
        )
        .order_by("id")
        .values_list("actor_type", "actor_id")
        .first()
    )
    if created is not None:
        return created
    # The audit rows may have been pruned: the row's source still says what kind of writer.
    source = (versions[0].source if versions else "") or memory.source
    actor_type = _CREATOR_TYPES.get(source, ActorType.SYSTEM)
    return actor_type, str(memory.user_id) if actor_type == ActorType.USER else ""


def _entries(
    memory: Memory, versions: Sequence[MemoryVersion], cipher: UserCipher
) -> list[HistoryEntry]:
    current = decrypt_memory(memory, cipher)
    creator_type, creator_id = _creator(memory, versions)
    entries: list[HistoryEntry] = []
    # Version n holds the text as it was until its change; the next text began at that change.
    starts: list[tuple[str, str, str, datetime]] = [
        (creator_type, creator_id, "created", memory.created_at)
    ]
    starts += [(v.changed_by_type, v.changed_by_id, v.reason, v.created_at) for v in versions]
    for number, (by_type, by_id, reason, since) in enumerate(starts):
        if number < len(versions):
            version = versions[number]
            content = open_version_content(version, cipher)
            payload = open_version_payload(version, cipher)
            kind, confidence, status = version.kind, version.confidence, version.status
            until: datetime | None = version.created_at
        else:
            content, payload = current.content, current.payload
            kind, confidence, status = current.kind, current.confidence, current.status
            until = current.valid_to
        entries.append(
            HistoryEntry(
                version=number + 1,
                content=content,
                payload=payload,
                kind=kind or None,
                confidence=confidence or None,
                status=status or None,
                changed_by_type=by_type,
                changed_by_id=by_id,
                reason=reason,
                valid_from=since,
                valid_to=until,
            )
        )
    return entries


def get_memory_history(
    *, user: User, mode: Mode, memory_id: UUID | str, actor: Actor
) -> MemoryHistory:
    """Every text a memory has had, oldest first, with who changed it, why and when; audited.

    Raises NotFoundError for another user's or mode's memory, a forgotten one, and for an
    agent: a mode with memory off, or a memory that is still a candidate.
    """
    is_agent = actor.actor_type == ActorType.AGENT
    if not is_memory_in_use(mode=mode, actor=actor):
        raise NotFoundError(gettext_noop("memory not found"))
    memory = get_memory_row(user=user, mode=mode, memory_id=memory_id)
    # Security invariant: forgetting is not history, and candidates are never shown to agents.
    hidden = {MemoryStatus.FORGOTTEN, *([MemoryStatus.CANDIDATE] if is_agent else [])}
    if memory.status in hidden:
        raise NotFoundError(gettext_noop("memory not found"))
    cipher = cipher_for(user)

    def read(using: str) -> MemoryHistory:
        versions = list(
            MemoryVersion.objects.using(using).filter(memory=memory).order_by("created_at", "id")
        )
        later = memories_of(user=user, mode=mode).using(using).filter(supersedes=memory)
        later = later.exclude(status__in=hidden)
        earlier = None
        if memory.supersedes_id is not None:
            earlier = (
                memories_of(user=user, mode=mode)
                .using(using)
                .filter(pk=memory.supersedes_id)
                .exclude(status__in=hidden)
                .values_list("pk", flat=True)
                .first()
            )
        return MemoryHistory(
            memory_id=memory.pk,
            status=memory.status,
            supersedes=earlier,
            superseded_by=tuple(later.order_by("created_at", "id").values_list("pk", flat=True)),
            entries=tuple(_entries(memory, versions, cipher)),
        )

    history = read_for_user(user.pk, read)
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.MEMORY_HISTORY,
        object_ids=[memory.pk],
        mode=mode.slug,
    )
    return history
