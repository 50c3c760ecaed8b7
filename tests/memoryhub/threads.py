"""Build sessions and messages for the forgetting and maintenance tests, through the services."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryhub.actors import Actor
from memoryhub.embeddings import Embedder, default_embedder
from memoryhub.models import Memory, Message, Mode, Session, User
from memoryhub.services.ingest import cite_messages
from memoryhub.services.sessions import add_message, put_working_memory, start_session

ACTOR = Actor.system("tests")


def make_session(user: User, mode: Mode) -> Session:
    return start_session(user=user, mode=mode, actor=ACTOR)


def say(
    session: Session, text: str, *, embedder: Embedder | None = None, role: str = "user"
) -> Message:
    """Append one message to the session, at the current (frozen) time."""
    added = add_message(
        session=session,
        role=role,
        content=text,
        actor=ACTOR,
        embedder=embedder or default_embedder(),
    )
    return added.message


def set_working_memory(session: Session, data: dict[str, Any]) -> None:
    put_working_memory(session=session, data=data, actor=ACTOR)


def link_sources(memory: Memory, messages: Sequence[Message]) -> None:
    cite_messages(memory, [message.pk for message in messages])
