"""Store extracted items as evidence: dedup, the confidence ladder, contradictions, provenance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from typing import Any
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from memoryhub import text_patterns
from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder
from memoryhub.errors import ContentTooLargeError, InvalidInputError
from memoryhub.extraction import ExtractedItem, Transcript
from memoryhub.extraction.base import normalise_text
from memoryhub.injection import looks_like_instructions
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.memory_rows import keep_version, open_content, open_payload
from memoryhub.models import (
    IMPORTED_FOR_REVIEW_END_REASON,
    ActorType,
    Confidence,
    Memory,
    MemorySource,
    Session,
)
from memoryhub.personal_data import tag_personal_data
from memoryhub.services.confidence import (
    CONFLICTS_WITH,
    LADDER_KINDS,
    LIVE_STATUSES,
    climb_ladder,
    drop_conflict_mark,
    is_recallable,
    live_slot_rows,
    status_for,
    supersede,
)
from memoryhub.services.memories import NewMemory, build_memory
from memoryhub.services.quotas import (
    SEAL_OVERHEAD_BYTES,
    is_within_memory_quota,
    lock_usage,
)
from memoryhub.services.write_checks import check_content, check_writable
from memoryhub.vector_search import cosine_distance

# A near-duplicate is close in meaning *and* in wording: similar embeddings alone would merge
# "lives in Paris" with "lives in Lyon" (0.68) and similar words alone "tea" with "coffee".
DUPLICATE_MIN_SIMILARITY = 0.9
DUPLICATE_MIN_WORD_OVERLAP = 0.6
DUPLICATE_SEARCH_LIMIT = 5


@dataclass(frozen=True)
class StoreReport:
    """What one batch of items did to the user's memories."""

    created: tuple[UUID, ...] = ()
    reinforced: tuple[UUID, ...] = ()
    superseded: tuple[UUID, ...] = ()
    conflicts: tuple[UUID, ...] = ()
    rejected: int = 0
    # New items not stored because the user or workspace is at a memory quota.
    over_quota: int = 0

    @property
    def written(self) -> int:
        return len(self.created) + len(self.reinforced)


@dataclass
class _Batch:
    """Mutable state of one `store_items` call (kept private; reported as a StoreReport)."""

    session: Session
    cipher: UserCipher
    transcript: Transcript
    extractor_name: str
    # The model that embeds the batch's items (their vectors are compared with stored ones).
    embedding_model: str
    # Some user message of the session tried to override the assistant's instructions.
    is_jailbreak_attempt: bool = False
    # A conversation from an import the user has not trusted: all it yields waits for review.
    is_awaiting_review: bool = False
    created: list[UUID] = field(default_factory=list)
    reinforced: list[UUID] = field(default_factory=list)
    superseded: list[UUID] = field(default_factory=list)
    conflicts: list[UUID] = field(default_factory=list)
    over_quota: int = 0


def store_items(
    *,
    session: Session,
    items: Sequence[ExtractedItem],
    transcript: Transcript,
    embedder: Embedder,
    actor: Actor,
    extractor_name: str,
) -> StoreReport:
    """Write grounded items of one session: dedup, climb the ladder, supersede, keep provenance.

    The caller must have grounded the items (`split_grounded`); items with unusable content are
    skipped and counted as rejected. Runs in one transaction. Raises MemoryPausedError.
    """
    # The one door every extracted write goes through: a paused user, or a mode with memory
    # off, gets nothing new.
    check_writable(session.user, actor, session.mode)
    items, unusable = _usable_items(items, transcript)
    if not items:
        return StoreReport(rejected=unusable)
    batch = _Batch(
        session=session,
        cipher=cipher_for(session.user_id),
        transcript=transcript,
        extractor_name=extractor_name,
        embedding_model=embedder.name,
        is_jailbreak_attempt=any(
            looks_like_instructions(m.content) for m in transcript.messages if m.role == "user"
        ),
        is_awaiting_review=session.end_reason == IMPORTED_FOR_REVIEW_END_REASON,
    )
    vectors = embedder.embed([item.content for item in items])
    with transaction.atomic():
        lock_usage(session.user_id)  # Before any memory row: see quotas.lock_usage.
        for item, vector in zip(items, vectors, strict=True):
            _apply_item(batch, item, vector)
        touched = [*batch.created, *batch.reinforced, *batch.superseded]
        if touched:
            record_access(
                actor=actor,
                subject_user_id=session.user_id,
                action=AuditAction.MEMORY_EXTRACT,
                object_ids=touched,
                mode=session.mode.slug,
            )
    return StoreReport(
        created=tuple(batch.created),
        reinforced=tuple(batch.reinforced),
        superseded=tuple(batch.superseded),
        conflicts=tuple(batch.conflicts),
        rejected=unusable,
        over_quota=batch.over_quota,
    )


