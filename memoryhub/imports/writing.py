"""Write import records as memories and past sessions, each once per (user, mode, source key)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from uuid import UUID, uuid4

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder
from memoryhub.errors import MemoryHubError
from memoryhub.keyring import UserCipher
from memoryhub.memory_rows import seal_version
from memoryhub.message_rows import seal_message
from memoryhub.models import (
    IMPORTED_END_REASON,
    IMPORTED_FOR_REVIEW_END_REASON,
    Agent,
    Confidence,
    ImportedItem,
    ImportJob,
    Memory,
    MemorySource,
    MemoryStatus,
    MemoryVersion,
    Message,
    Mode,
    Session,
)
from memoryhub.replicas import note_write
from memoryhub.services.extraction_queue import enqueue_extraction
from memoryhub.services.memories import NewMemory, build_memory
from memoryhub.services.quotas import check_memory_quota, stored_size
from memoryhub.services.write_checks import check_content

from .records import MemoryRecord, SessionRecord, SkippedRecord, VersionRecord


@dataclass
class BatchReport:
    """What one batch wrote: counts by kind, and the items skipped with their reason."""

    counts: dict[str, int] = field(default_factory=dict)
    skipped: list[SkippedRecord] = field(default_factory=list)

    def count(self, kind: str, number: int = 1) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + number


def _known_keys(job: ImportJob, mode: Mode, keys: Sequence[str]) -> dict[str, ImportedItem]:
    items = ImportedItem.objects.filter(user=job.user, mode=mode, source_key__in=list(keys))
    return {item.source_key: item for item in items}


def _message_text(
    content: str, report: BatchReport, *, record: SessionRecord, seq: int
) -> str | None:
    """The message's text, cut to the size cap of a live message; None (and noted) if unusable."""
    limit = settings.MEMORYHUB_MAX_CONTENT_BYTES
    text = content.replace("\x00", "").encode("utf-8", "replace")[:limit]
    text_str = text.decode("utf-8", "ignore").strip()
    if not text_str:
        report.skipped.append(
            SkippedRecord(
                key=f"{record.key}#{seq}",
                label=f"{record.label}, message {seq}",
                reason="empty message",
            )
        )
        return None
    if len(content.encode("utf-8", "replace")) > limit:
        report.count("message_shortened")
    return text_str


def write_sessions(
    *,
    job: ImportJob,
    mode: Mode,
    records: Sequence[SessionRecord],
    cipher: UserCipher,
    actor: Actor,
    report: BatchReport,
) -> None:
    """Store past sessions with their messages at their own dates; queue their extraction."""
    known = _known_keys(job, mode, [record.key for record in records])
    created: list[UUID] = []
    for record in records:
        if record.key in known:
            report.skipped.append(
                SkippedRecord(key=record.key, label=record.label, reason="already imported")
            )
            continue
        now = timezone.now()
        first = record.messages[0].created_at if record.messages else None
        last = record.messages[-1].created_at if record.messages else None
        started = record.started_at or first or now
        ended = record.ended_at or last or started
        agent = (
            Agent.objects.filter(workspace_id=job.user.workspace_id, name=record.agent).first()
            if record.agent
            else None
        )
        is_extracted = record.is_extracted and bool(record.messages)
        session = Session.objects.create(
            user=job.user,
            mode=mode,
            agent=agent,
            started_at=started,
            last_activity_at=max(ended, started),
            ended_at=max(ended, started),
            end_reason=(IMPORTED_END_REASON if job.is_trusted else IMPORTED_FOR_REVIEW_END_REASON),
            extraction_status=(
                Session.ExtractionStatus.QUEUED
                if is_extracted
                else Session.ExtractionStatus.SKIPPED
            ),
        )
        messages = []
        for seq, said in enumerate(record.messages, start=1):
            text = _message_text(said.content, report, record=record, seq=seq)
            if text is None:
                continue
            message = Message(
                id=uuid4(),
                session=session,
                seq=seq,
                role=said.role,
                created_at=said.created_at or started,
            )
            # Not embedded: a past transcript is read by extraction, not searched message by
            # message, and embedding 50 MB of chats would hold the worker for hours.
            seal_message(message, cipher=cipher, content=text, embedding=None, embedding_model="")
            messages.append(message)
        Message.objects.bulk_create(messages, batch_size=500)
        known[record.key] = ImportedItem.objects.create(
            job=job,
            user=job.user,
            mode=mode,
            source_key=record.key,
            kind="session",
            session=session,
        )
        report.count("session")
        report.count("message", len(messages))
        created.append(session.pk)
        if is_extracted:
            transaction.on_commit(partial(enqueue_extraction, session.pk))
    if created:
        note_write(job.user_id)
        record_access(
            actor=actor,
            subject_user_id=job.user_id,
            action=AuditAction.IMPORT_SESSIONS,
            object_ids=created,
            mode=mode.slug,
        )


