"""The user's review of what an import brought: the memories waiting, keep them, discard them."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from django.db.models import Q
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.errors import ConflictError, InvalidInputError
from memoryhub.models import Confidence, ImportedItem, ImportJob, Memory, MemoryStatus, Mode
from memoryhub.services.confidence import confirm_memory
from memoryhub.services.memories import delete_memories


def imported_candidates(*, job: ImportJob) -> list[UUID]:
    """The memories of the import still waiting for the user's review: its own, and what
    extraction found in the conversations it brought."""
    items = ImportedItem.objects.filter(job=job)
    return list(
        Memory.all_owners.filter(
            Q(pk__in=items.exclude(memory=None).values("memory_id"))
            | Q(session_id__in=items.exclude(session=None).values("session_id")),
            user=job.user,
            confidence=Confidence.CANDIDATE,
            status=MemoryStatus.CANDIDATE,
        )
        .order_by("created_at", "id")
        .values_list("id", flat=True)
    )


def _reviewed(job: ImportJob, memory_ids: Sequence[UUID | str] | None) -> list[Memory]:
    waiting = set(imported_candidates(job=job))
    chosen = waiting if memory_ids is None else {UUID(str(i)) for i in memory_ids}
    if not chosen <= waiting:
        raise InvalidInputError(
            gettext_noop("only memories of this import that wait for review can be chosen")
        )
    return list(Memory.all_owners.filter(pk__in=chosen).select_related("mode"))


def keep_imported(
    *, job: ImportJob, actor: Actor, memory_ids: Sequence[UUID | str] | None = None
) -> int:
    """Keep (confirm) the import's waiting memories, all of them or the ones chosen."""
    if job.status != ImportJob.Status.DONE:
        raise ConflictError(gettext_noop("the import has not finished"))
    kept = 0
    for memory in _reviewed(job, memory_ids):
        confirm_memory(user=job.user, mode=memory.mode, memory_id=memory.pk, actor=actor)
        kept += 1
    return kept


def discard_imported(
    *, job: ImportJob, actor: Actor, memory_ids: Sequence[UUID | str] | None = None
) -> int:
    """Delete the import's waiting memories, all of them or the ones chosen."""
    if job.status != ImportJob.Status.DONE:
        raise ConflictError(gettext_noop("the import has not finished"))
    by_mode: dict[int, tuple[Mode, list[UUID]]] = {}
    for memory in _reviewed(job, memory_ids):
        by_mode.setdefault(memory.mode_id, (memory.mode, []))[1].append(memory.pk)
    return sum(
        delete_memories(
            user=job.user,
            mode=mode,
            memory_ids=ids,
            actor=actor,
            action=AuditAction.MEMORY_REJECT,
        )
        for mode, ids in by_mode.values()
    )
