"""An exact repeat of a memory adds evidence to it instead of storing a copy."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from django.db import connection, transaction
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.memory_rows import MemoryItem, decrypt_memory, keep_version, memories_of
from memoryhub.models import IdempotentWrite, Memory, MemorySource, Mode, User
from memoryhub.replicas import note_write
from memoryhub.services.confidence import LADDER_KINDS, LIVE_STATUSES, climb_ladder, status_for
from memoryhub.services.memories import NewMemory, remember_many
from memoryhub.services.write_checks import check_content, check_writable


def _lock_contents(*, user: User, mode: Mode, contents: list[str], cipher: UserCipher) -> None:
    """Hold a lock per distinct text until the transaction ends, in one statement.

    Two requests repeating the same words at once: the second waits, then finds the first's
    memory. The locks are taken in one order, so two batches cannot wait on each other.
    """
    names = sorted({f"memory-repeat:{user.pk}:{mode.pk}:{cipher.slot_hash(c)}" for c in contents})
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(name, 0))"
            " FROM (SELECT name FROM unnest(%s::text[]) AS name ORDER BY name) AS names",
            [names],
        )


def _is_same(row: Memory, item: NewMemory, content: str, cipher: UserCipher) -> bool:
    stored = decrypt_memory(row, cipher)
    return (
        stored.content == content
        and stored.payload == (item.payload or {})
        and stored.occurred_at == item.occurred_at
    )


def _find_repeats(
    *, user: User, mode: Mode, items: Sequence[NewMemory], contents: list[str], cipher: UserCipher
) -> dict[int, Memory]:
    """Which items (by position) repeat a live memory exactly: same kind, words and payload."""
    indexes = [cipher.memory_index(content) for content in contents]
    # The blind index narrows the search to rows with the same words, without decrypting all.
    rows = list(
        memories_of(user=user, mode=mode)
        .filter(
            status__in=LIVE_STATUSES,
            kind__in={item.kind for item in items},
            blind_tokens__in=indexes,
        )
        .select_for_update()
        .order_by("created_at", "id")
    )
    repeats: dict[int, Memory] = {}
    for position, (item, content, index) in enumerate(zip(items, contents, indexes, strict=True)):
        for row in rows:
            is_candidate = row.kind == item.kind and row.blind_tokens == index
            if is_candidate and _is_same(row, item, content, cipher):
                repeats[position] = row
                break
    return repeats


def _add_evidence(row: Memory, item: NewMemory, *, cipher: UserCipher, actor: Actor) -> None:
    """Hearing the same item again climbs the confidence ladder, as extraction does."""
    row.evidence_count += 1
    confidence = row.confidence
    if row.kind in LADDER_KINDS:
        confidence = climb_ladder(
            current=row.confidence,
            evidence_count=row.evidence_count,
            # An agent's (or the user's) explicit remember is worth "medium" on its own.
            is_explicit=item.source != MemorySource.EXTRACTED,
        )
    if confidence != row.confidence:
        # A step up the ladder is a version: as-of shows the candidate as one until then.
        keep_version(
            row,
            cipher=cipher,
            changed_by_type=actor.actor_type,
            changed_by_id=actor.actor_id,
            reason="evidence",
        )
    row.confidence = confidence
    row.status = status_for(row.confidence)
    row.updated_at = timezone.now()
    row.save(update_fields=["evidence_count", "confidence", "status", "updated_at"])


def remember_unless_repeated(
    *,
    user: User,
    mode: Mode,
    items: Sequence[NewMemory],
    actor: Actor,
    embedder: Embedder,
    agent_id: UUID | None = None,
    idempotent_write: IdempotentWrite | None = None,
) -> list[MemoryItem]:
    """Store the items, all or nothing; an exact repeat of a live memory reinforces that one.

    A repeat comes back as the existing memory with one more piece of evidence (so its
    `evidence_count` is 2 or more; a new memory's is 1). `idempotent_write` is saved first, as
    `remember_many` does, and names every memory returned. Raises what `remember_many` raises.
    """
    check_writable(user, actor, mode)
    cipher = cipher_for(user)
    contents = [check_content(item.content) for item in items]
    with transaction.atomic():
        if idempotent_write is not None:
            # First: a concurrent write with the same key waits on its unique key, then fails.
            idempotent_write.memory_ids = []
            idempotent_write.save(force_insert=True)
        _lock_contents(user=user, mode=mode, contents=contents, cipher=cipher)
        repeats = _find_repeats(user=user, mode=mode, items=items, contents=contents, cipher=cipher)
        fresh = [item for position, item in enumerate(items) if position not in repeats]
        created = iter(
            remember_many(
                user=user,
                mode=mode,
                items=fresh,
                actor=actor,
                embedder=embedder,
                agent_id=agent_id,
                cipher=cipher,
            )
            if fresh
            else []
        )
        for position, row in repeats.items():
            _add_evidence(row, items[position], cipher=cipher, actor=actor)
        if repeats:
            note_write(user.pk)
            record_access(
                actor=actor,
                subject_user_id=user.pk,
                action=AuditAction.MEMORY_REINFORCE,
                object_ids=[row.pk for row in repeats.values()],
                mode=mode.slug,
            )
        stored = [
            decrypt_memory(repeats[position], cipher) if position in repeats else next(created)
            for position in range(len(items))
        ]
        if idempotent_write is not None:
            idempotent_write.memory_ids = [item.id for item in stored]
            idempotent_write.save(update_fields=["memory_ids"])
    return stored
