"""Answers and candidates: report an answer (captured for review when weak), take feedback,
propose a fact.

Reviewer decisions (approve, reject, skip) live in review/decisions.py; what a forget takes
of this data, in memoryhub/knowledge/forget.py.

Security invariants enforced here:
- Answer text reaches the ORM only as ciphertext under the user's data key.
- Candidate text is scrubbed of personal data (with the names the user's profile knows)
  before it is encrypted; reviewers only ever see the scrubbed text, never memories.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from functools import partial
from typing import Any
from uuid import UUID, uuid4

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder
from memoryhub.errors import ConflictError, InvalidInputError, NotFoundError
from memoryhub.keyring import cipher_for
from memoryhub.models import (
    AnswerRecord,
    FailureClass,
    Feedback,
    LearningCandidate,
    Mode,
    Session,
    User,
    Workspace,
)
from memoryhub.personal_data import scrub_personal_data
from memoryhub.sealed_tables import ANSWER_TABLE, CANDIDATE_TABLE
from memoryhub.services.quotas import (
    check_answer_quota,
    check_candidate_quota,
    has_candidate_quota_left,
)
from memoryhub.services.write_checks import check_content, check_writable
from memoryhub.task_queue import RECORD_ANSWER_IN_GRAPH, enqueue
from memoryhub.vector_search import cosine_distance

from .queries import known_names_of
from .scoring import (
    check_signals,
    classify_failure,
    composite_confidence,
    find_hallucination_signals,
    signal_weights,
)

logger = logging.getLogger(__name__)

# Cosine distance under which two candidates ask the same thing (MiniLM similarity >= 0.75).
SIMILAR_DISTANCE = 0.25
# Thumbs up or down moves an answer's confidence this far from its reported composite.
FEEDBACK_ADJUSTMENT = 0.1
MAX_CONTEXT_IDS = 500
MAX_ITEMS = 100
MAX_COMMENT_CHARS = 2000
# Issue 9: every reported answer (and its feedback) is recorded in the workspace graph by this
# Celery task, published by name (memoryhub/task_queue.py).
GRAPH_TASK = RECORD_ANSWER_IN_GRAPH


@dataclass(frozen=True)
class AnswerReport:
    """A recorded answer and, when it was captured for review, its learning candidate."""

    answer: AnswerRecord
    candidate: LearningCandidate | None

    @property
    def is_captured(self) -> bool:
        return self.candidate is not None


@dataclass(frozen=True)
class _Draft:
    """A candidate's scrubbed texts and grouping, prepared outside the write transaction."""

    question: str | None
    answer: str
    comment: str | None
    scrub_counts: dict[str, int]
    embedding: list[float]
    embedding_model: str
    group_id: UUID | None


def _enqueue_graph_update(answer_id: UUID) -> None:
    # Fire and forget, after the commit: an unreachable broker or a broken task module costs
    # the graph one interaction, never the agent a 500 for an answer that is already saved.
    try:
        enqueue(GRAPH_TASK, str(answer_id))
    except Exception:
        logger.exception("could not queue the graph update of answer %s", answer_id)


def _audit_and_record_in_graph(
    record: AnswerRecord, *, mode: Mode, actor: Actor, action: AuditAction
) -> None:
    record_access(
        actor=actor,
        subject_user_id=record.user_id,
        action=action,
        object_ids=[record.pk],
        mode=mode.slug,
    )
    transaction.on_commit(partial(_enqueue_graph_update, record.pk))


def _check_context_ids(values: Collection[object]) -> list[str]:
    if len(values) > MAX_CONTEXT_IDS:
        raise InvalidInputError(
            gettext_noop("context_ids holds more than {limit} ids"),
            limit=MAX_CONTEXT_IDS,
        )
    ids = []
    for value in values:
        if not isinstance(value, str) or not 0 < len(value) <= 64 or "\x00" in value:
            raise InvalidInputError(
                gettext_noop("context_ids must be ids of at most 64 characters")
            )
        ids.append(value.strip())
    return ids