def _usable_items(
    items: Sequence[ExtractedItem], transcript: Transcript
) -> tuple[list[ExtractedItem], int]:
    """Valid items in transcript order, keeping only the last statement of each slot."""
    position = {message.id: index for index, message in enumerate(transcript.messages)}
    valid: list[ExtractedItem] = []
    unusable = 0
    for item in items:
        try:
            check_content(item.content)
        except (InvalidInputError, ContentTooLargeError):
            unusable += 1
            continue
        valid.append(item)
    valid.sort(key=lambda item: max((position.get(i, -1) for i in item.message_ids), default=-1))
    # "My name is Alice … actually, Alex": within one session the later statement is the value.
    last_of_slot = {item.slot: index for index, item in enumerate(valid) if item.slot}
    kept = [
        item
        for index, item in enumerate(valid)
        if not item.slot or last_of_slot[item.slot] == index
    ]
    return kept, unusable


def is_explicit_statement(item: ExtractedItem) -> bool:
    """Say whether the user stated the item outright ("remember that …", a slot correction)."""
    return item.is_explicit or (item.is_correction and item.slot is not None)


def is_vouched_for(item: ExtractedItem, *, is_jailbreak_attempt: bool = False) -> bool:
    """Say whether the user's own word makes the item trusted (medium) on first hearing.

    A first-person declaration ("My name is …", "I prefer …", "Always …"), a "remember that …"
    or a correction counts; an inferred item waits to be heard again. Text that reads like
    instructions to a model never vouches for itself, whatever an extractor made of it, and a
    session that tried to override the assistant's instructions ("from now on you are DAN")
    writes no standing instruction on its word alone: that is how a jailbreak would persist.
    """
    if looks_like_instructions(item.quote):
        return False
    if is_jailbreak_attempt and item.kind == "procedure":
        return False
    return item.is_declared or is_explicit_statement(item)


def _apply_item(batch: _Batch, item: ExtractedItem, vector: list[float]) -> None:
    session = batch.session
    slot_hash = batch.cipher.slot_hash(item.slot) if item.slot else ""
    duplicate: Memory | None = None
    conflicting: list[Memory] = []
    if slot_hash:
        for row in live_slot_rows(user=session.user, mode=session.mode, slot_hash=slot_hash):
            if _has_same_value(row, item, batch.cipher):
                duplicate = duplicate or row
            else:
                conflicting.append(row)
    if duplicate is None:
        duplicate = _find_near_duplicate(batch, item, vector, slot_hash)
    if duplicate is not None:
        _reinforce(batch, duplicate, item, conflicting)
    else:
        _create(batch, item, vector, conflicting)


def cite_messages(memory: Memory, message_ids: Sequence[str | UUID]) -> None:
    """Record which messages a memory was derived from (provenance); repeats are ignored."""
    through = Memory.source_messages.through
    through.objects.bulk_create(
        [through(memory_id=memory.pk, message_id=message_id) for message_id in message_ids],
        ignore_conflicts=True,
    )


def _has_same_value(row: Memory, item: ExtractedItem, cipher: UserCipher) -> bool:
    """Say whether a memory of the item's slot holds the same value ("Lyon" = "lives in Lyon")."""
    payload = open_payload(row, cipher)
    content = normalise_text(open_content(row, cipher))
    if normalise_text(item.content) == content:
        return True
    if not item.value:
        return False
    value = normalise_text(item.value)
    if payload.get("value"):
        return normalise_text(str(payload["value"])) == value
    # A row written without a value (an agent's remember): look for the value's words in it.
    return text_patterns.whole_phrase(value).search(content) is not None


def _find_near_duplicate(
    batch: _Batch, item: ExtractedItem, vector: list[float], slot_hash: str
) -> Memory | None:
    session = batch.session
    rows = (
        Memory.objects.for_owner(user=session.user, mode=session.mode)
        .filter(kind=item.kind, status__in=LIVE_STATUSES, valid_to__isnull=True)
        .annotate(distance=cosine_distance(vector, model=batch.embedding_model))
        .filter(distance__lte=1 - DUPLICATE_MIN_SIMILARITY)
        .order_by("distance")
    )
    if slot_hash:
        # Rows of this slot were compared by value above; a different value is no duplicate.
        rows = rows.filter(slot_hash="")
    # Word overlap on the keyed blind index: normalised tokens, compared without plaintext.
    words = set(batch.cipher.memory_index(item.content))
    for row in rows.select_for_update(of=("self",))[:DUPLICATE_SEARCH_LIMIT]:
        other = set(row.blind_tokens)
        union = words | other
        if union and len(words & other) / len(union) >= DUPLICATE_MIN_WORD_OVERLAP:
            return row
    return None


def _payload(batch: _Batch, item: ExtractedItem) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "quote": item.quote,
        "message_ids": list(item.message_ids),
        "extractor": batch.extractor_name,
    }
    if item.slot:
        payload["slot"] = item.slot
    if item.value:
        payload["value"] = item.value
    if item.event_type:
        payload["type"] = item.event_type
    if item.event_date:
        payload["date"] = item.event_date.isoformat()
    if item.due_date:
        payload["due_date"] = item.due_date.isoformat()
    if item.topics:
        payload["topics"] = list(item.topics)
    return payload


