"""Agent API routes: sessions, their messages, their end, and their working memory."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from django.http import HttpRequest
from ninja import Body, Router, Schema, Status
from pydantic import Field

from memoryhub.embeddings import default_embedder
from memoryhub.errors import NotFoundError
from memoryhub.models import Session
from memoryhub.services import sessions

from .auth import Scope, resolve_scope
from .schemas import ERRORS, ScopeIn, Text

router = Router(tags=["sessions"])


class SessionIn(ScopeIn):
    incognito: bool = Field(
        default=False,
        description="Read memory but never write any: no messages kept, no extraction.",
    )


class SessionOut(Schema):
    id: UUID
    mode: str
    is_incognito: bool
    started_at: datetime
    last_activity_at: datetime
    ended_at: datetime | None
    extraction_status: str

    @classmethod
    def of(cls, session: Session) -> SessionOut:
        return cls(
            id=session.pk,
            mode=session.mode.slug,
            is_incognito=session.is_incognito,
            started_at=session.started_at,
            last_activity_at=session.last_activity_at,
            ended_at=session.ended_at,
            extraction_status=session.extraction_status,
        )


class MessageIn(Schema):
    role: Annotated[str, Field(pattern="^(user|assistant)$", description="user or assistant")]
    content: Annotated[Text, Field(min_length=1)]


class MessageOut(Schema):
    id: UUID
    seq: int
    role: str
    is_flagged: bool = Field(description="The text reads like instructions to a model.")
    applied_memory_ids: list[UUID] = Field(
        description="Memories a correction or a 'remember that' in this message changed at once."
    )


class WorkingMemoryOut(Schema):
    data: dict[str, Any]
    updated_at: datetime | None
    expires_at: datetime | None


def _scoped_session(request: HttpRequest, session_id: UUID) -> tuple[Scope, Session]:
    owner = sessions.locate_session(session_id)
    try:
        scope = resolve_scope(request, str(owner.user_id), owner.mode.slug)
    except NotFoundError:
        # Out of the key's reach: say "no such session", not which part failed.
        raise NotFoundError("session not found") from None
    session = sessions.get_session(
        user=scope.user, mode=scope.mode, session_id=session_id, agent=scope.agent
    )
    return scope, session


@router.post("/sessions", response={201: SessionOut, **ERRORS}, summary="Start a session")
def start_session(request: HttpRequest, body: SessionIn) -> Status[SessionOut]:
    scope = resolve_scope(request, body.user, body.mode)
    session = sessions.start_session(
        user=scope.user,
        mode=scope.mode,
        actor=scope.actor,
        agent=scope.agent,
        is_incognito=body.incognito,
    )
    return Status(201, SessionOut.of(session))


@router.post(
    "/sessions/{session_id}/messages",
    response={201: MessageOut, **ERRORS},
    summary="Add a message to a session",
)
def add_message(request: HttpRequest, session_id: UUID, body: MessageIn) -> Status[MessageOut]:
    scope, session = _scoped_session(request, session_id)
    added = sessions.add_message(
        session=session,
        role=body.role,
        content=body.content,
        actor=scope.actor,
        embedder=default_embedder(),
    )
    message = added.message
    return Status(
        201,
        MessageOut(
            id=message.pk,
            seq=message.seq,
            role=message.role,
            is_flagged=message.is_flagged,
            applied_memory_ids=list(added.applied_memory_ids),
        ),
    )


@router.post(
    "/sessions/{session_id}/end",
    response={200: SessionOut, **ERRORS},
    summary="End a session and queue its extraction",
)
def end_session(request: HttpRequest, session_id: UUID) -> SessionOut:
    scope, session = _scoped_session(request, session_id)
    return SessionOut.of(sessions.end_session(session=session, actor=scope.actor))


@router.put(
    "/sessions/{session_id}/working-memory",
    response={200: WorkingMemoryOut, **ERRORS},
    summary="Replace the session's working memory (a JSON object)",
)
def put_working_memory(
    request: HttpRequest, session_id: UUID, data: Body[dict[str, Any]]
) -> WorkingMemoryOut:
    scope, session = _scoped_session(request, session_id)
    memory = sessions.put_working_memory(session=session, data=data, actor=scope.actor)
    return WorkingMemoryOut(
        data=memory.data, updated_at=memory.updated_at, expires_at=memory.expires_at
    )


@router.get(
    "/sessions/{session_id}/working-memory",
    response={200: WorkingMemoryOut, **ERRORS},
    summary="Read the session's working memory",
)
def get_working_memory(request: HttpRequest, session_id: UUID) -> WorkingMemoryOut:
    scope, session = _scoped_session(request, session_id)
    memory = sessions.get_working_memory(session=session, actor=scope.actor)
    return WorkingMemoryOut(
        data=memory.data, updated_at=memory.updated_at, expires_at=memory.expires_at
    )
