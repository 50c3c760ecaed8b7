"""Agent API routes: report answers with their confidence, user feedback, knowledge proposals.

Schemas live here rather than in schemas.py while the review app is young; they follow the
same `<Thing>In` / `<Thing>Out` naming.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from django.http import HttpRequest
from django.utils.translation import gettext_noop
from ninja import P, PathEx, Router, Schema, Status
from pydantic import Field

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
AnswerId = PathEx[UUID, P(description="The answer's id, as POST /answers returned it.")]

Signal = Annotated[float, Field(ge=0.0, le=1.0)]
ContextId = Annotated[str, Field(min_length=1, max_length=64)]


class SignalsIn(Schema):
    """The agent's own estimates, each in [0, 1]; higher is better."""

    retrieval: Signal = Field(
        description=("How well the retrieved memories and knowledge matched the question, 0 to 1.")
    )
    policy: Signal = Field(
        description=("How clear the answer is of policy problems (1: none; 0: blocked), 0 to 1.")
    )
    completeness: Signal = Field(
        description="How completely the answer covers the question, 0 to 1."
    )
    memory: Signal = Field(description="How well the user's memory supported the answer, 0 to 1.")


class AnswerIn(ScopeIn):
    session: UUID | None = Field(
        default=None,
        description=(
            "The session the answer was given in (UUID), if any; an incognito session is 409."
        ),
    )
    question: Text = Field(description="The user's question, as asked (stored encrypted).")
    answer: Text = Field(description="The agent's answer, as given (stored encrypted).")
    signals: SignalsIn = Field(
        description=(
            "The agent's own confidence signals; their weighted mean is the answer's confidence."
        )
    )
    context_ids: list[ContextId] = Field(
        description=(
            "Ids (each up to 64 characters, at most 500) of the memories or documents"
            " the answer used."
        ),
        default_factory=list,
        max_length=MAX_CONTEXT_IDS,
    )
    items: list[dict[str, Any]] = Field(
        description=(
            'Up to 100 things the answer was about, as JSON objects: {"name": …} (or '
            'title, label, id, sku), with an optional id, type ("tool_call" for a '
            "tool) and relation (searched_for, viewed, booked, asked_about). They "
            "feed the workspace graph's insights."
        ),
        default_factory=list,
        max_length=MAX_ITEMS,
    )


class AnswerOut(Schema):
    id: UUID = Field(description="The answer's id (UUID), for POST /answers/{answer_id}/feedback.")
    confidence: float = Field(
        description="The composite confidence, 0 to 1, from the signals (and feedback, ±0.1)."
    )
    captured: bool = Field(
        description=(
            "True when the answer was captured for review (low confidence, "
            "hallucination signal or thumbs down)."
        )
    )


class FeedbackIn(Schema):
    value: Literal["up", "down"] = Field(
        description=(
            "up (the answer helped) or down (it did not: the answer is captured for review)."
        )
    )
    comment: Annotated[Text, Field(max_length=MAX_COMMENT_CHARS)] | None = Field(
        default=None, description="The user's words about the answer, up to 2000 characters."
    )


class FeedbackOut(AnswerOut):
    feedback: str = Field(description="The feedback recorded: up or down.")


class KnowledgeCandidateIn(ScopeIn):
    statement: Annotated[Text, Field(description="A fact about the workspace's domain.")] = Field(
        description=(
            "A fact about the workspace's domain, to be reviewed before it enters the"
            " knowledge base."
        )
    )


class KnowledgeCandidateOut(Schema):
    id: UUID = Field(description="The candidate's id (UUID).")
    status: str = Field(
        description="Its review status: pending until a reviewer approves or rejects it."
    )


def report_answer_for(scope: Scope, payload: AnswerIn) -> AnswerOut:
    """Record the answer with its confidence; a weak one is captured for review."""
    result = report_answer(
        user=scope.user,
        mode=scope.mode,
        question=payload.question,
        answer=payload.answer,
        signals=payload.signals.model_dump(),
        actor=scope.actor,
        embedder=scope.embedder,
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
        raise NotFoundError(gettext_noop("answer not found")) from None


def record_feedback_for(scope: Scope, answer_id: UUID, payload: FeedbackIn) -> FeedbackOut:
    """Record the user's thumbs up or down on the answer; down captures it for review."""
    result = record_feedback(
        user=scope.user,
        mode=scope.mode,
        answer_id=answer_id,
        value=payload.value,
        comment=payload.comment,
        actor=scope.actor,
        embedder=scope.embedder,
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
        embedder=scope.embedder,
    )
    return KnowledgeCandidateOut(id=candidate.id, status=candidate.status)


@router.post(
    "/answers", summary="Report an answer and its confidence", response={201: AnswerOut, **ERRORS}
)
def report(request: HttpRequest, payload: AnswerIn) -> Status[AnswerOut]:
    """Report an answer and its confidence signals; a weak one is captured for review."""
    scope = resolve_scope(request, payload.user, payload.mode)
    return Status(201, report_answer_for(scope, payload))


@router.post(
    "/answers/{answer_id}/feedback",
    summary="Record the user's thumbs up or down on an answer",
    response={200: FeedbackOut, **ERRORS},
)
def feedback(request: HttpRequest, answer_id: AnswerId, payload: FeedbackIn) -> FeedbackOut:
    """The user's thumbs up or down on an answer; down captures it for review."""
    scope = answer_scope(
        request_key(request), answer_id, channel=Channel.API, ip=client_ip(request)
    )
    return record_feedback_for(scope, answer_id, payload)


@router.post(
    "/knowledge/candidates",
    summary="Propose a domain fact for the knowledge base",
    response={201: KnowledgeCandidateOut, **ERRORS},
)
def propose_knowledge(
    request: HttpRequest, payload: KnowledgeCandidateIn
) -> Status[KnowledgeCandidateOut]:
    """Propose a statement about the workspace's domain for the knowledge base (reviewed)."""
    scope = resolve_scope(request, payload.user, payload.mode)
    return Status(201, propose_knowledge_for(scope, payload.statement))
