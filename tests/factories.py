"""Build test data through the real services, so tests exercise encryption, scoping and audit."""

from __future__ import annotations

import itertools
from typing import Any

from memoryhub.actors import Actor
from memoryhub.embeddings import Embedder, default_embedder
from memoryhub.models import Memory, Mode, User, Workspace
from memoryhub.services.agents import create_agent, get_or_create_workspace
from memoryhub.services.memories import NewMemory, remember
from memoryhub.services.users import create_user, ensure_mode

_counter = itertools.count(1)


def make_workspace(slug: str | None = None) -> Workspace:
    return get_or_create_workspace(slug=slug or f"ws-{next(_counter)}")


def make_user(
    *,
    workspace: Workspace | None = None,
    email: str | None = None,
    external_id: str | None = None,
    password: str | None = "correct horse battery staple",
) -> User:
    n = next(_counter)
    return create_user(
        workspace=workspace or make_workspace(),
        email=email or f"user{n}@example.com",
        external_id=external_id or f"user-{n}",
        password=password,
    )


def mode_of(user: User, slug: str = "personal") -> Mode:
    return ensure_mode(user=user, slug=slug, create=True)


def make_memory(
    user: User,
    mode: Mode,
    content: str,
    *,
    kind: str = "fact",
    embedder: Embedder | None = None,
    actor: Actor | None = None,
    **fields: Any,
) -> Memory:
    """Remember one memory through the service; the row, for tests that look at what is stored."""
    item = remember(
        user=user,
        mode=mode,
        item=NewMemory(kind=kind, content=content, **fields),
        actor=actor or Actor.system("factories"),
        embedder=embedder or default_embedder(),
    )
    return Memory.all_owners.get(pk=item.id)


def make_agent(workspace: Workspace, name: str = "assistant") -> tuple[Any, str]:
    agent, issued = create_agent(workspace=workspace, name=name)
    return agent, issued.raw_key
