"""Agent API routes of review: waiting candidates and answers, approved or rejected by key.

For reviewer keys only (ReviewerKeyAuth): a reviewer mints one on the review pages, after
typing their password again, and it acts as that reviewer in their own workspace. Decisions go
through review/decisions.py, as on the pages: the same checks, audit rows, self-tuning
threshold and `review.decided` webhook. Mounted on the one NinjaAPI by review/apps.py, since
memoryhub/api sits below this app and cannot import it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from django.http import HttpRequest
from django.utils.translation import gettext_noop
from ninja import Path, Query, Router, Schema
from pydantic import Field

from accounts.roles import has_totp, is_reviewer
from memoryhub.actors import Actor
from memoryhub.api.auth import ApiKeyAuth, request_key
from memoryhub.api.schemas import ERRORS
from memoryhub.embeddings import embedder_for_workspace
from memoryhub.errors import PermissionDeniedError
from memoryhub.http import client_ip
from memoryhub.models import ActorType, ApiKey, Channel, LearningCandidate, User

from . import decisions
from .decisions import MAX_REASON_CHARS
from .notices import waiting_counts
from .queries import CandidateView, QueueFilter, get_candidate, list_queue

MAX_PER_PAGE = 100
MAX_PAGE = 100_000
MAX_EDIT_CHARS = 20_000
CandidateId = Annotated[UUID, Path(description="The candidate's id (from the list).")]


class ReviewerKeyAuth(ApiKeyAuth):
    """`Authorization: Bearer <reviewer key>`: reviewer keys only, of a current reviewer."""

    def check_key_kind(self, api_key: ApiKey) -> None:
        if not api_key.is_review_key:
            raise PermissionDeniedError(gettext_noop("the review routes need a reviewer key"))
        # Checked on every request, as the pages do: a reviewer who lost the role, or turned
        # two-factor authentication off, can no longer use the key they minted.
        reviewer = api_key.user
        if reviewer is None or not is_reviewer(reviewer) or not has_totp(reviewer):
            raise PermissionDeniedError(
                gettext_noop("this key's owner is not a reviewer with two-factor authentication")
            )


router = Router(tags=["review"], auth=ReviewerKeyAuth())

KindName = Literal["answer", "fact"]
FailureClassName = Literal[
    "negative_feedback", "hallucination", "retrieval_miss", "incomplete", "policy_block"
]


class CandidateQueryIn(Schema):
    kind: KindName | None = Field(
        None, description="Only captured answers (`answer`) or proposed facts (`fact`)."
    )
    failure_class: FailureClassName | None = Field(
        None, description="Only answers captured for this reason."
    )
    page: Annotated[int, Field(ge=1, le=MAX_PAGE)] = Field(1, description="Page number, from 1.")
    per_page: Annotated[int, Field(ge=1, le=MAX_PER_PAGE)] = Field(
        25, description=f"Candidates per page (at most {MAX_PER_PAGE})."
    )


class CandidateOut(Schema):
    id: UUID = Field(description="The candidate's id.")
    kind: str = Field(description="`answer` (a low-confidence answer) or `fact` (proposed).")
    status: str = Field(
        description="`pending` (waiting), `approved`, `rejected`, `answered` or `needs_user`."
    )
    failure_class: str = Field(description="Why an answer was captured; empty for a fact.")
    findings: list[str] = Field(description="What the scoring noticed about the answer.")
    question: str = Field(description="The question, scrubbed of personal data.")
    answer: str = Field(description="The agent's answer or the proposed fact, scrubbed.")
    comment: str = Field(description="The user's comment on the answer, scrubbed.")
    confidence: float | None = Field(description="The answer's confidence score (0 to 1).")
    signals: dict[str, float] = Field(description="The answer's scoring signals, by name.")
    context_ids: list[str] = Field(description="Ids of what the agent was given to answer.")
    feedback: str = Field(description="The user's feedback on the answer, if any.")
    mode: str = Field(description="The mode the answer was given in.")
    created_at: datetime = Field(description="When the candidate was captured.")
    decided_at: datetime | None = Field(description="When it was decided, if it was.")
    rejection_reason: str = Field(description="The reviewer's reason, for a rejection.")
    group_id: UUID = Field(description="Candidates with the same group id are alike.")
    similar_count: int = Field(description="How many alike candidates wait, this one included.")
    document_id: UUID | None = Field(description="The knowledge document it was published as.")


class CandidatePageOut(Schema):
    items: list[CandidateOut] = Field(description="One waiting candidate per group, by urgency.")
    total: int = Field(description="How many groups of candidates wait (matching the filters).")
    page: int = Field(description="This page's number.")
    per_page: int = Field(description="Candidates per page.")
    has_next: bool = Field(description="Whether a next page exists.")
    waiting_answers: int = Field(description="Low-confidence answers waiting, in all.")
    waiting_facts: int = Field(description="Proposed facts waiting, in all.")


class ApproveIn(Schema):
    question: Annotated[str, Field(max_length=MAX_EDIT_CHARS)] | None = Field(
        None, description="The question as it should be published; the captured one if absent."
    )
    answer: Annotated[str, Field(max_length=MAX_EDIT_CHARS)] | None = Field(
        None,
        description="The answer or fact as it should be published; the captured one if absent.",
    )
    apply_to_group: bool = Field(
        False, description="Approve the alike waiting candidates (same group id) with it."
    )


class RejectIn(Schema):
    reason: Annotated[str, Field(min_length=1, max_length=MAX_REASON_CHARS)] = Field(
        description="Why it is rejected (required)."
    )
    apply_to_group: bool = Field(
        False, description="Reject the alike waiting candidates (same group id) with it."
    )


class UserAnswerIn(Schema):
    answer: Annotated[str, Field(min_length=1, max_length=MAX_EDIT_CHARS)] = Field(
        description="The right answer, as a statement about the user; they confirm it first."
    )


class DecisionOut(Schema):
    candidate_id: UUID = Field(description="The decided candidate.")
    status: str = Field(
        description="Its status now: `approved`, `rejected`, `answered` or `needs_user`."
    )
    document_id: UUID | None = Field(description="The knowledge document it became (approvals).")
    threshold: float = Field(
        description="The workspace's review threshold after this decision (it tunes itself)."
    )


def _reviewer(request: HttpRequest) -> tuple[User, Actor]:
    api_key = request_key(request)
    reviewer = api_key.user
    if reviewer is None:  # ReviewerKeyAuth let only a reviewer's key through.
        raise PermissionDeniedError(gettext_noop("the review routes need a reviewer key"))
    actor = Actor(
        ActorType.REVIEWER,
        str(reviewer.pk),
        Channel.API,
        label=f"reviewer key {api_key.prefix}",
        client_ip=client_ip(request),
    )
    return reviewer, actor


def candidate_out(view: CandidateView) -> CandidateOut:
    return CandidateOut(
        id=view.id,
        kind=view.kind,
        status=view.status,
        failure_class=view.failure_class,
        findings=list(view.findings),
        question=view.question,
        answer=view.answer,
        comment=view.comment,
        confidence=view.confidence,
        signals=view.signals,
        context_ids=list(view.context_ids),
        feedback=view.feedback,
        mode=view.mode,
        created_at=view.created_at,
        decided_at=view.decided_at,
        rejection_reason=view.rejection_reason,
        group_id=view.group_id,
        similar_count=view.similar_count,
        document_id=view.document_id,
    )


@router.get(
    "/review/candidates",
    response={200: CandidatePageOut, **ERRORS},
    summary="List waiting candidates",
)
def list_candidates(request: HttpRequest, params: Query[CandidateQueryIn]) -> CandidatePageOut:
    """The review queue: waiting low-confidence answers and proposed facts, most urgent first.

    One candidate per group of alike ones (`similar_count` says how many), as on the review
    page; the text is scrubbed of personal data, and every read is audited for its user.
    """
    reviewer, actor = _reviewer(request)
    workspace = reviewer.workspace
    filters = QueueFilter(kind=params.kind or "", failure_class=params.failure_class or "")
    views, total = list_queue(
        workspace=workspace,
        actor=actor,
        filters=filters,
        page=params.page,
        per_page=params.per_page,
    )
    counts = waiting_counts(workspace=workspace)
    return CandidatePageOut(
        items=[candidate_out(view) for view in views],
        total=total,
        page=params.page,
        per_page=params.per_page,
        has_next=params.page * params.per_page < total,
        waiting_answers=counts.answers,
        waiting_facts=counts.facts,
    )


@router.get(
    "/review/candidates/{candidate_id}",
    response={200: CandidateOut, **ERRORS},
    summary="Read one candidate",
)
def read_candidate(request: HttpRequest, candidate_id: CandidateId) -> CandidateOut:
    """One candidate of the reviewer's workspace, waiting or decided (audited); else 404."""
    reviewer, actor = _reviewer(request)
    detail = get_candidate(workspace=reviewer.workspace, candidate_id=candidate_id, actor=actor)
    return candidate_out(detail.candidate)