def _occurred_at(batch: _Batch, item: ExtractedItem) -> datetime | None:
    if item.kind != "episode":
        return None
    said_at = {m.id: m.created_at for m in batch.transcript.messages}
    when = max((said_at[i] for i in item.message_ids if i in said_at), default=None)
    if item.event_date is not None and (when is None or when.date() != item.event_date):
        return datetime.combine(item.event_date, time(12), tzinfo=UTC)
    return when


def _create(
    batch: _Batch, item: ExtractedItem, vector: list[float], conflicting: list[Memory]
) -> None:
    session = batch.session
    # At a quota the item is skipped and counted, before any older value is superseded: the
    # run still finishes (an exception would fail it and its retries would fail the same way).
    estimate = len(item.content.encode()) + SEAL_OVERHEAD_BYTES
    if not is_within_memory_quota(user=session.user, memories=1, stored_bytes=estimate):
        batch.over_quota += 1
        return
    confidence = (
        climb_ladder(
            current=None,
            evidence_count=1,
            is_explicit=is_vouched_for(item, is_jailbreak_attempt=batch.is_jailbreak_attempt),
        )
        if item.kind in LADDER_KINDS
        else Confidence.MEDIUM
    )
    if batch.is_awaiting_review:
        confidence = Confidence.CANDIDATE
    payload = _payload(batch, item)
    supersedes: Memory | None = None
    current = [row for row in conflicting if is_recallable(row.confidence)]
    if conflicting and not is_recallable(confidence) and current:
        # Only heard once against a value we trust: keep the old one current and let the
        # user decide. Older unconfirmed candidates of the slot give way to this newer one.
        payload[CONFLICTS_WITH] = str(current[0].pk)
        batch.superseded += supersede([row for row in conflicting if row not in current])
    elif conflicting:
        supersedes = conflicting[0]
        batch.superseded += supersede(conflicting)
    new = NewMemory(
        kind=item.kind,
        content=item.content,
        importance=item.importance,
        source=MemorySource.EXTRACTED,
        payload=payload,
        confidence=confidence,
        status=status_for(confidence),
        occurred_at=_occurred_at(batch, item),
        slot=item.slot,
        # The text's own tags are computed when it is sealed; the quote's are known here.
        personal_data=tuple(sorted(str(category) for category in tag_personal_data(item.quote))),
    )
    row = build_memory(
        new,
        user=session.user,
        mode=session.mode,
        cipher=batch.cipher,
        embedding=vector,
        embedding_model=batch.embedding_model,
        session_id=session.pk,
        agent_id=session.agent_id,
    )
    row.supersedes = supersedes
    row.save()
    cite_messages(row, item.message_ids)
    batch.created.append(row.pk)
    if CONFLICTS_WITH in payload:
        batch.conflicts.append(row.pk)


def _reinforce(batch: _Batch, row: Memory, item: ExtractedItem, conflicting: list[Memory]) -> None:
    cited = {str(pk) for pk in row.source_messages.values_list("pk", flat=True)}
    if set(item.message_ids) <= cited:
        # The same words again (a real-time correction, then the end-of-session run): no news.
        return
    row.evidence_count += 1
    was_recallable = is_recallable(row.confidence)
    confidence = row.confidence
    # An untrusted import's conversation counts as evidence but lifts nothing before review.
    if row.kind in LADDER_KINDS and not batch.is_awaiting_review:
        confidence = climb_ladder(
            current=row.confidence,
            evidence_count=row.evidence_count,
            is_explicit=is_vouched_for(item, is_jailbreak_attempt=batch.is_jailbreak_attempt),
            is_heard_in_another_session=row.session_id != batch.session.pk,
        )
    if confidence != row.confidence:
        # A step up the ladder is a version: as-of shows the candidate as one until then.
        keep_version(
            row,
            cipher=batch.cipher,
            changed_by_type=ActorType.SYSTEM,
            changed_by_id="extraction",
            reason="evidence",
        )
    row.confidence = confidence
    row.status = status_for(row.confidence)
    fields = ["evidence_count", "confidence", "status", "updated_at"]
    if item.slot and not row.slot_hash:
        row.slot_hash = batch.cipher.slot_hash(item.slot)
        fields.append("slot_hash")
    if is_recallable(row.confidence) and conflicting:
        # A trusted value heard again is the slot's value: other values of the slot give way.
        row.supersedes = conflicting[0]
        batch.superseded += supersede(conflicting)
        fields.append("supersedes")
    if is_recallable(row.confidence) and not was_recallable:
        # No longer waiting on the user: drop the pending-conflict mark.
        drop_conflict_mark(row, batch.cipher)
        fields.append("payload_ciphertext")
    row.updated_at = timezone.now()
    row.save(update_fields=fields)
    cite_messages(row, item.message_ids)
    batch.reinforced.append(row.pk)
