"""Write memories: remember, edit (keeping the previous version), delete."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder
from memoryhub.errors import (
    InvalidInputError,
)
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.memory_rows import (
    MemoryItem,
    get_memory_row,
    item_of,
    keep_version,
    open_content,
    open_payload,
    seal_content,
    seal_payload,
)
from memoryhub.models import (
    ActorType,
    Confidence,
    IdempotentWrite,
    Importance,
    Memory,
    MemoryKind,
    MemorySource,
    MemoryStatus,
    Mode,
    User,
)
from memoryhub.replicas import note_write
from memoryhub.services.forget import ForgetSelector, forget
from memoryhub.services.quotas import check_memory_quota, lock_usage, stored_size
from memoryhub.services.write_checks import check_content, check_writable


def _choice(value: str, choices: type[Any], field: str) -> str:
    if value not in choices.values:
        allowed = ", ".join(choices.values)
        raise InvalidInputError(
            gettext_noop("{field} must be one of: {allowed}"), field=field, allowed=allowed
        )
    return value


@dataclass(frozen=True)
class NewMemory:
    """One memory to write; the fields an agent or the extractor can set."""

    kind: str
    content: str
    importance: str = Importance.NORMAL
    source: str = MemorySource.AGENT
    payload: dict[str, Any] | None = None
    confidence: str | None = None
    status: str = MemoryStatus.ACTIVE
    occurred_at: datetime | None = None
    created_at: datetime | None = None
    slot: str | None = None
    # Tags known from outside the text (the text's own are computed when it is sealed).
    personal_data: tuple[str, ...] = ()
    is_flagged: bool = False
    idempotency_key: str | None = None


def _default_confidence(source: str) -> str:
    # An explicit remember by the user, an agent or a reviewer is at least "medium";
    # extracted items start as candidates until heard again (the confidence ladder).
    if source == MemorySource.EXTRACTED:
        return Confidence.CANDIDATE
    if source in {MemorySource.USER, MemorySource.REVIEWER}:
        return Confidence.HIGH
    return Confidence.MEDIUM


def build_memory(
    item: NewMemory,
    *,
    user: User,
    mode: Mode,
    cipher: UserCipher,
    embedding: list[float] | None,
    embedding_model: str = "",
    session_id: UUID | None = None,
    agent_id: UUID | None = None,
) -> Memory:
    """Validate and seal one memory into an unsaved row (no database access).

    `embedding_model` names the model that made `embedding` (required with one).
    """
    content = check_content(item.content)
    _choice(item.kind, MemoryKind, "kind")
    _choice(item.importance, Importance, "importance")
    _choice(item.source, MemorySource, "source")
    confidence = _choice(
        item.confidence or _default_confidence(item.source), Confidence, "confidence"
    )
    if item.payload is not None and not isinstance(item.payload, dict):
        raise InvalidInputError(gettext_noop("payload must be a JSON object"))
    now = timezone.now()
    memory = Memory(
        id=uuid4(),
        user=user,
        mode=mode,
        kind=item.kind,
        confidence=confidence,
        status=item.status,
        source=item.source,
        importance=item.importance,
        slot_hash=cipher.slot_hash(item.slot) if item.slot else "",
        created_at=item.created_at or now,
        updated_at=now,
        occurred_at=item.occurred_at,
        valid_from=item.created_at or now,
        session_id=session_id,
        agent_id=agent_id,
        idempotency_key=item.idempotency_key,
    )
    seal_content(
        memory,
        cipher=cipher,
        content=content,
        embedding=embedding,
        embedding_model=embedding_model,
        slot=item.slot,
        known_personal_data=item.personal_data,
        is_known_flagged=item.is_flagged,
    )
    seal_payload(memory, cipher=cipher, payload=item.payload)
    return memory


def lock_slot(*, user: User, mode: Mode, slot_hash: str) -> None:
    """Hold the lock of one (user, mode, slot) until the transaction ends (call inside atomic).

    Row locks cannot guard an empty slot: two writers would each find it empty and each write
    a current value. With this lock the second waits, then sees the first writer's value.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            [f"memory-slot:{user.pk}:{mode.pk}:{slot_hash}"],
        )


def remember_many(
    *,
    user: User,
    mode: Mode,
    items: Sequence[NewMemory],
    actor: Actor,
    embedder: Embedder,
    session_id: UUID | None = None,
    agent_id: UUID | None = None,
    source_message_ids: Sequence[UUID] = (),
    idempotent_write: IdempotentWrite | None = None,
    cipher: UserCipher | None = None,
) -> list[MemoryItem]:
    """Store several memories at once, all or nothing (one embedding batch, one insert).

    `idempotent_write` (services/idempotency.py) is saved with the memories' ids, first, so
    that a concurrent write with the same key waits on its unique key and then fails.
    `cipher` is the user's, when the caller already opened it (saves reading the key again).
    """
    check_writable(user, actor, mode)
    if not items:
        raise InvalidInputError(gettext_noop("nothing to remember: items is empty"))
    if cipher is not None and cipher.user_id != user.pk:
        raise ValueError("remember_many was given another user's cipher")
    cipher = cipher or cipher_for(user)
    contents = [check_content(item.content) for item in items]
    vectors = embedder.embed(contents)
    rows = [
        build_memory(
            item,
            user=user,
            mode=mode,
            cipher=cipher,
            embedding=vector,
            embedding_model=embedder.name,
            session_id=session_id,
            agent_id=agent_id,
        )
        for item, vector in zip(items, vectors, strict=True)
    ]
    with transaction.atomic():
        check_memory_quota(
            user=user, memories=len(rows), stored_bytes=sum(stored_size(row) for row in rows)
        )
        if idempotent_write is not None:
            idempotent_write.memory_ids = [row.id for row in rows]
            idempotent_write.save(force_insert=True)
        Memory.all_owners.bulk_create(rows)
        if source_message_ids:
            through = Memory.source_messages.through
            through.objects.bulk_create(
                [
                    through(memory_id=row.id, message_id=mid)
                    for row in rows
                    for mid in source_message_ids
                ]
            )
        note_write(user.pk)
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.MEMORY_CREATE,
            object_ids=[row.id for row in rows],
            mode=mode.slug,
        )
    # The items come from the plaintext at hand: nothing just sealed is opened again.
    return [
        item_of(row, content=content, payload=item.payload)
        for row, content, item in zip(rows, contents, items, strict=True)
    ]


