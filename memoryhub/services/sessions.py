"""Sessions: start, add messages (with real-time corrections), end, and working memory."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder
from memoryhub.errors import ConflictError, ContentTooLargeError, InvalidInputError, NotFoundError
from memoryhub.extraction import Transcript, TranscriptMessage, is_grounded
from memoryhub.extraction.offline import OfflineExtractor
from memoryhub.keyring import cipher_for
from memoryhub.message_rows import seal_message
from memoryhub.models import Agent, Message, Mode, Session, User
from memoryhub.replicas import note_write
from memoryhub.sealed_tables import SESSION_TABLE, WORKING_MEMORY_FIELD
from memoryhub.services.evidence import StoreReport, is_explicit_statement, store_items
from memoryhub.services.extraction_queue import enqueue_extraction
from memoryhub.services.write_checks import check_content, check_writable

logger = logging.getLogger(__name__)

# Must match every reader of working memory (forget): the ciphertext binding.


@dataclass(frozen=True)
class AddedMessage:
    """A stored message, and the memories a real-time correction in it created or changed."""

    message: Message
    report: StoreReport

    @property
    def applied_memory_ids(self) -> tuple[UUID, ...]:
        return (*self.report.created, *self.report.reinforced, *self.report.superseded)


@dataclass(frozen=True)
class WorkingMemory:
    """The session's structured scratch fields; empty once expired."""

    data: dict[str, Any]
    updated_at: datetime | None
    expires_at: datetime | None


def locate_session(session_id: UUID | str) -> Session:
    """Find a session by id alone, to learn its owner; the caller must then check access.

    Raises NotFoundError. Use `get_session` once the (user, mode) scope is known.
    """
    try:
        session = Session.objects.select_related("user", "mode").filter(pk=session_id).first()
    except (ValueError, ValidationError):
        session = None
    if session is None:
        raise NotFoundError(gettext_noop("session not found"))
    return session


def get_session(
    *, user: User, mode: Mode, session_id: UUID | str, agent: Agent | None = None
) -> Session:
    """A session of this user and mode (and of this agent, if given); anything else is NotFound."""
    try:
        session = (
            Session.objects.for_owner(user=user, mode=mode)
            .select_related("user", "mode")
            .filter(pk=session_id)
            .first()
        )
    except (ValueError, ValidationError):
        session = None
    # Security invariant: another user's, mode's or agent's session does not exist for you.
    if session is None or (
        agent is not None and session.agent_id is not None and session.agent_id != agent.pk
    ):
        raise NotFoundError(gettext_noop("session not found"))
    return session


def start_session(
    *,
    user: User,
    mode: Mode,
    actor: Actor,
    agent: Agent | None = None,
    is_incognito: bool = False,
) -> Session:
    """Open a session; an incognito one may read memory but will never write any."""
    with transaction.atomic():
        session = Session.objects.create(
            user=user, mode=mode, agent=agent, is_incognito=is_incognito
        )
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.SESSION_START,
            object_ids=[session.pk],
            mode=mode.slug,
        )
    return session


def add_message(
    *, session: Session, role: str, content: str, actor: Actor, embedder: Embedder
) -> AddedMessage:
    """Store one encrypted, embedded turn; an explicit statement or correction applies at once.

    Raises InvalidInputError, ContentTooLargeError, MemoryPausedError (the user paused memory:
    nothing is kept) and ConflictError (the session has ended).
    """
    if role not in Message.Role.values:
        raise InvalidInputError(
            gettext_noop("role must be one of: {roles}"), roles=", ".join(Message.Role.values)
        )
    content = check_content(content)
    check_writable(session.user, actor, session.mode)
    if not session.is_open:
        raise ConflictError(gettext_noop("the session has ended"))
    cipher = cipher_for(session.user)
    # Embedding is the slow part: do it before taking the session lock.
    embedding = embedder.embed([content])[0]
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        if not locked.is_open:
            raise ConflictError(gettext_noop("the session has ended"))
        last = locked.messages.order_by("-seq").values_list("seq", flat=True).first()
        now = timezone.now()
        message_id = uuid4()
        message = Message(
            id=message_id,
            session=locked,
            seq=(last or 0) + 1,
            role=role,
            created_at=now,
        )
        seal_message(
            message,
            cipher=cipher,
            content=content,
            embedding=embedding,
            embedding_model=embedder.name,
        )
        message.save(force_insert=True)
        locked.last_activity_at = now
        locked.save(update_fields=["last_activity_at"])
        session.last_activity_at = now
        note_write(locked.user_id)
        report = StoreReport()
        if role == Message.Role.USER and not session.is_incognito:
            report = _apply_real_time(session, message, content, actor, embedder)
    return AddedMessage(message=message, report=report)


def _apply_real_time(
    session: Session, message: Message, content: str, actor: Actor, embedder: Embedder
) -> StoreReport:
    """Apply what the user stated outright in this message, without waiting for the session end.

    Only "remember that …" and slot corrections ("actually my name is Alex, not Alice"): the
    rest waits for the conservative end-of-session extraction.
    """
    said = TranscriptMessage(
        id=str(message.pk), role="user", content=content, created_at=message.created_at
    )
    transcript = Transcript(session_id=str(session.pk), messages=(said,))
    extractor = OfflineExtractor()
    items = [
        item
        for item in extractor.extract_from_message(said, stated_only=True)
        if is_explicit_statement(item) and is_grounded(item, transcript)
    ]
    if not items:
        return StoreReport()
    return store_items(
        session=session,
        items=items,
        transcript=transcript,
        embedder=embedder,
        actor=actor,
        extractor_name=extractor.name,
    )