@router.post(
    "/review/candidates/{candidate_id}/approve",
    response={200: DecisionOut, **ERRORS},
    summary="Approve a candidate",
)
def approve_candidate(
    request: HttpRequest, candidate_id: CandidateId, payload: ApproveIn
) -> DecisionOut:
    """Publish a waiting candidate (as edited) to the workspace's knowledge base.

    Exactly as on the review page: the decision counts towards the self-tuning threshold, is
    audited and announced (`review.decided`). 404 for a candidate of another workspace, 409
    when it was already decided.
    """
    reviewer, actor = _reviewer(request)
    document = decisions.approve_candidate(
        workspace=reviewer.workspace,
        candidate_id=candidate_id,
        reviewer=reviewer,
        actor=actor,
        embedder=embedder_for_workspace(reviewer.workspace),
        question=payload.question,
        answer=payload.answer,
        apply_to_group=payload.apply_to_group,
    )
    return DecisionOut(
        candidate_id=candidate_id,
        status=LearningCandidate.Status.APPROVED,
        document_id=document.pk,
        threshold=reviewer.workspace.review_threshold,
    )


@router.post(
    "/review/candidates/{candidate_id}/reject",
    response={200: DecisionOut, **ERRORS},
    summary="Reject a candidate",
)
def reject_candidate(
    request: HttpRequest, candidate_id: CandidateId, payload: RejectIn
) -> DecisionOut:
    """Reject a waiting candidate with a reason; nothing is published.

    Counts towards the self-tuning threshold, audited and announced (`review.decided`). 404
    for a candidate of another workspace, 409 when it was already decided.
    """
    reviewer, actor = _reviewer(request)
    candidate = decisions.reject_candidate(
        workspace=reviewer.workspace,
        candidate_id=candidate_id,
        reviewer=reviewer,
        actor=actor,
        reason=payload.reason,
        apply_to_group=payload.apply_to_group,
    )
    return DecisionOut(
        candidate_id=candidate.pk,
        status=candidate.status,
        document_id=None,
        threshold=reviewer.workspace.review_threshold,
    )


