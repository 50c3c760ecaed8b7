"""The user's profile in one mode (facts, preferences, procedures) and their open items."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Case, IntegerField, Value, When

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import MemoryItem, decrypt_memories, memories_of
from memoryhub.models import (
    Confidence,
    Importance,
    MemoryKind,
    MemoryQuerySet,
    MemoryStatus,
    Mode,
    User,
)
from memoryhub.queries.as_of import check_as_of, items_as_of, known_at
from memoryhub.queries.memories import is_memory_in_use
from memoryhub.replicas import read_for_user

PROFILE_KINDS = (MemoryKind.FACT, MemoryKind.PREFERENCE, MemoryKind.PROCEDURE)
_IMPORTANCE_RANK = Case(
    When(importance=Importance.CRITICAL, then=Value(0)),
    When(importance=Importance.HIGH, then=Value(1)),
    When(importance=Importance.NORMAL, then=Value(2)),
    default=Value(3),
    output_field=IntegerField(),
)


@dataclass(frozen=True)
class Profile:
    facts: tuple[MemoryItem, ...]
    preferences: tuple[MemoryItem, ...]
    procedures: tuple[MemoryItem, ...]


def _ranked(queryset: MemoryQuerySet) -> MemoryQuerySet:
    # Most important first, then newest: what an agent should read before anything else.
    return queryset.annotate(importance_rank=_IMPORTANCE_RANK).order_by(
        "importance_rank", "-created_at", "-id"
    )


def get_profile(
    *, user: User, mode: Mode, actor: Actor, limit: int = 100, as_of: datetime | None = None
) -> Profile:
    """The recallable (active, medium or high confidence) facts, preferences and procedures.

    With `as_of`, the profile as it was then (as_of.py): what was recallable at that moment.
    """
    as_of = check_as_of(as_of)
    memories = memories_of(user=user, mode=mode).of_kind(*PROFILE_KINDS)
    if as_of is None:
        queryset = _ranked(memories.recallable())
    else:
        queryset = _ranked(
            known_at(memories, as_of)
            .exclude(status=MemoryStatus.CANDIDATE)
            .exclude(confidence=Confidence.CANDIDATE)
        )
    if not is_memory_in_use(mode=mode, actor=actor):
        queryset = queryset.none()  # Memory off in this mode: agents get nothing of it.
    cipher = cipher_for(user)

    def read(using: str) -> list[MemoryItem]:
        items = decrypt_memories(queryset.using(using), cipher)
        if as_of is None:
            return items
        return items_as_of(items, cipher=cipher, as_of=as_of, using=using)

    items = read_for_user(user.pk, read)
    by_kind = {kind: tuple(i for i in items if i.kind == kind)[:limit] for kind in PROFILE_KINDS}
    profile = Profile(
        facts=by_kind[MemoryKind.FACT],
        preferences=by_kind[MemoryKind.PREFERENCE],
        procedures=by_kind[MemoryKind.PROCEDURE],
    )
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.PROFILE_READ,
        object_ids=[i.id for i in (*profile.facts, *profile.preferences, *profile.procedures)],
        mode=mode.slug,
    )
    return profile


def list_open_items(*, user: User, mode: Mode, actor: Actor, limit: int = 100) -> list[MemoryItem]:
    """The active open items (things still to do or follow up), most important first."""
    queryset = _ranked(memories_of(user=user, mode=mode).active().of_kind(MemoryKind.OPEN_ITEM))
    if not is_memory_in_use(mode=mode, actor=actor):
        queryset = queryset.none()
    rows = read_for_user(user.pk, lambda using: list(queryset.using(using)[:limit]))
    items = decrypt_memories(rows, cipher_for(user))
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.OPEN_ITEMS_LIST,
        object_ids=[item.id for item in items],
        mode=mode.slug,
    )
    return items