def _check_items(values: Collection[object]) -> list[dict[str, Any]]:
    if len(values) > MAX_ITEMS:
        raise InvalidInputError(
            gettext_noop("items holds more than {limit} entries"), limit=MAX_ITEMS
        )
    items: list[dict[str, Any]] = []
    for value in values:
        if not isinstance(value, dict):
            raise InvalidInputError(gettext_noop("items must be JSON objects"))
        items.append(value)
    return items


def _check_comment(comment: str | None) -> str:
    comment = (comment or "").strip()
    if "\x00" in comment or len(comment) > MAX_COMMENT_CHARS:
        raise InvalidInputError(
            gettext_noop("comment must be text of at most {limit} characters"),
            limit=MAX_COMMENT_CHARS,
        )
    return comment


def _find_session(*, user: User, mode: Mode, session_id: UUID | str | None) -> Session | None:
    if session_id is None:
        return None
    try:
        session = Session.objects.for_owner(user=user, mode=mode).filter(pk=session_id).first()
    except (ValueError, ValidationError):
        session = None
    if session is None:
        raise NotFoundError(gettext_noop("session not found"))
    return session


def _group_for(workspace: Workspace, embedding: list[float], model: str) -> UUID | None:
    """The group of the most similar pending candidate, if one is similar enough."""
    nearest = (
        LearningCandidate.objects.filter(workspace=workspace)
        .pending()
        .annotate(distance=cosine_distance(embedding, model=model))
        .filter(distance__lte=SIMILAR_DISTANCE)
        .order_by("distance")
        .values_list("group_id", flat=True)
        .first()
    )
    return nearest


def _scrub(user: User, texts: Sequence[str | None]) -> tuple[list[str | None], dict[str, int]]:
    """Scrub each text with the user's known names; count replacements by category."""
    names = known_names_of(user=user)
    counts: dict[str, int] = {}
    scrubbed: list[str | None] = []
    for text in texts:
        if not text:
            scrubbed.append(None)
            continue
        result = scrub_personal_data(text, known_names=names)
        scrubbed.append(result.text)
        for category, count in result.replacements.items():
            counts[str(category)] = counts.get(str(category), 0) + count
    return scrubbed, counts


def _draft(
    *,
    user: User,
    question: str | None,
    answer: str,
    comment: str | None,
    embedder: Embedder,
) -> _Draft:
    (scrubbed_question, scrubbed_comment, scrubbed_answer), counts = _scrub(
        user, [question, comment, answer]
    )
    # The answer is never empty (checked by the caller), so neither is its scrubbed text.
    scrubbed_answer = scrubbed_answer or ""
    embedding = embedder.embed([scrubbed_question or scrubbed_answer])[0]
    return _Draft(
        question=scrubbed_question,
        answer=scrubbed_answer,
        comment=scrubbed_comment,
        scrub_counts=counts,
        embedding=embedding,
        embedding_model=embedder.name,
        group_id=_group_for(user.workspace, embedding, embedder.name),
    )


def _create_candidate(
    draft: _Draft,
    *,
    user: User,
    mode: Mode,
    record: AnswerRecord | None = None,
    failure_class: str = "",
    findings: Sequence[str] = (),
    confidence: float | None = None,
) -> LearningCandidate:
    """A captured answer when there is an answer record, else a proposed fact."""
    kind = LearningCandidate.Kind.ANSWER if record is not None else LearningCandidate.Kind.FACT
    cipher = cipher_for(user)
    candidate_id = uuid4()

    def seal(text: str | None, field: str) -> bytes | None:
        if text is None:
            return None
        return cipher.encrypt(text, table=CANDIDATE_TABLE, row_id=candidate_id, field=field)

    return LearningCandidate.objects.create(
        id=candidate_id,
        workspace_id=user.workspace_id,
        user=user,
        mode=mode,
        answer=record,
        kind=kind,
        failure_class=failure_class,
        findings=list(findings),
        question_ciphertext=seal(draft.question, "question"),
        answer_ciphertext=seal(draft.answer, "answer"),
        comment_ciphertext=seal(draft.comment, "comment"),
        scrub_counts=draft.scrub_counts,
        confidence=confidence,
        embedding=draft.embedding,
        embedding_model=draft.embedding_model,
        group_id=draft.group_id or candidate_id,
    )


