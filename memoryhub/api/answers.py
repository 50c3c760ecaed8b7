"""Agent API routes: report answers with their confidence, user feedback, knowledge proposals.

Schemas live here rather than in schemas.py while the review app is young; they follow the
same `<Thing>In` / `<Thing>Out` naming.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from django.http import HttpRequest
from ninja import Router, Schema, Status
from pydantic import Field

from memoryhub.embeddings import default_embedder
from memoryhub.errors import NotFoundError
from memoryhub.http import client_ip
from memoryhub.knowledge.answers import (
    MAX_COMMENT_CHARS,
    MAX_CONTEXT_IDS,
    MAX_ITEMS,
    propose_knowledge_candidate,
    record_feedback,
    report_answer,
)
from memoryhub.knowledge.queries import answer_owner
from memoryhub.models import ApiKey, Channel

from .auth import Scope, request_key, resolve_scope, scope_for_key
from .schemas import ERRORS, ScopeIn, Text

router = Router(tags=["answers"])

Signal = Annotated[float, Field(ge=0.0, le=1.0)]
ContextId = Annotated[str, Field(min_length=1, max_length=64)]


class SignalsIn(Schema):
    """The agent's own estimates, each in [0, 1]; higher is better."""

    retrieval: Signal
    policy: Signal
    completeness: Signal
    memory: Signal


class AnswerIn(ScopeIn):
    session: UUID | None = None
    question: Text
    answer: Text
    signals: SignalsIn
    context_ids: list[ContextId] = Field(default_factory=list, max_length=MAX_CONTEXT_IDS)
    items: list[dict[str, Any]] = Field(default_factory=list, max_length=MAX_ITEMS)


class AnswerOut(Schema):
    id: UUID
    confidence: float
    captured: bool


class FeedbackIn(Schema):
    value: Literal["up", "down"]
    comment: Annotated[Text, Field(max_length=MAX_COMMENT_CHARS)] | None = None


class FeedbackOut(AnswerOut):
    feedback: str


class KnowledgeCandidateIn(ScopeIn):
    statement: Annotated[Text, Field(description="A fact about the workspace's domain.")]


class KnowledgeCandidateOut(Schema):
    id: UUID
    status: str


def report_answer_for(scope: Scope, payload: AnswerIn) -> AnswerOut:
    """Record the answer with its confidence; a weak one is captured for review."""
    result = report_answer(
        user=scope.user,
        mode=scope.mode,
        question=payload.question,
        answer=payload.answer,
        signals=payload.signals.model_dump(),
        actor=scope.actor,
        embedder=default_embedder(),
        agent_id=scope.agent.pk if scope.agent else None,
        session_id=payload.session,
        context_ids=payload.context_ids,
        items=payload.items,
    )
    answer = result.answer
    return AnswerOut(id=answer.id, confidence=answer.confidence, captured=result.is_captured)


def answer_scope(api_key: ApiKey, answer_id: UUID, *, channel: Channel, ip: str | None) -> Scope:
    """The scope of an answer the key reaches; any other answer is NotFoundError."""
    user_id, mode_slug = answer_owner(answer_id=answer_id)
    try:
        return scope_for_key(api_key, str(user_id), mode_slug, channel=channel, ip=ip)
    except NotFoundError:
        # Another workspace's (or another user's) answer simply does not exist for this key.
        raise NotFoundError("answer not found") from None


def record_feedback_for(scope: Scope, answer_id: UUID, payload: FeedbackIn) -> FeedbackOut:
    """Record the user's thumbs up or down on the answer; down captures it for review."""
    result = record_feedback(
        user=scope.user,
        mode=scope.mode,
        answer_id=answer_id,
        value=payload.value,
        comment=payload.comment,
        actor=scope.actor,
        embedder=default_embedder(),
    )
    answer = result.answer
    return FeedbackOut(
        id=answer.id,
        confidence=answer.confidence,
        captured=result.is_captured,
        feedback=answer.feedback,
    )


def propose_knowledge_for(scope: Scope, statement: str) -> KnowledgeCandidateOut:
    """Propose a statement about the workspace's domain; a reviewer accepts or rejects it."""
    candidate = propose_knowledge_candidate(
        user=scope.user,
        mode=scope.mode,
        statement=statement,
        actor=scope.actor,
        embedder=default_embedder(),
    )
    return KnowledgeCandidateOut(id=candidate.id, status=candidate.status)


@router.post("/answers", response={201: AnswerOut, **ERRORS})
def report(request: HttpRequest, payload: AnswerIn) -> Status[AnswerOut]:
    """Report an answer and its confidence signals; a weak one is captured for review."""
    scope = resolve_scope(request, payload.user, payload.mode)
    return Status(201, report_answer_for(scope, payload))


@router.post("/answers/{answer_id}/feedback", response={200: FeedbackOut, **ERRORS})
def feedback(request: HttpRequest, answer_id: UUID, payload: FeedbackIn) -> FeedbackOut:
    """The user's thumbs up or down on an answer; down captures it for review."""
    scope = answer_scope(
        request_key(request), answer_id, channel=Channel.API, ip=client_ip(request)
    )
    return record_feedback_for(scope, answer_id, payload)


@router.post("/knowledge/candidates", response={201: KnowledgeCandidateOut, **ERRORS})
def propose_knowledge(
    request: HttpRequest, payload: KnowledgeCandidateIn
) -> Status[KnowledgeCandidateOut]:
    """Propose a statement about the workspace's domain for the knowledge base (reviewed)."""
    scope = resolve_scope(request, payload.user, payload.mode)
    return Status(201, propose_knowledge_for(scope, payload.statement))
