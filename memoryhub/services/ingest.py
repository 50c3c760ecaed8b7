"""Turn an ended session into memories: choose the extractor, run it once, ground, store.

`run_extraction` is the end-of-session job (a Celery task calls it). Storing the grounded
items is `services.evidence.store_items`, shared with real-time corrections in
`services.sessions.add_message`; `cite_messages` is re-exported from there for other writers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, time
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.models import F, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder, embedder_for_workspace
from memoryhub.errors import (
    ConflictError,
    ContentTooLargeError,
    InvalidInputError,
    MemoryPausedError,
    NotFoundError,
)
from memoryhub.extraction import (
    ExtractionError,
    ExtractionResult,
    Extractor,
    TokenUsage,
    Transcript,
    TranscriptMessage,
    split_grounded,
)
from memoryhub.extraction.anthropic import AnthropicExtractor
from memoryhub.extraction.offline import OfflineExtractor
from memoryhub.keyring import cipher_for
from memoryhub.message_rows import open_message
from memoryhub.models import (
    IMPORTED_FOR_REVIEW_END_REASON,
    Confidence,
    ExtractionRun,
    MemoryKind,
    MemorySource,
    MemoryStatus,
    Message,
    Session,
    Workspace,
)
from memoryhub.services.evidence import cite_messages as cite_messages
from memoryhub.services.evidence import store_items
from memoryhub.services.memories import NewMemory, build_memory
from memoryhub.services.quotas import is_within_memory_quota, stored_size
from memoryhub.services.write_checks import check_content
from memoryhub.telemetry import extraction_result_attributes, traced

logger = logging.getLogger(__name__)

# Must match every reader of message rows (recall, forget): the ciphertext binding.


@dataclass(frozen=True)
class ExtractorChoice:
    extractor: Extractor
    fell_back_to_offline: bool = False
    note: str = ""


def extraction_key(session_id: UUID | str) -> str:
    """The idempotency key of a session's extraction: one successful run per session."""
    return f"session-extraction:{session_id}"


def load_transcript(session: Session) -> Transcript:
    """Decrypt a session's messages, in order, into the extractors' transcript type."""
    cipher = cipher_for(session.user_id)
    messages = tuple(
        TranscriptMessage(
            id=str(message.pk),
            role="user" if message.role == Message.Role.USER else "assistant",
            content=open_message(message, cipher),
            created_at=message.created_at,
        )
        for message in session.messages.order_by("seq")
    )
    return Transcript(
        session_id=str(session.pk),
        messages=messages,
        user_display_name=session.user.display_name or None,
    )


def tokens_used_today(workspace: Workspace) -> int:
    """LLM tokens the workspace's extraction runs spent since midnight (UTC)."""
    midnight = datetime.combine(timezone.now().date(), time.min, tzinfo=UTC)
    used = ExtractionRun.objects.filter(
        session__user__workspace=workspace, started_at__gte=midnight
    ).aggregate(
        total=Coalesce(
            Sum(
                F("input_tokens")
                + F("output_tokens")
                + F("cache_read_tokens")
                + F("cache_creation_tokens")
            ),
            0,
        )
    )
    return int(used["total"])


def choose_extractor(workspace: Workspace) -> ExtractorChoice:
    """Claude when a key is configured and the workspace's daily budget is not spent; else offline."""
    if not settings.ANTHROPIC_API_KEY:
        return ExtractorChoice(OfflineExtractor())
    used = tokens_used_today(workspace)
    if used >= workspace.llm_daily_token_budget:
        # Visible to admins on the run (fell_back_to_offline + note) and in the logs.
        logger.warning(
            "workspace %s: daily LLM token budget spent, extracting offline", workspace.pk
        )
        return ExtractorChoice(
            OfflineExtractor(),
            fell_back_to_offline=True,
            note=(
                f"daily LLM token budget exhausted ({used} of "
                f"{workspace.llm_daily_token_budget} tokens): used the offline extractor"
            ),
        )
    return ExtractorChoice(
        AnthropicExtractor(
            api_key=settings.ANTHROPIC_API_KEY,
            model=settings.MEMORYHUB_EXTRACTION_MODEL,
            base_url=settings.ANTHROPIC_BASE_URL,
            timeout=float(settings.MEMORYHUB_LLM_TIMEOUT_SECONDS),
            max_retries=settings.MEMORYHUB_LLM_MAX_RETRIES,
        )
    )