def remember(
    *, user: User, mode: Mode, item: NewMemory, actor: Actor, embedder: Embedder, **kwargs: Any
) -> MemoryItem:
    """Store one memory; see `remember_many`."""
    return remember_many(
        user=user, mode=mode, items=[item], actor=actor, embedder=embedder, **kwargs
    )[0]


_CONFIDENCE_RANK = {Confidence.CANDIDATE: 0, Confidence.MEDIUM: 1, Confidence.HIGH: 2}


def _take_provenance(memory: Memory, *, source: str, agent_id: UUID | None) -> list[str]:
    """Make an edited memory the editor's; return the fields changed (not saved here)."""
    # Security invariant: what the user said, rewritten by an agent, is no longer the user's
    # word. It becomes the agent's, and never keeps more confidence than the agent's own word.
    _choice(source, MemorySource, "source")
    earned = _default_confidence(source)
    if _CONFIDENCE_RANK[Confidence(memory.confidence)] > _CONFIDENCE_RANK[Confidence(earned)]:
        memory.confidence = earned
    memory.source = source
    fields = ["source", "confidence"]
    if agent_id is not None:
        memory.agent_id = agent_id
        fields.append("agent")
    return fields


def edit_memory(
    *,
    user: User,
    mode: Mode,
    memory_id: UUID | str,
    actor: Actor,
    embedder: Embedder,
    content: str | None = None,
    importance: str | None = None,
    payload: dict[str, Any] | None = None,
    confidence: str | None = None,
    source: str | None = None,
    agent_id: UUID | None = None,
) -> MemoryItem:
    """Change a memory, keeping its previous content as a version.

    New content is sealed anew, tags and all (memory_rows.seal_content). New content or
    payload is the editor's word: `source` (by default "agent" for an agent actor, else
    unchanged) and `agent_id` become the memory's provenance.
    """
    check_writable(user, actor, mode)
    if source is None and actor.actor_type == ActorType.AGENT:
        source = MemorySource.AGENT
    if payload is not None and not isinstance(payload, dict):
        raise InvalidInputError(gettext_noop("payload must be a JSON object"))
    if content is not None:
        content = check_content(content)
    cipher = cipher_for(user)
    with transaction.atomic():
        lock_usage(user.pk)  # Before the memory row: see quotas.lock_usage.
        memory = get_memory_row(user=user, mode=mode, memory_id=memory_id)
        memory = Memory.all_owners.select_for_update().get(pk=memory.pk)
        fields = ["updated_at"]
        size_before = stored_size(memory)
        # A new confidence alone is a new version too: the history and `as_of` show it.
        is_new_confidence = confidence is not None and confidence != memory.confidence
        is_new_words = content is not None or payload is not None
        if is_new_words or is_new_confidence:
            keep_version(
                memory,
                cipher=cipher,
                changed_by_type=actor.actor_type,
                changed_by_id=actor.actor_id,
                reason="edit" if is_new_words else "confidence",
            )
        text = content if content is not None else open_content(memory, cipher)
        data = payload if payload is not None else open_payload(memory, cipher)
        if content is not None:
            # The slot an extraction filled is in the payload; it tags the text as before.
            slot = data.get("slot")
            fields += seal_content(
                memory,
                cipher=cipher,
                content=content,
                embedding=embedder.embed([content])[0],
                embedding_model=embedder.name,
                slot=slot if isinstance(slot, str) else None,
            )
        if payload is not None:
            fields += seal_payload(memory, cipher=cipher, payload=payload)
        if importance is not None:
            memory.importance = _choice(importance, Importance, "importance")
            fields.append("importance")
        if confidence is not None:
            memory.confidence = _choice(confidence, Confidence, "confidence")
            fields.append("confidence")
        if source is not None and (content is not None or payload is not None):
            fields += _take_provenance(memory, source=source, agent_id=agent_id)
        # A longer text takes more of the byte quotas; the memory count does not change.
        check_memory_quota(user=user, memories=0, stored_bytes=stored_size(memory) - size_before)
        memory.updated_at = timezone.now()
        memory.save(update_fields=fields)
        note_write(user.pk)
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.MEMORY_EDIT,
            object_ids=[memory.pk],
            mode=mode.slug,
        )
    return item_of(memory, content=text, payload=data)


def delete_memories(
    *,
    user: User,
    mode: Mode,
    memory_ids: Sequence[UUID | str],
    actor: Actor,
    action: AuditAction = AuditAction.MEMORY_DELETE,
) -> int:
    """Delete memories of this user and mode for good, with everything derived from them.

    It is a forget by ids: the one cascade takes their versions, what was built on them
    (facts, themes, answers and candidates, graph nodes) and rewrites summaries. Returns how
    many of the named memories were deleted.
    """
    receipt = forget(
        user=user,
        mode=mode,
        selector=ForgetSelector(memory_ids=tuple(memory_ids)),
        actor=actor,
        action=action,
    )
    return len({str(i) for i in memory_ids} & {str(i) for i in receipt.memory_ids})
