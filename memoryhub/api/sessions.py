"""Agent API routes: sessions, their messages, their end, and their working memory."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from django.http import HttpRequest
from django.utils.translation import gettext_noop
from ninja import Body, P, PathEx, Router, Schema, Status
from pydantic import Field

from memoryhub.errors import NotFoundError
from memoryhub.http import client_ip
from memoryhub.models import ApiKey, Channel, Session
from memoryhub.services import sessions

from .auth import Scope, request_key, resolve_scope, scope_for_key
from .schemas import ERRORS, ScopeIn, Text

router = Router(tags=["sessions"])
SessionId = PathEx[
    UUID,
    P(
        description="The session's id, as POST /sessions returned it; another user's session is 404."
    ),
]


class SessionIn(ScopeIn):
    incognito: bool = Field(
        default=False,
        description="Read memory but never write any: no messages kept, no extraction.",
    )


class SessionOut(Schema):
    id: UUID = Field(
        description="The session's id (UUID), for its messages, working memory and end."
    )
    mode: str = Field(description="The mode the session belongs to (slug).")
    is_incognito: bool = Field(
        description="True: the session reads memory but keeps no messages and writes nothing."
    )
    started_at: datetime = Field(description="When the session started (UTC).")
    last_activity_at: datetime = Field(description="When its last message arrived (UTC).")
    ended_at: datetime | None = Field(description="When it was ended (UTC); null while open.")
    extraction_status: str = Field(
        description=(
            "not_started (open), queued, running, done, failed or skipped (incognito,"
            " no messages, or memory paused)."
        )
    )

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
    content: Annotated[Text, Field(min_length=1)] = Field(
        description=(
            "The message text (at least 1 character; at most "
            "MEMORYHUB_MAX_CONTENT_BYTES, 64 KiB by default, else 413)."
        )
    )


class MessageOut(Schema):
    id: UUID = Field(description="The message's id (UUID).")
    seq: int = Field(description="Its position in the session, from 1.")
    role: str = Field(description="user or assistant.")
    is_flagged: bool = Field(description="The text reads like instructions to a model.")
    applied_memory_ids: list[UUID] = Field(
        description="Memories a correction or a 'remember that' in this message changed at once."
    )


class WorkingMemoryOut(Schema):
    data: dict[str, Any] = Field(
        description=(
            "The session's scratch notes as stored (a JSON object); {} when there are none."
        )
    )
    updated_at: datetime | None = Field(
        description="When they were last replaced (UTC); null when there are none."
    )
    expires_at: datetime | None = Field(
        description=(
            "When they are dropped (UTC; MEMORYHUB_WORKING_MEMORY_TTL_DAYS, 30 days "
            "by default, after the last write); null when there are none."
        )
    )


def session_scope(
    api_key: ApiKey, session_id: UUID, *, channel: Channel, ip: str | None
) -> tuple[Scope, Session]:
    """The session, and the scope it lives in, if the key reaches it; else NotFoundError."""
    owner = sessions.locate_session(session_id)
    try:
        scope = scope_for_key(api_key, str(owner.user_id), owner.mode.slug, channel=channel, ip=ip)
    except NotFoundError:
        # Out of the key's reach: say "no such session", not which part failed.
        raise NotFoundError(gettext_noop("session not found")) from None
    session = sessions.get_session(
        user=scope.user, mode=scope.mode, session_id=session_id, agent=scope.agent
    )
    return scope, session


def _scoped_session(request: HttpRequest, session_id: UUID) -> tuple[Scope, Session]:
    return session_scope(
        request_key(request), session_id, channel=Channel.API, ip=client_ip(request)
    )


def start_session_for(scope: Scope, *, is_incognito: bool) -> SessionOut:
    """Open a session for the scope's user and mode, on behalf of the scope's agent."""
    session = sessions.start_session(
        user=scope.user,
        mode=scope.mode,
        actor=scope.actor,
        agent=scope.agent,
        is_incognito=is_incognito,
    )
    return SessionOut.of(session)


def add_message_to(scope: Scope, session: Session, message: MessageIn) -> MessageOut:
    """Append a message to the session's transcript (corrections apply at once)."""
    added = sessions.add_message(
        session=session,
        role=message.role,
        content=message.content,
        actor=scope.actor,
        embedder=scope.embedder,
    )
    return MessageOut(
        id=added.message.pk,
        seq=added.message.seq,
        role=added.message.role,
        is_flagged=added.message.is_flagged,
        applied_memory_ids=list(added.applied_memory_ids),
    )


def end_session_for(scope: Scope, session: Session) -> SessionOut:
    """End the session and queue its extraction (ending it again changes nothing)."""
    return SessionOut.of(sessions.end_session(session=session, actor=scope.actor))


@router.post("/sessions", response={201: SessionOut, **ERRORS}, summary="Start a session")
def start_session(request: HttpRequest, body: SessionIn) -> Status[SessionOut]:
    """Open a conversation with the user in the mode; log its messages, then end it."""
    scope = resolve_scope(request, body.user, body.mode)
    return Status(201, start_session_for(scope, is_incognito=body.incognito))


@router.post(
    "/sessions/{session_id}/messages",
    response={201: MessageOut, **ERRORS},
    summary="Add a message to a session",
)
def add_message(request: HttpRequest, session_id: SessionId, body: MessageIn) -> Status[MessageOut]:
    """Append one message to the transcript; a correction or "remember that" applies at once
    (`applied_memory_ids`). 404 for a session out of the key's reach."""
    scope, session = _scoped_session(request, session_id)
    return Status(201, add_message_to(scope, session, body))


@router.post(
    "/sessions/{session_id}/end",
    response={200: SessionOut, **ERRORS},
    summary="End a session and queue its extraction",
)
def end_session(request: HttpRequest, session_id: SessionId) -> SessionOut:
    """End the session: its extraction is queued (`extraction_status`), or skipped when it is
    incognito, empty or the user paused memory. Ending it again changes nothing."""
    scope, session = _scoped_session(request, session_id)
    return end_session_for(scope, session)


@router.put(
    "/sessions/{session_id}/working-memory",
    response={200: WorkingMemoryOut, **ERRORS},
    summary="Replace the session's working memory (a JSON object)",
)
def put_working_memory(
    request: HttpRequest, session_id: SessionId, data: Body[dict[str, Any]]
) -> WorkingMemoryOut:
    """Replace the session's scratch notes (a JSON object, size-capped, encrypted); they expire
    after a while. 409 once the session has ended."""
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
def get_working_memory(request: HttpRequest, session_id: SessionId) -> WorkingMemoryOut:
    """The session's scratch notes, or `{}` with null times when there are none."""
    scope, session = _scoped_session(request, session_id)
    memory = sessions.get_working_memory(session=session, actor=scope.actor)
    return WorkingMemoryOut(
        data=memory.data, updated_at=memory.updated_at, expires_at=memory.expires_at
    )
