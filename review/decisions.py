"""Reviewer decisions on candidates: approve (publish to the knowledge base), reject, skip, and
for a question about the user: answer it for them, or leave it to them (needs the user)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.embeddings import Embedder
from memoryhub.errors import ConflictError, InvalidInputError
from memoryhub.keyring import cipher_for
from memoryhub.knowledge.documents import publish_document, title_from
from memoryhub.memory_rows import MemoryItem
from memoryhub.models import (
    Confidence,
    FailureClass,
    Importance,
    KnowledgeDocument,
    LearningCandidate,
    MemoryKind,
    MemorySource,
    MemoryStatus,
    User,
    Workspace,
)
from memoryhub.sealed_tables import ANSWER_TABLE
from memoryhub.services.memories import NewMemory, remember

from .models import ReviewDecision
from .queries import audit_candidate_access, get_candidate_row, scrubbed_texts
from .tuning import record_decisions

MAX_REASON_CHARS = 2000


def _lock_pending(workspace: Workspace, candidate_id: UUID | str) -> LearningCandidate:
    row = get_candidate_row(workspace=workspace, candidate_id=candidate_id)
    candidate = (
        LearningCandidate.objects.select_for_update(of=("self",))
        .select_related("mode")
        .get(pk=row.pk)
    )
    if candidate.status != LearningCandidate.Status.PENDING:
        raise ConflictError(gettext_noop("this candidate was already decided"))
    return candidate


def _with_group(candidate: LearningCandidate, *, apply_to_group: bool) -> list[LearningCandidate]:
    if not apply_to_group:
        return [candidate]
    others = (
        LearningCandidate.objects.select_for_update(of=("self",))
        .select_related("mode")
        .filter(workspace_id=candidate.workspace_id, group_id=candidate.group_id)
        .pending()
        .exclude(pk=candidate.pk)
    )
    return [candidate, *others]


def _decide(
    candidates: Sequence[LearningCandidate], *, status: str, reviewer: User, reason: str = ""
) -> None:
    now = timezone.now()
    for candidate in candidates:
        candidate.status = status
        candidate.decided_at = now
        candidate.decided_by = reviewer
        candidate.rejection_reason = reason
        candidate.save(update_fields=["status", "decided_at", "decided_by", "rejection_reason"])


def _record_outcome(
    decided: Sequence[LearningCandidate],
    *,
    workspace: Workspace,
    status: str,
    outcome: str,
    action: AuditAction,
    reviewer: User,
    actor: Actor,
    reason: str = "",
) -> None:
    """Decide the candidates, audit the reviewer's read, and count the decisions for tuning."""
    _decide(decided, status=status, reviewer=reviewer, reason=reason)
    audit_candidate_access(actor, decided, action)
    record_decisions(workspace=workspace, candidates=decided, reviewer=reviewer, outcome=outcome)


def approve_candidate(
    *,
    workspace: Workspace,
    candidate_id: UUID | str,
    reviewer: User,
    actor: Actor,
    embedder: Embedder,
    question: str | None = None,
    answer: str | None = None,
    apply_to_group: bool = False,
) -> KnowledgeDocument:
    """Publish a candidate (as edited by the reviewer) to the knowledge base at once.

    A captured answer becomes a Q/A document titled by its question; a proposed fact becomes a
    fact document. With `apply_to_group` the similar pending candidates are approved with it.
    Raises NotFoundError, ConflictError (already decided) and InvalidInputError.
    """
    with transaction.atomic():
        candidate = _lock_pending(workspace, candidate_id)
        original_question, original_answer = scrubbed_texts(candidate)
        final_answer = (answer or "").strip() or original_answer
        if candidate.kind == LearningCandidate.Kind.ANSWER:
            final_question = (question or "").strip() or original_question
            title, body = title_from(final_question), f"Q: {final_question}\n\nA: {final_answer}"
            source = KnowledgeDocument.Source.ANSWER
        else:
            title, body = title_from(final_answer), final_answer
            source = KnowledgeDocument.Source.FACT
        document = publish_document(
            workspace=workspace,
            title=title,
            body=body,
            source=source,
            embedder=embedder,
            created_by=reviewer,
            source_candidate=candidate,
        )
        _record_outcome(
            _with_group(candidate, apply_to_group=apply_to_group),
            workspace=workspace,
            status=LearningCandidate.Status.APPROVED,
            outcome=ReviewDecision.Outcome.APPROVED,
            action=AuditAction.REVIEW_CANDIDATE_APPROVE,
            reviewer=reviewer,
            actor=actor,
        )
    return document


def reject_candidate(
    *,
    workspace: Workspace,
    candidate_id: UUID | str,
    reviewer: User,
    actor: Actor,
    reason: str,
    apply_to_group: bool = False,
) -> LearningCandidate:
    """Reject a candidate with a reason (and its similar pending ones with `apply_to_group`)."""
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInputError(gettext_noop("a rejection needs a reason"))
    if len(reason) > MAX_REASON_CHARS or "\x00" in reason:
        raise InvalidInputError(
            gettext_noop("reason must be text of at most {limit} characters"),
            limit=MAX_REASON_CHARS,
        )
    with transaction.atomic():
        candidate = _lock_pending(workspace, candidate_id)
        _record_outcome(
            _with_group(candidate, apply_to_group=apply_to_group),
            workspace=workspace,
            status=LearningCandidate.Status.REJECTED,
            outcome=ReviewDecision.Outcome.REJECTED,
            action=AuditAction.REVIEW_CANDIDATE_REJECT,
            reviewer=reviewer,
            actor=actor,
            reason=reason,
        )
    return candidate


