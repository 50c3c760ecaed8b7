"""Forget for good: selected memories, messages, working memory and history, with what they fed.

Nothing here is a soft delete: rows go. A forget follows the provenance links
(`Memory.source_messages`, `Memory.derived_from`, `Memory.session`) so that a fact, summary,
open item or theme built from a forgotten item goes too, unless surviving evidence still
supports it. Themes and compaction summaries are rewritten without the forgotten items, and
their old versions are dropped, so nothing forgotten comes back through a summary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from pathlib import Path
from uuid import UUID

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access, subject_pseudonym
from memoryhub.embeddings import Embedder, embedder_for_workspace
from memoryhub.graph import forget_user_data as forget_graph_data
from memoryhub.keyring import UserCipher, cipher_for, destroy_user_key
from memoryhub.knowledge.forget import forget_user_data as forget_knowledge_data
from memoryhub.models import (
    ActorType,
    AgentBlock,
    ApiKey,
    ImportJob,
    JournalEntry,
    Memory,
    MemoryKind,
    MemoryStatus,
    MemoryVersion,
    Message,
    Mode,
    Session,
    User,
)
from memoryhub.replicas import note_write
from memoryhub.services.forget_cascade import cascade, regenerate, restore, weaken
from memoryhub.services.forget_selection import ForgetPlan, ForgetSelector, plan_forget
from memoryhub.services.quotas import lock_usage

__all__ = [
    "DeletionReceipt",
    "ForgetSelector",
    "delete_account",
    "forget",
]

# Data derived from memories elsewhere in the domain, purged inside every forget's transaction,
# in this order: the answers and candidates first, then the graph (which reads what is left of
# the answers). Each is `fn(*, user, mode, memory_ids, message_ids, selector, embedder) ->
# Mapping[str, int]` (counts by kind; mode and selector are None for account deletion) and
# deletes, besides what was built on the forgotten memories and messages, its own rows that the
# selector picks (period, topic, query).
DERIVED_DATA_PURGERS: tuple[Callable[..., Mapping[str, int]], ...] = (
    forget_knowledge_data,
    forget_graph_data,
)


@dataclass(frozen=True)
class DeletionReceipt:
    """What a forget removed: counts by kind ("fact", "message", "version", …) and when."""

    counts: dict[str, int]
    deleted_at: datetime
    memory_ids: tuple[UUID, ...]
    # Themes and compactions rewritten without the forgotten items (not deleted).
    regenerated_ids: tuple[UUID, ...] = ()

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _purge_derived_data(
    *,
    user: User,
    mode: Mode | None,
    memory_ids: Iterable[UUID],
    message_ids: Iterable[UUID],
    selector: ForgetSelector | None,
    embedder: Embedder | None,
) -> dict[str, int]:
    counts: dict[str, int] = {}
    memory_ids, message_ids = tuple(memory_ids), tuple(message_ids)
    for purge in DERIVED_DATA_PURGERS:
        result = purge(
            user=user,
            mode=mode,
            memory_ids=memory_ids,
            message_ids=message_ids,
            selector=selector,
            embedder=embedder,
        )
        for kind, count in (result or {}).items():
            _add(counts, kind, count)
    return counts


def _add(counts: dict[str, int], kind: str, count: int) -> None:
    if count:
        counts[kind] = counts.get(kind, 0) + count


def forget(
    *,
    user: User,
    mode: Mode,
    selector: ForgetSelector,
    actor: Actor,
    embedder: Embedder | None = None,
    action: AuditAction = AuditAction.MEMORY_FORGET,
) -> DeletionReceipt:
    """Delete for good what the selector picks in this mode, and what was derived from it.

    Every deletion of memory goes through here (forget, DELETE /memories/{id}, delete-all of a
    mode, retention), so what was derived from the deleted rows never outlives them.
    Raises InvalidInputError for an empty or malformed selector.
    """
    cipher = cipher_for(user)
    # Rewritten summaries and undone edits need fresh embeddings even without a query.
    embedder = embedder or embedder_for_workspace(user.workspace)
    with transaction.atomic():
        lock_usage(user.pk)  # Before any memory row: see quotas.lock_usage.
        plan = plan_forget(
            user=user, mode=mode, selector=selector, cipher=cipher, embedder=embedder
        )
        cascade(user=user, mode=mode, plan=plan, cipher=cipher)
        receipt = _apply(
            user=user, mode=mode, plan=plan, cipher=cipher, embedder=embedder, selector=selector
        )
        note_write(user.pk)
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=action,
            object_ids=[*receipt.memory_ids, *sorted(plan.message_ids)],
            mode=mode.slug,
        )
    return receipt


def _apply(
    *,
    user: User,
    mode: Mode,
    plan: ForgetPlan,
    cipher: UserCipher,
    embedder: Embedder,
    selector: ForgetSelector,
) -> DeletionReceipt:
    counts: dict[str, int] = {}
    scoped = Memory.objects.for_owner(user=user, mode=mode)
    for kind in scoped.filter(pk__in=plan.memory_ids).values_list("kind", flat=True):
        _add(counts, kind, 1)
    # Explicit ids name memories only: then only what was built on them goes.
    purged = _purge_derived_data(
        user=user,
        mode=mode,
        memory_ids=plan.memory_ids,
        message_ids=plan.message_ids,
        selector=None if selector.memory_ids else selector,
        embedder=embedder,
    )
    for kind, count in purged.items():
        _add(counts, kind, count)
    # Versions of deleted memories go with them (ON DELETE CASCADE); count them as versions.
    versions = MemoryVersion.objects.filter(
        Q(memory_id__in=plan.memory_ids) | Q(pk__in=plan.version_ids)
    )
    _add(counts, "version", versions.count())
    for memory_id, version in plan.restores.items():
        restore(scoped.get(pk=memory_id), version, cipher, embedder)
    MemoryVersion.objects.filter(pk__in=plan.version_ids).delete()
    # Messages a deleted compaction stood for return to the thread as they were.
    surviving_summaries = scoped.filter(kind=MemoryKind.SESSION_SUMMARY).exclude(
        pk__in=plan.memory_ids
    )
    Message.objects.filter(
        derived_memories__in=scoped.filter(pk__in=plan.memory_ids, kind=MemoryKind.SESSION_SUMMARY),
        is_compacted=True,
    ).exclude(pk__in=plan.message_ids).exclude(derived_memories__in=surviving_summaries).update(
        is_compacted=False
    )
    scoped.filter(pk__in=plan.reactivate_ids).update(status=MemoryStatus.ACTIVE)
    scoped.filter(pk__in=plan.memory_ids).delete()
    _, deleted = Message.objects.filter(pk__in=plan.message_ids).delete()
    _add(counts, "message", deleted.get(Message._meta.label, 0))
    cleared = Session.objects.filter(pk__in=plan.working_memory_session_ids).update(
        working_memory_ciphertext=None,
        working_memory_updated_at=None,
        working_memory_expires_at=None,
    )
    _add(counts, "working_memory", cleared)
    # An ended session with no message left is an empty shell that still says "you talked".
    _, deleted = Session.objects.filter(pk__in=plan.session_ids, messages__isnull=True).delete()
    _add(counts, "session", deleted.get(Session._meta.label, 0))
    _add(counts, "journal", JournalEntry.objects.filter(pk__in=plan.journal_ids).delete()[0])
    for memory in scoped.filter(pk__in=plan.regenerate_ids):
        regenerate(memory, cipher=cipher, embedder=embedder)
    for survivor in scoped.filter(pk__in=plan.evidence_lost):
        weaken(survivor, lost=plan.evidence_lost[survivor.pk], plan=plan, cipher=cipher)
    return DeletionReceipt(
        counts=counts,
        deleted_at=timezone.now(),
        memory_ids=tuple(sorted(plan.memory_ids)),
        regenerated_ids=tuple(sorted(plan.regenerate_ids)),
    )


def _delete_files(paths: list[str]) -> None:
    for path in paths:
        Path(path).unlink(missing_ok=True)


def delete_account(*, user: User, actor: Actor) -> None:
    """Erase a user in one atomic step: their data key (crypto-shred), then every row of theirs.

    All or nothing: were the key destroyed in a step of its own, a failure after it would leave
    a user without a key, and with rows no key opens (see keyring.cipher_for).
    """
    user_id = user.pk
    with transaction.atomic():
        # Lock the user first: a concurrent write for them waits, then finds them gone.
        User.objects.select_for_update().filter(pk=user_id).first()
        destroy_user_key(user)
        # An import file still waiting for its task: its key died with the user's; the
        # (sealed) file goes too once the deletion commits.
        waiting_files = list(
            ImportJob.objects.filter(user=user)
            .exclude(file_path="")
            .values_list("file_path", flat=True)
        )
        transaction.on_commit(partial(_delete_files, waiting_files))
        memories = Memory.objects.for_owner(user=user, mode=None)
        _purge_derived_data(
            user=user,
            mode=None,
            memory_ids=memories.values_list("pk", flat=True),
            message_ids=Message.objects.filter(session__user=user).values_list("pk", flat=True),
            selector=None,
            embedder=None,
        )
        memories.delete()
        Session.objects.filter(user=user).delete()
        JournalEntry.objects.filter(user=user).delete()
        ApiKey.objects.filter(user=user).delete()
        AgentBlock.objects.filter(user=user).delete()
        Mode.objects.filter(user=user).delete()
        # The rest (email addresses, authenticators, write marks) goes by ON DELETE CASCADE.
        user.delete()
        # The user may be the actor: log them under the same pseudonym as the subject.
        if actor.actor_type == ActorType.USER and actor.actor_id == str(user_id):
            actor = replace(actor, actor_id=subject_pseudonym(user_id))
        # The user is gone when the change is announced: name its workspace (webhooks).
        record_access(
            actor=actor,
            subject_user_id=user_id,
            action=AuditAction.ACCOUNT_DELETE,
            workspace_id=user.workspace_id,
        )
