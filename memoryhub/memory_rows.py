"""The one module that owns a memory row: its scope, its sealed form, and opening it.

Below services and queries, which both go through it. Sealing writes everything that follows
from a memory's text at once (ciphertext, blind index, embedding and its model, and the tags
`personal_data` and `is_flagged`), so no writer can change the text and forget the rest.
Opening decrypts a row into a `MemoryItem`, the only form in which a memory leaves the domain.
A memory's earlier versions are part of its row's history and are sealed here too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_noop

from memoryhub.errors import NotFoundError
from memoryhub.injection import looks_like_instructions
from memoryhub.keyring import UserCipher
from memoryhub.models import Memory, MemoryQuerySet, MemoryStatus, MemoryVersion, Mode, User
from memoryhub.models.memories import RECALLABLE_CONFIDENCES
from memoryhub.personal_data import tag_personal_data
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


def memories_of(*, user: User, mode: Mode | None) -> MemoryQuerySet:
    """The scoped queryset every other read starts from (rows only; nothing is decrypted)."""
    # Security invariant: every memory read starts here, scoped by owner (and mode unless None).
    return Memory.objects.for_owner(user=user, mode=mode)


def recallable_sql(*, user: User, mode: Mode) -> tuple[str, list[Any]]:
    """`memories_of(user, mode).recallable()` for hand-written SQL: a FROM and WHERE over `m`.

    The hot fixed-shape reads (recall's candidates, context layers, speaker cues) send their
    own statements: the ORM's compile cost more Python than the rest of such a read (issue 34).
    """
    # Security invariant: as in memories_of, the owner and mode scope comes first.
    sql = (
        f"FROM {Memory._meta.db_table} AS m"  # Our own table name only.
        " WHERE m.user_id = %s AND m.mode_id = %s AND m.status = %s AND m.confidence = ANY(%s)"
    )
    confidences = [confidence.value for confidence in RECALLABLE_CONFIDENCES]
    return sql, [user.pk, mode.pk, MemoryStatus.ACTIVE.value, confidences]


def get_memory_row(*, user: User, mode: Mode, memory_id: UUID | str) -> Memory:
    """One memory row of this user and mode; another owner's id is NotFound, not Forbidden."""
    try:
        return memories_of(user=user, mode=mode).get(pk=memory_id)
    except (Memory.DoesNotExist, ValueError, ValidationError):
        raise NotFoundError(gettext_noop("memory not found")) from None


def seal_content(
    memory: Memory,
    *,
    cipher: UserCipher,
    content: str,
    embedding: list[float] | None,
    embedding_model: str,
    slot: str | None = None,
    known_personal_data: Iterable[str] = (),
    is_known_flagged: bool = False,
) -> list[str]:
    """Seal a (new) text into the row with all that follows from it; return the fields set.

    The tags are the text's own (and its slot's), plus what the writer knows from outside the
    text (the quote an extraction came from, the episodes a theme covers). An edit seals anew,
    so the tags of an old text never outlive it. `embedding_model` names the model that made
    `embedding` (memoryhub/embeddings.py MODELS): searches compare only vectors of one model.
    """
    # Security invariant: only ciphertext reaches the ORM; the blind index holds keyed hashes.
    memory.content_ciphertext = cipher.encrypt(
        content, table=MEMORY_TABLE, row_id=memory.pk, field="content"
    )
    memory.blind_tokens = cipher.memory_index(content)
    memory.embedding = embedding
    memory.embedding_model = embedding_model if embedding is not None else ""
    categories = {str(c) for c in tag_personal_data(content, slot=slot)}
    memory.personal_data = sorted(categories | set(known_personal_data))
    # Instruction-like text is still stored, as data: the flag shows it to the user and recall
    # fences it; it never gains authority anywhere.
    memory.is_flagged = is_known_flagged or looks_like_instructions(content)
    return [
        "content_ciphertext",
        "blind_tokens",
        "embedding",
        "embedding_model",
        "personal_data",
        "is_flagged",
    ]


def seal_payload(
    memory: Memory, *, cipher: UserCipher, payload: dict[str, Any] | None
) -> list[str]:
    """Seal a payload into the row (an empty one is stored as none); return the field set."""
    memory.payload_ciphertext = (
        cipher.encrypt_json(payload, table=MEMORY_TABLE, row_id=memory.pk, field="payload")
        if payload
        else None
    )
    return ["payload_ciphertext"]


def open_content(memory: Memory, cipher: UserCipher) -> str:
    """The row's text (the caller audits the read where a person or agent sees it)."""
    return cipher.decrypt(
        memory.content_ciphertext, table=MEMORY_TABLE, row_id=memory.pk, field="content"
    )


def open_payload(memory: Memory, cipher: UserCipher) -> dict[str, Any]:
    """The row's payload; {} when it has none."""
    payload: dict[str, Any] = cipher.decrypt_json(
        memory.payload_ciphertext, table=MEMORY_TABLE, row_id=memory.pk, field="payload"
    )
    return payload


def item_of(
    memory: Memory, *, content: str, payload: dict[str, Any] | None, score: float | None = None
) -> MemoryItem:
    """The item of a row whose plaintext is already at hand (as when it was just sealed)."""
    return MemoryItem(
        id=memory.id,
        kind=memory.kind,
        content=content,
        payload=payload or {},
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


def decrypt_memory(memory: Memory, cipher: UserCipher, *, score: float | None = None) -> MemoryItem:
    """Open one memory row with its owner's cipher."""
    return item_of(
        memory,
        content=open_content(memory, cipher),
        payload=open_payload(memory, cipher),
        score=score,
    )


def decrypt_memories(memories: Iterable[Memory], cipher: UserCipher) -> list[MemoryItem]:
    return [decrypt_memory(memory, cipher) for memory in memories]


def keep_version(
    memory: Memory, *, cipher: UserCipher, changed_by_type: str, changed_by_id: str, reason: str
) -> MemoryVersion:
    """Save the row's current text, payload, kind, confidence, status and source as an earlier
    version, before they change (what `as_of` and the history read back)."""
    version = MemoryVersion(
        memory=memory,
        changed_by_type=changed_by_type,
        changed_by_id=changed_by_id,
        reason=reason,
        kind=memory.kind,
        confidence=memory.confidence,
        status=memory.status,
        source=memory.source,
    )
    seal_version(
        version,
        cipher=cipher,
        content=open_content(memory, cipher),
        payload=open_payload(memory, cipher),
    )
    version.save(force_insert=True)
    return version


def seal_version(
    version: MemoryVersion, *, cipher: UserCipher, content: str, payload: dict[str, Any]
) -> None:
    """Encrypt an earlier version's text and payload into the (unsaved) row."""
    version.content_ciphertext = cipher.encrypt(
        content, table=VERSION_TABLE, row_id=version.pk, field="content"
    )
    version.payload_ciphertext = cipher.encrypt_json(
        payload, table=VERSION_TABLE, row_id=version.pk, field="payload"
    )


def open_version_content(version: MemoryVersion, cipher: UserCipher) -> str:
    return cipher.decrypt(
        version.content_ciphertext, table=VERSION_TABLE, row_id=version.pk, field="content"
    )


def open_version_payload(version: MemoryVersion, cipher: UserCipher) -> dict[str, Any]:
    payload: dict[str, Any] = cipher.decrypt_json(
        version.payload_ciphertext, table=VERSION_TABLE, row_id=version.pk, field="payload"
    )
    return payload