@traced("extract_memories", result_attributes=extraction_result_attributes)
def run_extraction(
    *,
    session_id: UUID | str,
    embedder: Embedder | None = None,
    extractor: Extractor | None = None,
    actor: Actor | None = None,
) -> ExtractionRun | None:
    """Extract an ended session into memories, exactly once; None when it must not be extracted.

    Without `embedder`, the memories are embedded with the workspace's model.
    Raises NotFoundError (no such session), ConflictError (still open) and ExtractionError
    (the extractor failed: the run is marked failed, nothing was written, retry it).
    """
    actor = actor or Actor.system("extraction")
    session_row = (
        Session.objects.select_related("user", "user__workspace", "mode")
        .filter(pk=session_id)
        .first()
    )
    if session_row is None:
        raise NotFoundError(gettext_noop("session not found"))
    if (
        session_row.is_incognito
        or session_row.user.is_memory_paused
        or session_row.mode.is_memory_off
    ):
        # Incognito sessions, paused users and modes with memory off write nothing, not even
        # a run record.
        _set_session_status(session_row, Session.ExtractionStatus.SKIPPED)
        return None
    if session_row.is_open:
        raise ConflictError(gettext_noop("the session is still open: end it before extracting"))
    run, _ = ExtractionRun.objects.get_or_create(
        idempotency_key=extraction_key(session_row.pk),
        defaults={"session": session_row, "extractor": "pending"},
    )
    if run.status == ExtractionRun.Status.DONE:
        return run
    choice = (
        ExtractorChoice(extractor)
        if extractor is not None
        else choose_extractor(session_row.user.workspace)
    )
    _start_run(run, session_row, choice)
    embedder = embedder or embedder_for_workspace(session_row.user.workspace)
    try:
        transcript = load_transcript(session_row)
        if not isinstance(choice.extractor, OfflineExtractor):
            # Every extractor but the in-process one sends the transcript out (to an LLM):
            # that read of the user's words is audited before the text leaves.
            record_access(
                actor=actor,
                subject_user_id=session_row.user_id,
                action=AuditAction.TRANSCRIPT_SENT_TO_LLM,
                object_ids=[message.id for message in transcript.messages],
                mode=session_row.mode.slug,
            )
        result = choice.extractor.extract(transcript)
        return _finish_run(run, session_row, transcript, result, embedder, actor)
    except MemoryPausedError:
        # Paused while the extractor ran: the writes were refused; keep nothing, do not retry.
        _fail_run(run, session_row, "the user paused memory", TokenUsage())
        _set_session_status(session_row, Session.ExtractionStatus.SKIPPED)
        return None
    except Exception as error:
        # ExtractionError messages never hold transcript text; others are reduced to their type.
        reason = str(error) if isinstance(error, ExtractionError) else type(error).__name__
        spent = error.usage if isinstance(error, ExtractionError) else TokenUsage()
        _fail_run(run, session_row, reason, spent)
        raise


def _set_session_status(session: Session, status: str) -> None:
    session.extraction_status = status
    session.save(update_fields=["extraction_status"])


def _start_run(run: ExtractionRun, session: Session, choice: ExtractorChoice) -> None:
    run.status = ExtractionRun.Status.RUNNING
    run.extractor = choice.extractor.name[:32]
    run.fell_back_to_offline = choice.fell_back_to_offline
    run.error = choice.note
    run.started_at = timezone.now()
    run.finished_at = None
    run.save(
        update_fields=[
            "status",
            "extractor",
            "fell_back_to_offline",
            "error",
            "started_at",
            "finished_at",
        ]
    )
    _set_session_status(session, Session.ExtractionStatus.RUNNING)


