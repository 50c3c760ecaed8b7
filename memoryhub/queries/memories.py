"""Scoped memory lookups that decrypt into `MemoryItem` values and audit every read."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.core.exceptions import ValidationError
from django.db.models import Q

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import NotFoundError
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.models import ActorType, Memory, MemoryQuerySet, MemoryVersion, Mode, User
from memoryhub.replicas import read_for_user
from memoryhub.sealed_tables import MEMORY_TABLE, VERSION_TABLE


@dataclass(frozen=True)
class MemoryItem:
    """A decrypted memory, safe to hand to templates, schemas and context assembly."""

    id: UUID
    kind: str
    content: str
    payload: dict[str, Any]
    confidence: str
    status: str
    source: str
    importance: str
    evidence_count: int
    personal_data: tuple[str, ...]
    is_flagged: bool
    is_dormant: bool
    mode_id: int
    session_id: UUID | None
    created_at: datetime
    updated_at: datetime
    occurred_at: datetime | None
    valid_from: datetime
    valid_to: datetime | None
    last_accessed_at: datetime | None
    access_count: int
    score: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def is_memory_in_use(*, mode: Mode, actor: Actor) -> bool:
    """Whether reads may use the mode's memory for this actor: not for agents with memory off.

    The user still sees everything of their own in the dashboard.
    """
    return not mode.is_memory_off or actor.actor_type == ActorType.USER


def decrypt_memory(memory: Memory, cipher: UserCipher, *, score: float | None = None) -> MemoryItem:
    """Decrypt one memory row with its owner's cipher."""
    content = cipher.decrypt(
        memory.content_ciphertext, table=MEMORY_TABLE, row_id=memory.id, field="content"
    )
    payload = cipher.decrypt_json(
        memory.payload_ciphertext, table=MEMORY_TABLE, row_id=memory.id, field="payload"
    )
    return MemoryItem(
        id=memory.id,
        kind=memory.kind,
        content=content,
        payload=payload,
        confidence=memory.confidence,
        status=memory.status,
        source=memory.source,
        importance=memory.importance,
        evidence_count=memory.evidence_count,
        personal_data=tuple(memory.personal_data),
        is_flagged=memory.is_flagged,
        is_dormant=memory.is_dormant,
        mode_id=memory.mode_id,
        session_id=memory.session_id,
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        occurred_at=memory.occurred_at,
        valid_from=memory.valid_from,
        valid_to=memory.valid_to,
        last_accessed_at=memory.last_accessed_at,
        access_count=memory.access_count,
        score=score,
    )


def decrypt_memories(memories: Iterable[Memory], cipher: UserCipher) -> list[MemoryItem]:
    return [decrypt_memory(memory, cipher) for memory in memories]


def memories_of(*, user: User, mode: Mode | None) -> MemoryQuerySet:
    """The scoped queryset every other read starts from (rows only; nothing is decrypted)."""
    return Memory.objects.for_owner(user=user, mode=mode)


def get_memory_row(*, user: User, mode: Mode, memory_id: UUID | str) -> Memory:
    """One memory row of this user and mode; another owner's id is NotFound, not Forbidden."""
    try:
        return memories_of(user=user, mode=mode).get(pk=memory_id)
    except (Memory.DoesNotExist, ValueError, ValidationError):
        raise NotFoundError("memory not found") from None


def get_memory(*, user: User, mode: Mode, memory_id: UUID | str, actor: Actor) -> MemoryItem:
    """Read and decrypt one memory, writing its audit row.

    Raises NotFoundError for an agent when the user turned memory off in the mode.
    """
    if not is_memory_in_use(mode=mode, actor=actor):
        raise NotFoundError("memory not found")
    memory = get_memory_row(user=user, mode=mode, memory_id=memory_id)
    item = decrypt_memory(memory, cipher_for(user))
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.MEMORY_READ,
        object_ids=[memory.pk],
        mode=mode.slug,
    )
    return item


def list_memories(
    *,
    user: User,
    mode: Mode,
    actor: Actor,
    kinds: Sequence[str] = (),
    statuses: Sequence[str] = (),
    limit: int = 50,
    before: datetime | None = None,
    action: AuditAction = AuditAction.MEMORY_LIST,
    before_id: UUID | None = None,
) -> list[MemoryItem]:
    """Newest-first page of decrypted memories (keyset pagination on created_at, then id)."""
    queryset = memories_of(user=user, mode=mode)
    if not is_memory_in_use(mode=mode, actor=actor):
        queryset = queryset.none()  # Memory off in this mode: agents get nothing of it.
    if kinds:
        queryset = queryset.filter(kind__in=kinds)
    if statuses:
        queryset = queryset.filter(status__in=statuses)
    if before is not None and before_id is not None:
        # Memories of one batch can share a created_at: the id breaks the tie.
        queryset = queryset.filter(
            Q(created_at__lt=before) | Q(created_at=before, id__lt=before_id)
        )
    elif before is not None:
        queryset = queryset.filter(created_at__lt=before)
    # The vector and the blind index are never shown: parsing 384 floats per row cost ~0.1 ms.
    page = queryset.order_by("-created_at", "-id").defer("embedding", "blind_tokens")
    rows = read_for_user(user.pk, lambda using: list(page.using(using)[:limit]))
    items = decrypt_memories(rows, cipher_for(user))
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=action,
        object_ids=[item.id for item in items],
        mode=mode.slug,
    )
    return items


@dataclass(frozen=True)
class VersionItem:
    id: UUID
    content: str
    changed_by_type: str
    changed_by_id: str
    reason: str
    created_at: datetime


def list_versions(
    *, user: User, mode: Mode, memory_id: UUID | str, actor: Actor
) -> list[VersionItem]:
    """The previous contents of one memory, newest first."""
    memory = get_memory_row(user=user, mode=mode, memory_id=memory_id)
    cipher = cipher_for(user)
    versions = [
        VersionItem(
            id=version.id,
            content=cipher.decrypt(
                version.content_ciphertext, table=VERSION_TABLE, row_id=version.id, field="content"
            ),
            changed_by_type=version.changed_by_type,
            changed_by_id=version.changed_by_id,
            reason=version.reason,
            created_at=version.created_at,
        )
        for version in MemoryVersion.objects.filter(memory=memory).order_by("-created_at")
    ]
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.MEMORY_HISTORY,
        object_ids=[memory.pk],
        mode=mode.slug,
    )
    return versions