def end_session(*, session: Session, actor: Actor, reason: str = "explicit") -> Session:
    """End a session and queue its extraction; ending it again changes nothing.

    An incognito session loses its messages and working memory here and is never extracted.
    """
    with transaction.atomic():
        locked = (
            Session.objects.select_for_update().select_related("user", "mode").get(pk=session.pk)
        )
        if not locked.is_open:
            return locked
        locked.ended_at = timezone.now()
        locked.end_reason = reason[:16]
        fields = ["ended_at", "end_reason", "extraction_status"]
        if locked.is_incognito:
            locked.messages.all().delete()
            locked.working_memory_ciphertext = None
            locked.working_memory_updated_at = None
            locked.working_memory_expires_at = None
            fields += [
                "working_memory_ciphertext",
                "working_memory_updated_at",
                "working_memory_expires_at",
            ]
            locked.extraction_status = Session.ExtractionStatus.SKIPPED
        elif locked.user.is_memory_paused or not locked.messages.exists():
            locked.extraction_status = Session.ExtractionStatus.SKIPPED
        else:
            locked.extraction_status = Session.ExtractionStatus.QUEUED
            session_id = locked.pk
            transaction.on_commit(lambda: enqueue_extraction(session_id))
        locked.save(update_fields=fields)
        note_write(locked.user_id)
        record_access(
            actor=actor,
            subject_user_id=locked.user_id,
            action=AuditAction.SESSION_END,
            object_ids=[locked.pk],
            mode=locked.mode.slug,
        )
    return locked


def end_idle_sessions(*, now: datetime | None = None) -> int:
    """End every open session idle for longer than the configured timeout; return how many."""
    now = now or timezone.now()
    cutoff = now - timedelta(minutes=settings.MEMORYHUB_SESSION_IDLE_MINUTES)
    # Oldest first, in the order of the partial index of open sessions (session_open_idx).
    idle = (
        Session.objects.open()
        .filter(last_activity_at__lt=cutoff)
        .select_related("user", "mode")
        .order_by("started_at")
    )
    actor = Actor.system("idle-timeout")
    count = 0
    for session in idle.iterator():
        end_session(session=session, actor=actor, reason="idle")
        count += 1
    return count


def put_working_memory(*, session: Session, data: dict[str, Any], actor: Actor) -> WorkingMemory:
    """Replace the session's working memory (a JSON object, size-capped); it expires after a TTL.

    Raises InvalidInputError, ContentTooLargeError, MemoryPausedError and ConflictError (ended).
    """
    if not isinstance(data, dict):
        raise InvalidInputError(gettext_noop("working memory must be a JSON object"))
    try:
        serialised = json.dumps(data, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidInputError(gettext_noop("working memory must be plain JSON")) from None
    size = len(serialised.encode())  # ASCII: json.dumps escapes everything else.
    limit = settings.MEMORYHUB_MAX_WORKING_MEMORY_BYTES
    if size > limit:
        raise ContentTooLargeError(
            gettext_noop("working memory is {size} bytes; the limit is {limit} bytes"),
            size=size,
            limit=limit,
        )
    check_writable(session.user, actor, session.mode)
    if not session.is_open:
        raise ConflictError(gettext_noop("the session has ended"))
    cipher = cipher_for(session.user)
    now = timezone.now()
    with transaction.atomic():
        # The session row is locked and checked again: a write racing end_session would
        # otherwise land after an incognito session's working memory was deleted, and stay.
        locked = Session.objects.select_for_update().get(pk=session.pk)
        if not locked.is_open:
            raise ConflictError(gettext_noop("the session has ended"))
        session.working_memory_ciphertext = cipher.encrypt(
            serialised, table=SESSION_TABLE, row_id=session.pk, field=WORKING_MEMORY_FIELD
        )
        session.working_memory_updated_at = now
        session.working_memory_expires_at = now + timedelta(
            days=settings.MEMORYHUB_WORKING_MEMORY_TTL_DAYS
        )
        session.last_activity_at = now
        session.save(
            update_fields=[
                "working_memory_ciphertext",
                "working_memory_updated_at",
                "working_memory_expires_at",
                "last_activity_at",
            ]
        )
        note_write(session.user_id)
        record_access(
            actor=actor,
            subject_user_id=session.user_id,
            action=AuditAction.WORKING_MEMORY_WRITE,
            object_ids=[session.pk],
            mode=session.mode.slug,
        )
    return WorkingMemory(
        data=json.loads(serialised),
        updated_at=now,
        expires_at=session.working_memory_expires_at,
    )


def get_working_memory(*, session: Session, actor: Actor) -> WorkingMemory:
    """Read the session's working memory; expired or never written, it is empty."""
    expires_at = session.working_memory_expires_at
    if session.working_memory_ciphertext is None or (
        expires_at is not None and expires_at <= timezone.now()
    ):
        return WorkingMemory(data={}, updated_at=None, expires_at=None)
    data = cipher_for(session.user).decrypt_json(
        session.working_memory_ciphertext,
        table=SESSION_TABLE,
        row_id=session.pk,
        field=WORKING_MEMORY_FIELD,
    )
    record_access(
        actor=actor,
        subject_user_id=session.user_id,
        action=AuditAction.WORKING_MEMORY_READ,
        object_ids=[session.pk],
        mode=session.mode.slug,
    )
    return WorkingMemory(
        data=data, updated_at=session.working_memory_updated_at, expires_at=expires_at
    )


def expire_working_memory(*, now: datetime | None = None) -> int:
    """Erase working memory past its TTL; return how many sessions had some."""
    now = now or timezone.now()
    return Session.objects.filter(working_memory_expires_at__lte=now).update(
        working_memory_ciphertext=None,
        working_memory_updated_at=None,
        working_memory_expires_at=None,
    )