def _stored_as(record: MemoryRecord, *, is_trusted: bool) -> tuple[str, str]:
    """The confidence and status an imported memory starts with."""
    if record.status not in (MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE) or record.valid_to:
        # A superseded or dormant version is history: it comes in as it was.
        return record.confidence or Confidence.MEDIUM, record.status
    if not is_trusted:
        return Confidence.CANDIDATE, MemoryStatus.CANDIDATE
    confidence = record.confidence or Confidence.MEDIUM
    status = MemoryStatus.CANDIDATE if confidence == Confidence.CANDIDATE else record.status
    return confidence, status


def _version(memory: Memory, version: VersionRecord, cipher: UserCipher) -> MemoryVersion:
    row = MemoryVersion(
        memory=memory,
        changed_by_type=version.changed_by,
        changed_by_id="import",
        reason=version.reason,
        created_at=version.changed_at or memory.created_at,
    )
    seal_version(row, cipher=cipher, content=version.content, payload={})
    return row


def write_memories(
    *,
    job: ImportJob,
    mode: Mode,
    records: Sequence[MemoryRecord],
    cipher: UserCipher,
    embedder: Embedder,
    actor: Actor,
    report: BatchReport,
) -> None:
    """Store memories with their own dates, confidence and earlier versions (call in atomic)."""
    known = set(_known_keys(job, mode, [record.key for record in records]))
    sessions = _known_keys(job, mode, [r.session_key for r in records if r.session_key])
    fresh: list[MemoryRecord] = []
    for record in records:
        if record.key in known:
            report.skipped.append(
                SkippedRecord(key=record.key, label=record.label, reason="already imported")
            )
            continue
        try:
            check_content(record.content)
        except MemoryHubError as error:
            report.skipped.append(
                SkippedRecord(key=record.key, label=record.label, reason=str(error))
            )
            continue
        known.add(record.key)
        fresh.append(record)
    if not fresh:
        return
    vectors = embedder.embed([record.content.strip() for record in fresh])
    rows: list[Memory] = []
    versions: list[MemoryVersion] = []
    items: list[ImportedItem] = []
    for record, vector in zip(fresh, vectors, strict=True):
        confidence, status = _stored_as(record, is_trusted=job.is_trusted)
        session_item = sessions.get(record.session_key or "")
        slot = record.payload.get("slot")
        try:
            row = build_memory(
                NewMemory(
                    kind=record.kind,
                    content=record.content,
                    importance=record.importance,
                    source=record.source if record.source in MemorySource.values else "imported",
                    payload=record.payload,
                    confidence=confidence,
                    status=status,
                    occurred_at=record.occurred_at,
                    created_at=record.created_at,
                    slot=slot if isinstance(slot, str) else None,
                ),
                user=job.user,
                mode=mode,
                cipher=cipher,
                embedding=vector,
                embedding_model=embedder.name,
                session_id=session_item.session_id if session_item else None,
            )
        except MemoryHubError as error:
            report.skipped.append(
                SkippedRecord(key=record.key, label=record.label, reason=str(error))
            )
            continue
        if status not in MemoryStatus.values:
            report.skipped.append(
                SkippedRecord(key=record.key, label=record.label, reason="unknown status")
            )
            continue
        row.updated_at = record.updated_at or row.created_at
        row.valid_to = record.valid_to
        row.last_accessed_at = record.last_used_at
        row.evidence_count = record.evidence_count
        rows.append(row)
        versions += [_version(row, version, cipher) for version in record.versions]
        items.append(
            ImportedItem(
                job=job,
                user=job.user,
                mode=mode,
                source_key=record.key,
                kind=record.kind,
                memory_id=row.id,
            )
        )
        report.count(record.kind)
    if not rows:
        return
    check_memory_quota(
        user=job.user, memories=len(rows), stored_bytes=sum(stored_size(row) for row in rows)
    )
    Memory.all_owners.bulk_create(rows)
    MemoryVersion.objects.bulk_create(versions)
    ImportedItem.objects.bulk_create(items)
    note_write(job.user_id)
    record_access(
        actor=actor,
        subject_user_id=job.user_id,
        action=AuditAction.MEMORY_IMPORT,
        object_ids=[row.id for row in rows],
        mode=mode.slug,
    )