def skip_candidate(
    *, workspace: Workspace, candidate_id: UUID | str, actor: Actor
) -> LearningCandidate:
    """Put a candidate behind the others in the queue; it is not a decision."""
    with transaction.atomic():
        candidate = _lock_pending(workspace, candidate_id)
        candidate.skipped_at = timezone.now()
        candidate.save(update_fields=["skipped_at"])
        audit_candidate_access(actor, [candidate], AuditAction.REVIEW_CANDIDATE_SKIP)
    return candidate


def _users_question(candidate: LearningCandidate) -> str:
    """The question as the user asked it (for their own memory; no reviewer reads it here)."""
    record = candidate.answer
    if record is None:
        return scrubbed_texts(candidate)[0]
    return cipher_for(candidate.user_id, create=False).decrypt(
        record.question_ciphertext, table=ANSWER_TABLE, row_id=record.pk, field="question"
    )


def _lock_users_question(workspace: Workspace, candidate_id: UUID | str) -> LearningCandidate:
    candidate = _lock_pending(workspace, candidate_id)
    if candidate.kind != LearningCandidate.Kind.ANSWER:
        raise InvalidInputError(gettext_noop("only a captured answer is a question of the user's"))
    if candidate.failure_class == FailureClass.POLICY_BLOCK:
        # A refusal on policy grounds is the workspace's rule, the same for everyone: it is
        # settled in the knowledge base (publish or reject), never as one user's to-do.
        raise InvalidInputError(
            gettext_noop(
                "a policy question is the workspace's, not this user's: publish or reject it"
            )
        )
    return candidate


def _leave_to_user(
    candidate: LearningCandidate,
    item: NewMemory,
    *,
    status: str,
    action: AuditAction,
    reviewer: User,
    actor: Actor,
    embedder: Embedder,
) -> MemoryItem:
    """Write the item into the user's memory and decide the candidate with this status."""
    memory = remember(
        user=candidate.user, mode=candidate.mode, item=item, actor=actor, embedder=embedder
    )
    # The capture was right (the agent could not answer): it counts as an approval for the
    # threshold, like publishing would.
    _record_outcome(
        [candidate],
        workspace=candidate.workspace,
        status=status,
        outcome=ReviewDecision.Outcome.APPROVED,
        action=action,
        reviewer=reviewer,
        actor=actor,
    )
    return memory


def answer_for_user(
    *,
    workspace: Workspace,
    candidate_id: UUID | str,
    reviewer: User,
    actor: Actor,
    embedder: Embedder,
    answer: str,
) -> MemoryItem:
    """Write the reviewer's answer into the user's memory, as a question for them to confirm.

    For a question about the user (their appointment, their plan) no knowledge document can
    answer: the reviewer never sees the user's memories, so the answer waits in "Is this
    right?" until the user confirms it, and no agent gets it before. Nothing is published.
    Raises NotFoundError, ConflictError (already decided), InvalidInputError (a proposed
    fact, an empty answer) and MemoryPausedError (the user paused memory or turned it off).
    """
    with transaction.atomic():
        candidate = _lock_users_question(workspace, candidate_id)
        item = NewMemory(
            kind=MemoryKind.FACT,
            content=answer,
            source=MemorySource.REVIEWER,
            confidence=Confidence.CANDIDATE,
            status=MemoryStatus.CANDIDATE,
            payload={"question": _users_question(candidate), "from_review": True},
        )
        return _leave_to_user(
            candidate,
            item,
            status=LearningCandidate.Status.ANSWERED,
            action=AuditAction.REVIEW_ANSWER_FOR_USER,
            reviewer=reviewer,
            actor=actor,
            embedder=embedder,
        )


def mark_needs_user(
    *,
    workspace: Workspace,
    candidate_id: UUID | str,
    reviewer: User,
    actor: Actor,
    embedder: Embedder,
) -> MemoryItem:
    """Leave a question only the user can answer to them: an open item in their memory.

    Raises NotFoundError, ConflictError, InvalidInputError (a proposed fact) and
    MemoryPausedError (the user paused memory or turned it off in the mode).
    """
    with transaction.atomic():
        candidate = _lock_users_question(workspace, candidate_id)
        question = _users_question(candidate)
        item = NewMemory(
            kind=MemoryKind.OPEN_ITEM,
            content=f"An agent could not answer “{question}”: only you know. Tell it next time.",
            source=MemorySource.REVIEWER,
            importance=Importance.NORMAL,
            payload={"status": "open", "question": question, "from_review": True},
        )
        return _leave_to_user(
            candidate,
            item,
            status=LearningCandidate.Status.NEEDS_USER,
            action=AuditAction.REVIEW_NEEDS_USER,
            reviewer=reviewer,
            actor=actor,
            embedder=embedder,
        )