def report_answer(
    *,
    user: User,
    mode: Mode,
    question: str,
    answer: str,
    signals: Mapping[str, object],
    actor: Actor,
    embedder: Embedder,
    agent_id: UUID | None = None,
    session_id: UUID | str | None = None,
    context_ids: Collection[object] = (),
    items: Collection[object] = (),
    today: date | None = None,
) -> AnswerReport:
    """Record an answer with its confidence; capture it for review when it looks weak.

    Captured: a composite below the workspace threshold, or a hallucination signal (the
    agent's own signals cannot see those). Raises InvalidInputError, NotFoundError (session),
    ConflictError (incognito session) and MemoryPausedError.
    """
    check_writable(user, actor, mode)
    check_answer_quota(user=user)
    question = check_content(question, field="question")
    answer = check_content(answer, field="answer")
    checked = check_signals(signals)
    ids = _check_context_ids(context_ids)
    item_list = _check_items(items)
    session = _find_session(user=user, mode=mode, session_id=session_id)
    if session is not None and session.is_incognito:
        raise ConflictError(gettext_noop("answers in an incognito session are not recorded"))
    workspace = user.workspace
    composite = composite_confidence(checked, signal_weights(workspace.signal_weights))
    findings = find_hallucination_signals(
        answer, context_ids=ids, today=today or timezone.localdate()
    )
    is_captured = composite < workspace.review_threshold or bool(findings)
    if is_captured and not has_candidate_quota_left(workspace=workspace):
        # The answer is still recorded; only its capture for review is skipped and logged.
        logger.warning("candidate quota reached in workspace %s: answer not captured", workspace.pk)
        is_captured = False
    draft = (
        _draft(user=user, question=question, answer=answer, comment=None, embedder=embedder)
        if is_captured
        else None
    )
    cipher = cipher_for(user)
    record_id = uuid4()

    def seal(text: str, field: str) -> bytes:
        return cipher.encrypt(text, table=ANSWER_TABLE, row_id=record_id, field=field)

    with transaction.atomic():
        record = AnswerRecord.objects.create(
            id=record_id,
            workspace=workspace,
            user=user,
            mode=mode,
            session=session,
            agent_id=agent_id,
            question_ciphertext=seal(question, "question"),
            answer_ciphertext=seal(answer, "answer"),
            items_ciphertext=cipher.encrypt_json(
                item_list, table=ANSWER_TABLE, row_id=record_id, field="items"
            )
            if item_list
            else None,
            signals=checked.as_dict(),
            context_ids=ids,
            composite=composite,
            confidence=composite,
        )
        candidate = None
        if draft is not None:
            candidate = _create_candidate(
                draft,
                user=user,
                mode=mode,
                record=record,
                failure_class=classify_failure(checked, findings=findings),
                findings=findings,
                confidence=composite,
            )
        _audit_and_record_in_graph(record, mode=mode, actor=actor, action=AuditAction.ANSWER_REPORT)
    return AnswerReport(answer=record, candidate=candidate)


def get_answer_row(*, user: User, mode: Mode, answer_id: UUID | str) -> AnswerRecord:
    """An answer of this user and mode; another owner's id is NotFound."""
    try:
        return AnswerRecord.objects.get(pk=answer_id, user=user, mode=mode)
    except (AnswerRecord.DoesNotExist, ValueError, ValidationError):
        raise NotFoundError(gettext_noop("answer not found")) from None