def _left_to_user(candidate_id: UUID, reviewer: User, status: str) -> DecisionOut:
    return DecisionOut(
        candidate_id=candidate_id,
        status=status,
        document_id=None,
        threshold=reviewer.workspace.review_threshold,
    )


@router.post(
    "/review/candidates/{candidate_id}/answer-for-user",
    response={200: DecisionOut, **ERRORS},
    summary="Answer a question for its user",
)
def answer_for_user(
    request: HttpRequest, candidate_id: CandidateId, payload: UserAnswerIn
) -> DecisionOut:
    """For a question about the user (their appointment, their plan): write the right answer
    into their memory, waiting in "Is this right?" until they confirm it; nothing is published.

    Only for a captured answer that is not a policy block (else 422). A user who paused memory,
    or turned it off in the mode, gets nothing: 409 `memory_paused` or `memory_off`.
    """
    reviewer, actor = _reviewer(request)
    decisions.answer_for_user(
        workspace=reviewer.workspace,
        candidate_id=candidate_id,
        reviewer=reviewer,
        actor=actor,
        embedder=embedder_for_workspace(reviewer.workspace),
        answer=payload.answer,
    )
    return _left_to_user(candidate_id, reviewer, LearningCandidate.Status.ANSWERED)


@router.post(
    "/review/candidates/{candidate_id}/needs-user",
    response={200: DecisionOut, **ERRORS},
    summary="Leave a question to its user",
)
def needs_user(request: HttpRequest, candidate_id: CandidateId) -> DecisionOut:
    """A question only the user can answer: it becomes an open item in their memory.

    Only for a captured answer that is not a policy block (else 422); 409 `memory_paused` or
    `memory_off` when the user paused memory or turned it off in the mode.
    """
    reviewer, actor = _reviewer(request)
    decisions.mark_needs_user(
        workspace=reviewer.workspace,
        candidate_id=candidate_id,
        reviewer=reviewer,
        actor=actor,
        embedder=embedder_for_workspace(reviewer.workspace),
    )
    return _left_to_user(candidate_id, reviewer, LearningCandidate.Status.NEEDS_USER)