def _fail_run(run: ExtractionRun, session: Session, reason: str, spent: TokenUsage) -> None:
    # Tokens add up over the attempts of a run: a failed attempt was billed too.
    ExtractionRun.objects.filter(pk=run.pk).exclude(status=ExtractionRun.Status.DONE).update(
        status=ExtractionRun.Status.FAILED,
        error=reason[:1000],
        finished_at=timezone.now(),
        input_tokens=F("input_tokens") + spent.input_tokens,
        output_tokens=F("output_tokens") + spent.output_tokens,
        cache_read_tokens=F("cache_read_tokens") + spent.cache_read_tokens,
        cache_creation_tokens=F("cache_creation_tokens") + spent.cache_creation_tokens,
    )
    Session.objects.filter(pk=session.pk).exclude(
        extraction_status=Session.ExtractionStatus.DONE
    ).update(extraction_status=Session.ExtractionStatus.FAILED)


def _finish_run(
    run: ExtractionRun,
    session: Session,
    transcript: Transcript,
    result: ExtractionResult,
    embedder: Embedder,
    actor: Actor,
) -> ExtractionRun:
    grounded, rejected = split_grounded(result, transcript)
    with transaction.atomic():
        # The lock serialises concurrent runs of one session (a redelivered task beside a slow
        # original): whoever commits first wins, the other sees DONE and writes nothing.
        locked = ExtractionRun.objects.select_for_update().get(pk=run.pk)
        if locked.status == ExtractionRun.Status.DONE:
            return locked
        # The user may have paused memory while the extractor ran; store_items checks this.
        session.user.refresh_from_db(fields=["is_memory_paused"])
        report = store_items(
            session=session,
            items=grounded.items,
            transcript=transcript,
            embedder=embedder,
            actor=actor,
            extractor_name=result.extractor,
        )
        summary_id, summary_over_quota = _store_summary(session, grounded, embedder)
        locked.status = ExtractionRun.Status.DONE
        locked.extractor = (
            f"{result.extractor}:{result.model}" if result.model else result.extractor
        )[:32]
        # Added to what the run's failed attempts, if any, already spent.
        locked.input_tokens += result.usage.input_tokens
        locked.output_tokens += result.usage.output_tokens
        locked.cache_read_tokens += result.usage.cache_read_tokens
        locked.cache_creation_tokens += result.usage.cache_creation_tokens
        locked.items_written = report.written + (1 if summary_id else 0)
        locked.items_rejected = len(rejected) + report.rejected
        # Skipped, not failed: a run that raised would be retried into the same quota.
        locked.items_over_quota = report.over_quota + summary_over_quota
        locked.finished_at = timezone.now()
        locked.save()
        _set_session_status(session, Session.ExtractionStatus.DONE)
        if summary_id is not None:
            record_access(
                actor=actor,
                subject_user_id=session.user_id,
                action=AuditAction.MEMORY_CREATE,
                object_ids=[summary_id],
                mode=session.mode.slug,
            )
    return locked


def _store_summary(
    session: Session, result: ExtractionResult, embedder: Embedder
) -> tuple[UUID | None, int]:
    """Store the session's summary; return its id and 1 if a memory quota kept it out."""
    summary = result.summary
    if summary is None or not summary.text.strip():
        return None, 0
    try:
        text = check_content(summary.text)
    except (InvalidInputError, ContentTooLargeError):
        return None, 0
    cipher = cipher_for(session.user_id)
    # The summary of a conversation from an untrusted import waits for review like the rest.
    is_awaiting_review = session.end_reason == IMPORTED_FOR_REVIEW_END_REASON
    item = NewMemory(
        kind=MemoryKind.SESSION_SUMMARY,
        content=text,
        source=MemorySource.EXTRACTED,
        confidence=Confidence.CANDIDATE if is_awaiting_review else Confidence.MEDIUM,
        status=MemoryStatus.CANDIDATE if is_awaiting_review else MemoryStatus.ACTIVE,
        payload={
            "topic": summary.topic,
            "message_ids": list(summary.quote_message_ids),
            "extractor": result.extractor,
        },
        occurred_at=session.ended_at or session.last_activity_at,
    )
    row = build_memory(
        item,
        user=session.user,
        mode=session.mode,
        cipher=cipher,
        embedding=embedder.embed([text])[0],
        embedding_model=embedder.name,
        session_id=session.pk,
        agent_id=session.agent_id,
    )
    if not is_within_memory_quota(user=session.user, memories=1, stored_bytes=stored_size(row)):
        return None, 1
    row.save()
    if summary.quote_message_ids:
        cite_messages(row, summary.quote_message_ids)
    return row.pk, 0