def record_feedback(
    *,
    user: User,
    mode: Mode,
    answer_id: UUID | str,
    value: str,
    actor: Actor,
    embedder: Embedder,
    comment: str | None = None,
) -> AnswerReport:
    """Thumbs up strengthens an answer; thumbs down captures it for review whatever its score.

    A pending candidate becomes "negative feedback"; an already decided one stays decided.
    """
    check_writable(user, actor, mode)
    if value not in Feedback.values:
        raise InvalidInputError(gettext_noop("value must be 'up' or 'down'"))
    comment = _check_comment(comment)
    record = get_answer_row(user=user, mode=mode, answer_id=answer_id)
    candidate = LearningCandidate.objects.filter(answer=record).first()
    is_down = value == Feedback.DOWN
    is_pending = candidate is not None and candidate.status == LearningCandidate.Status.PENDING
    cipher = cipher_for(user)
    draft = None
    if is_down and candidate is None:
        question = cipher.decrypt(
            record.question_ciphertext, table=ANSWER_TABLE, row_id=record.pk, field="question"
        )
        answer = cipher.decrypt(
            record.answer_ciphertext, table=ANSWER_TABLE, row_id=record.pk, field="answer"
        )
        draft = _draft(
            user=user, question=question, answer=answer, comment=comment, embedder=embedder
        )
    if draft is not None and not has_candidate_quota_left(workspace=user.workspace):
        # The thumbs down is still recorded; only its capture for review is skipped and logged.
        logger.warning(
            "candidate quota reached in workspace %s: feedback not captured", user.workspace_id
        )
        draft = None
    adjustment = -FEEDBACK_ADJUSTMENT if is_down else FEEDBACK_ADJUSTMENT
    with transaction.atomic():
        record.feedback = value
        record.feedback_at = timezone.now()
        record.confidence = round(min(1.0, max(0.0, record.composite + adjustment)), 4)
        record.feedback_comment_ciphertext = (
            cipher.encrypt(comment, table=ANSWER_TABLE, row_id=record.pk, field="feedback_comment")
            if comment
            else None
        )
        record.save(
            update_fields=["feedback", "feedback_at", "confidence", "feedback_comment_ciphertext"]
        )
        if draft is not None:
            candidate = _create_candidate(
                draft,
                user=user,
                mode=mode,
                record=record,
                failure_class=FailureClass.NEGATIVE_FEEDBACK,
                confidence=record.confidence,
            )
        elif is_down and is_pending and candidate is not None:
            _mark_negative(candidate, user=user, comment=comment, confidence=record.confidence)
        _audit_and_record_in_graph(
            record, mode=mode, actor=actor, action=AuditAction.ANSWER_FEEDBACK
        )
    return AnswerReport(answer=record, candidate=candidate)


def _mark_negative(
    candidate: LearningCandidate, *, user: User, comment: str, confidence: float
) -> None:
    """A pending candidate the user disliked moves up the queue, with their scrubbed comment."""
    candidate.failure_class = FailureClass.NEGATIVE_FEEDBACK
    candidate.confidence = confidence
    fields = ["failure_class", "confidence"]
    if comment:
        (scrubbed,), counts = _scrub(user, [comment])
        candidate.comment_ciphertext = cipher_for(user).encrypt(
            scrubbed or "", table=CANDIDATE_TABLE, row_id=candidate.pk, field="comment"
        )
        for category, count in counts.items():
            candidate.scrub_counts[category] = candidate.scrub_counts.get(category, 0) + count
        fields += ["comment_ciphertext", "scrub_counts"]
    candidate.save(update_fields=fields)


def propose_knowledge_candidate(
    *, user: User, mode: Mode, statement: str, actor: Actor, embedder: Embedder
) -> LearningCandidate:
    """Queue an agent's statement about the workspace's domain for review (scrubbed first).

    Raises InvalidInputError, ContentTooLargeError, MemoryPausedError and MemoryOffError: the
    statement comes from a conversation with the user, so their pause and memory off hold.
    """
    check_writable(user, actor, mode)
    statement = check_content(statement, field="statement")
    check_candidate_quota(workspace=user.workspace)
    draft = _draft(user=user, question=None, answer=statement, comment=None, embedder=embedder)
    with transaction.atomic():
        candidate = _create_candidate(draft, user=user, mode=mode)
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.KNOWLEDGE_PROPOSE,
            object_ids=[candidate.pk],
            mode=mode.slug,
        )
    return candidate
