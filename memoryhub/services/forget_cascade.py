"""Follow provenance from forgotten rows to what was derived from them, and rewrite summaries."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.utils import timezone

from memoryhub.embeddings import Embedder
from memoryhub.keyring import UserCipher
from memoryhub.memory_rows import (
    decrypt_memory,
    open_payload,
    open_version_content,
    open_version_payload,
    seal_content,
    seal_payload,
)
from memoryhub.message_rows import open_message
from memoryhub.models import Memory, MemoryKind, MemoryStatus, MemoryVersion, Message, Mode, User
from memoryhub.services.forget_selection import ForgetPlan, is_generated
from memoryhub.services.summaries import (
    COMPACTION_GENERATOR,
    THEME_GENERATOR,
    SummarySource,
    compose_compaction,
    compose_theme,
    rewrite_summary,
)


def cascade(*, user: User, mode: Mode, plan: ForgetPlan, cipher: UserCipher) -> None:
    """Follow provenance until nothing new depends on a forgotten item (a fixpoint)."""
    message_links = Memory.source_messages.through.objects.filter(
        memory__user=user, memory__mode=mode
    )
    parent_links = Memory.derived_from.through.objects.filter(
        from_memory__user=user, from_memory__mode=mode
    )
    seen_messages: set[UUID] = set()
    seen_memories: set[UUID] = set()
    while True:
        new_messages = plan.message_ids - seen_messages
        new_memories = plan.memory_ids - seen_memories
        if not new_messages and not new_memories:
            break
        seen_messages |= new_messages
        seen_memories |= new_memories
        _follow_parents(parent_links.filter(from_memory_id__in=new_memories), plan)
        touched_sessions = set(
            Message.objects.filter(pk__in=new_messages).values_list("session_id", flat=True)
        )
        dependants = (
            set(
                message_links.filter(message_id__in=new_messages).values_list(
                    "memory_id", flat=True
                )
            )
            | set(
                parent_links.filter(to_memory_id__in=new_memories).values_list(
                    "from_memory_id", flat=True
                )
            )
            | set(
                Memory.objects.for_owner(user=user, mode=mode)
                .filter(kind=MemoryKind.SESSION_SUMMARY, session_id__in=touched_sessions)
                .values_list("pk", flat=True)
            )
        ) - plan.memory_ids
        sources = _links(message_links.filter(memory_id__in=dependants), "memory_id", "message_id")
        parents = _links(
            parent_links.filter(from_memory_id__in=dependants), "from_memory_id", "to_memory_id"
        )
        for memory in Memory.objects.for_owner(user=user, mode=mode).filter(pk__in=dependants):
            _decide(
                memory,
                sources=sources.get(memory.pk, set()),
                parents=parents.get(memory.pk, set()),
                plan=plan,
                cipher=cipher,
            )
    plan.reactivate_ids -= plan.memory_ids
    plan.regenerate_ids -= plan.memory_ids


def _follow_parents(links: Any, plan: ForgetPlan) -> None:
    """Look down from deleted memories to the superseded rows they had absorbed."""
    rows = links.filter(to_memory__status=MemoryStatus.SUPERSEDED).values_list(
        "from_memory__kind", "to_memory_id", "to_memory__kind"
    )
    for child_kind, parent_id, parent_kind in rows:
        if child_kind == MemoryKind.THEME:
            plan.reactivate_ids.add(parent_id)
        elif child_kind == parent_kind:
            # A near-duplicate merged into a forgotten fact is that same fact: it goes too.
            plan.memory_ids.add(parent_id)


def _links(links: Any, owner: str, target: str) -> dict[UUID, set[UUID]]:
    found: dict[UUID, set[UUID]] = {}
    for owner_id, target_id in links.values_list(owner, target):
        found.setdefault(owner_id, set()).add(target_id)
    return found


def _decide(
    memory: Memory,
    *,
    sources: set[UUID],
    parents: set[UUID],
    plan: ForgetPlan,
    cipher: UserCipher,
) -> None:
    """Delete, rewrite or keep one memory that depends on something forgotten."""
    surviving_sources = sources - plan.message_ids
    surviving_parents = parents - plan.memory_ids
    if memory.kind == MemoryKind.THEME:
        # A theme of a single surviving episode says nothing the episode does not.
        if len(surviving_parents) >= 2 and is_generated(memory, cipher, THEME_GENERATOR):
            plan.regenerate_ids.add(memory.pk)
        else:
            plan.memory_ids.add(memory.pk)
        return
    if memory.kind == MemoryKind.SESSION_SUMMARY:
        if surviving_sources and is_generated(memory, cipher, COMPACTION_GENERATOR):
            plan.regenerate_ids.add(memory.pk)
        else:
            # A summary written from the whole session may quote the forgotten messages.
            plan.memory_ids.add(memory.pk)
        return
    if surviving_sources or surviving_parents:
        lost = len(sources - surviving_sources) + len(parents - surviving_parents)
        plan.evidence_lost[memory.pk] = lost
        return
    plan.memory_ids.add(memory.pk)


def regenerate(memory: Memory, *, cipher: UserCipher, embedder: Embedder) -> None:
    """Rewrite a theme or compaction from what survives of its sources, dropping its history."""
    if memory.kind == MemoryKind.THEME:
        # Runs after the deletes: the forgotten episodes and their links are already gone.
        parents = Memory.objects.for_owner(user=memory.user_id, mode=memory.mode_id).filter(
            derivatives=memory
        )
        content, payload = compose_theme([decrypt_memory(p, cipher) for p in parents])
    else:
        messages = Message.objects.filter(derived_memories=memory).order_by("seq")
        sources = [
            SummarySource(
                seq=m.seq,
                role=m.role,
                content=open_message(m, cipher),
                created_at=m.created_at,
            )
            for m in messages
        ]
        content = compose_compaction(sources)
        old = open_payload(memory, cipher)
        payload = {**old, "through_seq": sources[-1].seq}
    rewrite_summary(
        memory,
        content=content,
        payload=payload,
        cipher=cipher,
        embedder=embedder,
        keep_history=False,
    )


def restore(memory: Memory, version: MemoryVersion, cipher: UserCipher, embedder: Embedder) -> None:
    """Put back the content a memory had before an edit that is being forgotten."""
    content = open_version_content(version, cipher)
    fields = seal_content(
        memory,
        cipher=cipher,
        content=content,
        embedding=embedder.embed([content])[0],
        embedding_model=embedder.name,
    )
    fields += seal_payload(memory, cipher=cipher, payload=open_version_payload(version, cipher))
    memory.updated_at = timezone.now()
    memory.save(update_fields=[*fields, "updated_at"])


def weaken(memory: Memory, *, lost: int, plan: ForgetPlan, cipher: UserCipher) -> None:
    """Take forgotten evidence off a memory that other evidence keeps.

    The payload's quote came from the messages in its `message_ids`: if one of them is
    forgotten, the quote goes too, or "why do you remember this?" would still show it.
    """
    memory.evidence_count = max(1, memory.evidence_count - lost)
    fields = ["evidence_count"]
    payload = open_payload(memory, cipher)
    quoted = (
        {str(i) for i in payload.get("message_ids", [])} if isinstance(payload, dict) else set()
    )
    forgotten = {str(i) for i in plan.message_ids}
    if quoted & forgotten:
        payload["message_ids"] = sorted(quoted - forgotten)
        payload.pop("quote", None)
        fields += seal_payload(memory, cipher=cipher, payload=payload)
    memory.save(update_fields=fields)
