"""The confidence ladder, and contradictions between memories of one slot (supersede, confirm)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import ConflictError
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.memory_rows import get_memory_row, keep_version, open_payload, seal_payload
from memoryhub.models import Confidence, Memory, MemoryKind, MemoryStatus, Mode, User
from memoryhub.replicas import note_write
from memoryhub.services.memories import lock_slot
from memoryhub.services.write_checks import check_writable

# Heard this many times (in any sessions), a memory is trusted without the user's confirmation.
HIGH_CONFIDENCE_EVIDENCE = 3
# Only beliefs about the user climb the ladder; events and open items of a session are records
# of what was said in it, grounded in a quote, and are stored at medium from the start.
LADDER_KINDS = frozenset({MemoryKind.FACT, MemoryKind.PREFERENCE, MemoryKind.PROCEDURE})
# Rows of a slot that still count: the current value, and candidates waiting to be confirmed.
LIVE_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE)
# The payload key on a candidate that contradicts a current memory (the user decides).
CONFLICTS_WITH = "conflicts_with"

_RANK = {Confidence.CANDIDATE: 0, Confidence.MEDIUM: 1, Confidence.HIGH: 2}


def climb_ladder(
    *,
    current: str | None,
    evidence_count: int,
    is_explicit: bool = False,
    is_heard_in_another_session: bool = False,
    is_confirmed: bool = False,
) -> str:
    """Return the confidence a memory earns from its evidence; it never goes down.

    Heard once and inferred: candidate. Stated explicitly (a first-person declaration about
    the user, "remember that …", a correction) or heard again in another session: medium.
    Confirmed by the user, or heard three or more times: high.
    """
    earned = Confidence.CANDIDATE
    if is_explicit or is_heard_in_another_session:
        earned = Confidence.MEDIUM
    if is_confirmed or evidence_count >= HIGH_CONFIDENCE_EVIDENCE:
        earned = Confidence.HIGH
    if current is not None and _RANK[Confidence(current)] > _RANK[earned]:
        return current
    return earned


def status_for(confidence: str) -> str:
    """Candidates are stored but kept apart (never injected); anything surer is active."""
    return MemoryStatus.CANDIDATE if confidence == Confidence.CANDIDATE else MemoryStatus.ACTIVE


def is_recallable(confidence: str) -> bool:
    """Say whether a memory of this confidence may be injected into an agent's context."""
    return confidence != Confidence.CANDIDATE


def live_slot_rows(*, user: User, mode: Mode, slot_hash: str) -> list[Memory]:
    """The current and candidate memories of one slot, newest first, locked for update.

    The slot itself is locked too (`lock_slot`), so that concurrent writers to an empty slot
    take turns instead of each writing a current value.
    """
    lock_slot(user=user, mode=mode, slot_hash=slot_hash)
    return list(
        Memory.objects.for_owner(user=user, mode=mode)
        .filter(slot_hash=slot_hash, status__in=LIVE_STATUSES, valid_to__isnull=True)
        .select_for_update()
        .order_by("-valid_from", "-created_at")
    )


def supersede(memories: Sequence[Memory], *, now: Any = None) -> list[UUID]:
    """End the given memories' validity: they stay in history and are never current again."""
    now = now or timezone.now()
    ids = [memory.pk for memory in memories]
    for memory in memories:
        memory.status = MemoryStatus.SUPERSEDED
        memory.valid_to = now
        memory.updated_at = now
        memory.save(update_fields=["status", "valid_to", "updated_at"])
    return ids


def drop_conflict_mark(memory: Memory, cipher: UserCipher) -> None:
    """Remove the pending-conflict mark from a memory's payload (not saved here)."""
    payload = open_payload(memory, cipher)
    if CONFLICTS_WITH in payload:
        del payload[CONFLICTS_WITH]
        seal_payload(memory, cipher=cipher, payload=payload)


def confirm_memory(
    *, user: User, mode: Mode, memory_id: UUID | str, actor: Actor, keeps_version: bool = True
) -> Memory:
    """Mark a memory confirmed by the user (high); it replaces any other value of its slot.

    What it was until now is kept as a version, unless the caller just kept one in the same
    action (`keeps_version=False`: the dashboard's edit, which confirms the new words).

    Raises NotFoundError (another user's or mode's memory) and ConflictError (not current).
    """
    check_writable(user, actor, mode)
    cipher = cipher_for(user)
    with transaction.atomic():
        row = get_memory_row(user=user, mode=mode, memory_id=memory_id)
        memory = Memory.all_owners.select_for_update().get(pk=row.pk)
        if memory.status not in LIVE_STATUSES or memory.valid_to is not None:
            raise ConflictError(gettext_noop("only a current or candidate memory can be confirmed"))
        now = timezone.now()
        superseded: list[UUID] = []
        if memory.slot_hash:
            others = [
                other
                for other in live_slot_rows(user=user, mode=mode, slot_hash=memory.slot_hash)
                if other.pk != memory.pk
            ]
            superseded = supersede(others, now=now)
            if others:
                memory.supersedes = others[0]
        if keeps_version:
            # What it was until now stays in its history (a candidate, or medium confidence).
            keep_version(
                memory,
                cipher=cipher,
                changed_by_type=actor.actor_type,
                changed_by_id=actor.actor_id,
                reason="confirm",
            )
        drop_conflict_mark(memory, cipher)
        memory.confidence = Confidence.HIGH
        memory.status = MemoryStatus.ACTIVE
        memory.updated_at = now
        memory.save(
            update_fields=[
                "confidence",
                "status",
                "supersedes",
                "payload_ciphertext",
                "updated_at",
            ]
        )
        note_write(user.pk)
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.MEMORY_CONFIRM,
            object_ids=[memory.pk, *superseded],
            mode=mode.slug,
        )
    return memory
