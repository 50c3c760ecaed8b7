"""The user's own hand on their memory: reject, resolve, complete, copy, erase a mode.

Confirming a candidate is `memoryhub.services.confidence.confirm_memory`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from uuid import UUID

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder
from memoryhub.errors import InvalidInputError, NotFoundError
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import (
    MemoryItem,
    decrypt_memory,
    get_memory_row,
    memories_of,
    open_payload,
)
from memoryhub.models import (
    Confidence,
    Memory,
    MemoryKind,
    MemorySource,
    MemoryStatus,
    Mode,
    Session,
    User,
)
from memoryhub.services.confidence import confirm_memory
from memoryhub.services.forget import DeletionReceipt, ForgetSelector, forget
from memoryhub.services.memories import NewMemory, delete_memories, edit_memory, remember

# "Everything ever remembered" as a forget period: no row predates the Unix epoch.
ALL_TIME = datetime(1970, 1, 1, tzinfo=UTC)


def is_candidate(memory: Memory) -> bool:
    """Whether the item still waits for the user's "Is this right?"."""
    return memory.confidence == Confidence.CANDIDATE or memory.status == MemoryStatus.CANDIDATE


def reject_candidate(*, user: User, mode: Mode, memory_id: UUID | str, actor: Actor) -> int:
    """Delete a candidate the user says is wrong; raise InvalidInputError for a settled item."""
    memory = get_memory_row(user=user, mode=mode, memory_id=memory_id)
    if not is_candidate(memory):
        raise InvalidInputError(
            gettext_noop("only an item waiting for confirmation can be rejected")
        )
    return delete_memories(
        user=user, mode=mode, memory_ids=[memory.pk], actor=actor, action=AuditAction.MEMORY_REJECT
    )


def resolve_contradiction(
    *, user: User, mode: Mode, keep_id: UUID | str, drop_id: UUID | str, actor: Actor
) -> Memory:
    """Keep one of two items that claim the same slot; the other is deleted or superseded.

    A dropped candidate is deleted (the user said it is wrong); a dropped current item is
    superseded, so it stays visible in history. Raises InvalidInputError if the two items do
    not share a slot.
    """
    with transaction.atomic():
        keep = get_memory_row(user=user, mode=mode, memory_id=keep_id)
        drop = get_memory_row(user=user, mode=mode, memory_id=drop_id)
        if keep.pk == drop.pk or not keep.slot_hash or keep.slot_hash != drop.slot_hash:
            raise InvalidInputError(gettext_noop("these two items do not contradict each other"))
        if is_candidate(drop):
            delete_memories(
                user=user,
                mode=mode,
                memory_ids=[drop.pk],
                actor=actor,
                action=AuditAction.MEMORY_REJECT,
            )
        # Confirming the kept item supersedes whatever else still holds its slot.
        return confirm_memory(user=user, mode=mode, memory_id=keep.pk, actor=actor)


def mark_open_item_done(
    *, user: User, mode: Mode, memory_id: UUID | str, actor: Actor, embedder: Embedder
) -> MemoryItem:
    """Close an open item: it leaves the open list and context, and stays in history as done."""
    row = get_memory_row(user=user, mode=mode, memory_id=memory_id)
    if row.kind != MemoryKind.OPEN_ITEM:
        raise InvalidInputError(gettext_noop("only an open item can be marked done"))
    if row.status != MemoryStatus.ACTIVE:
        raise InvalidInputError(gettext_noop("this open item is already closed"))
    payload = open_payload(row, cipher_for(user))
    now = timezone.now()
    with transaction.atomic():
        item = edit_memory(
            user=user,
            mode=mode,
            memory_id=row.pk,
            actor=actor,
            embedder=embedder,
            payload={**payload, "status": "done", "done_at": now.isoformat()},
        )
        # "Superseded" is the status of anything no longer current; recall reads active only.
        memories_of(user=user, mode=mode).filter(pk=row.pk).update(
            status=MemoryStatus.SUPERSEDED, valid_to=now
        )
    return replace(item, status=MemoryStatus.SUPERSEDED, valid_to=now)


def copy_to_mode(
    *,
    user: User,
    mode: Mode,
    memory_id: UUID | str,
    target_mode: Mode,
    actor: Actor,
    embedder: Embedder,
) -> MemoryItem:
    """Copy one item into another mode of the same user (modes never share items otherwise)."""
    if target_mode.user_id != user.pk:
        raise NotFoundError(gettext_noop("mode not found"))
    if target_mode.pk == mode.pk:
        raise InvalidInputError(gettext_noop("choose a different mode to copy into"))
    item = decrypt_memory(
        get_memory_row(user=user, mode=mode, memory_id=memory_id), cipher_for(user)
    )
    with transaction.atomic():
        copy = remember(
            user=user,
            mode=target_mode,
            item=NewMemory(
                kind=item.kind,
                content=item.content,
                importance=item.importance,
                source=MemorySource.USER,
                payload=item.payload or None,
                confidence=item.confidence,
                status=MemoryStatus.CANDIDATE
                if item.status == MemoryStatus.CANDIDATE
                else MemoryStatus.ACTIVE,
                occurred_at=item.occurred_at,
                personal_data=item.personal_data,
            ),
            actor=actor,
            embedder=embedder,
        )
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.MEMORY_COPY,
            object_ids=[item.id, copy.id],
            mode=target_mode.slug,
        )
    return copy


def _merge(receipts: list[DeletionReceipt]) -> DeletionReceipt:
    counts: dict[str, int] = {}
    for receipt in receipts:
        for kind, count in receipt.counts.items():
            counts[kind] = counts.get(kind, 0) + count
    return DeletionReceipt(
        counts=counts,
        deleted_at=timezone.now(),
        memory_ids=tuple(mid for receipt in receipts for mid in receipt.memory_ids),
    )


def forget_mode(*, user: User, mode: Mode, actor: Actor, embedder: Embedder) -> DeletionReceipt:
    """Delete everything of one mode: memories, messages, working memory, history, sessions."""
    with transaction.atomic():
        receipt = forget(
            user=user,
            mode=mode,
            selector=ForgetSelector(since=ALL_TIME),
            actor=actor,
            embedder=embedder,
        )
        # What forget leaves of a session is an empty shell (times, agent): it goes too.
        _, deleted = Session.objects.for_owner(user=user, mode=mode).delete()
    sessions = deleted.get(Session._meta.label, 0)
    counts = dict(receipt.counts)
    if sessions:
        counts["session"] = counts.get("session", 0) + sessions
    return replace(receipt, counts=counts)


def forget_all_modes(*, user: User, actor: Actor, embedder: Embedder) -> DeletionReceipt:
    """Delete everything of every mode; the account, its settings and keys stay."""
    with transaction.atomic():
        receipts = [
            forget_mode(user=user, mode=mode, actor=actor, embedder=embedder)
            for mode in Mode.objects.filter(user=user)
        ]
    return _merge(receipts)
