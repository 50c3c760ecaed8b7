"""Scoped memory reads that open rows into `MemoryItem` values and audit every read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db.models import Q
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import NotFoundError
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import (
    MemoryItem,
    decrypt_memories,
    decrypt_memory,
    get_memory_row,
    memories_of,
    open_version_content,
)
from memoryhub.models import ActorType, MemoryVersion, Mode, User
from memoryhub.queries.as_of import check_as_of, items_as_of, known_at
from memoryhub.replicas import read_for_user


def is_memory_in_use(*, mode: Mode, actor: Actor) -> bool:
    """Whether reads may use the mode's memory for this actor: not for agents with memory off.

    The user still sees everything of their own in the dashboard.
    """
    return not mode.is_memory_off or actor.actor_type == ActorType.USER


def get_memory(*, user: User, mode: Mode, memory_id: UUID | str, actor: Actor) -> MemoryItem:
    """Read and decrypt one memory, writing its audit row.

    Raises NotFoundError for an agent when the user turned memory off in the mode.
    """
    if not is_memory_in_use(mode=mode, actor=actor):
        raise NotFoundError(gettext_noop("memory not found"))
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
    as_of: datetime | None = None,
) -> list[MemoryItem]:
    """Newest-first page of decrypted memories (keyset pagination on created_at, then id).

    With `as_of`, the memories as they were then (as_of.py); `statuses` then name what they
    were, not what they are, so a page may hold fewer than `limit` items.
    """
    as_of = check_as_of(as_of)
    queryset = memories_of(user=user, mode=mode)
    if not is_memory_in_use(mode=mode, actor=actor):
        queryset = queryset.none()  # Memory off in this mode: agents get nothing of it.
    if kinds:
        queryset = queryset.filter(kind__in=kinds)
    if as_of is not None:
        queryset = known_at(queryset, as_of)
    elif statuses:
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
    cipher = cipher_for(user)

    def read(using: str) -> list[MemoryItem]:
        if as_of is None:
            return decrypt_memories(page.using(using)[:limit], cipher)
        # The status a memory had then is known only once it is opened: read on until the
        # page is full, so that the last item's cursor is still the right place to go on.
        kept: list[MemoryItem] = []
        rows = list(page.using(using)[:limit])
        while rows:
            then = items_as_of(
                decrypt_memories(rows, cipher),
                cipher=cipher,
                as_of=as_of,
                includes_candidates=True,
                using=using,
            )
            kept += [item for item in then if not statuses or item.status in statuses]
            if len(kept) >= limit or len(rows) < limit:
                break
            last = rows[-1]
            after = Q(created_at__lt=last.created_at) | Q(
                created_at=last.created_at, id__lt=last.id
            )
            rows = list(page.using(using).filter(after)[:limit])
        return kept[:limit]

    items = read_for_user(user.pk, read)
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=action,
        object_ids=[item.id for item in items],
        mode=mode.slug,
    )
    return items


# Why a version was kept when only the confidence changed (its words are those that followed).
CONFIDENCE_REASONS = ("confidence", "confirm", "evidence")


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
    """The previous contents of one memory, newest first.

    Only texts that were replaced: a version kept for a new confidence alone holds the same
    words as what followed it (the API's history, queries/history.py, lists every version).
    """
    memory = get_memory_row(user=user, mode=mode, memory_id=memory_id)
    cipher = cipher_for(user)
    versions = [
        VersionItem(
            id=version.id,
            content=open_version_content(version, cipher),
            changed_by_type=version.changed_by_type,
            changed_by_id=version.changed_by_id,
            reason=version.reason,
            created_at=version.created_at,
        )
        for version in MemoryVersion.objects.filter(memory=memory)
        .exclude(reason__in=CONFIDENCE_REASONS)
        .order_by("-created_at")
    ]
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.MEMORY_HISTORY,
        object_ids=[memory.pk],
        mode=mode.slug,
    )
    return versions
