"""MemoryHub's side of the peer benchmarks: its Python services, as its API and MCP call them.

Needs Django set up and a database (bench/peers/mem0.py provides both).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.embeddings import default_embedder
from memoryhub.models import Mode, User
from memoryhub.queries.recall import search_memories
from memoryhub.services.agents import get_or_create_workspace
from memoryhub.services.memories import NewMemory, remember, remember_many
from memoryhub.services.users import create_user, ensure_mode

if TYPE_CHECKING:
    from bench.locomo import Turn


class MemoryHubSide:
    """MemoryHub through its Python services, as its API and MCP adapters call them."""

    def __init__(self) -> None:
        self.embedder = default_embedder()
        self.actor = Actor.system("bench")
        self.workspace = get_or_create_workspace(slug="bench-peers")
        self.scopes: dict[str, tuple[User, Mode]] = {}

    def _scope(self, user: str) -> tuple[User, Mode]:
        if user not in self.scopes:
            owner = create_user(workspace=self.workspace, external_id=user)
            self.scopes[user] = (owner, ensure_mode(user=owner, slug="personal"))
        return self.scopes[user]

    def add_one(self, *, user: str, turns: Sequence[Turn]) -> list[float]:
        """Store each turn with its own call: seconds per call."""
        owner, mode = self._scope(user)
        seconds = []
        for turn in turns:
            item = NewMemory(kind="episode", content=turn.text, occurred_at=turn.occurred_at)
            started = time.perf_counter()
            remember(user=owner, mode=mode, item=item, actor=self.actor, embedder=self.embedder)
            seconds.append(time.perf_counter() - started)
        return seconds

    def add_batch(self, *, user: str, turns: Sequence[Turn], batch: int) -> list[float]:
        """Store the turns `batch` at a time, dated as said and kept in dialog order
        (bench/memoryhub_retriever.py stores LoCoMo the same way)."""
        owner, mode = self._scope(user)
        told_at = timezone.now()
        seconds = []
        for start in range(0, len(turns), batch):
            items = [
                NewMemory(
                    kind="episode",
                    content=turn.text,
                    occurred_at=turn.occurred_at,
                    created_at=told_at + timedelta(milliseconds=start + offset),
                )
                for offset, turn in enumerate(turns[start : start + batch])
            ]
            started = time.perf_counter()
            remember_many(
                user=owner, mode=mode, items=items, actor=self.actor, embedder=self.embedder
            )
            seconds.append(time.perf_counter() - started)
        return seconds

    def search(self, *, user: str, queries: Sequence[str], k: int, exact: bool) -> dict[str, Any]:
        """Search each query; `exact` forbids index scans (MemoryHub has no ANN index: the
        same answers are expected, and the recall against it checks that)."""
        owner, mode = self._scope(user)
        seconds, found = [], []
        with connection.cursor() as cursor:
            cursor.execute(f"SET enable_indexscan = {'off' if exact else 'on'}")
        try:
            for query in queries:
                started = time.perf_counter()
                items = search_memories(
                    user=owner,
                    mode=mode,
                    query=query,
                    actor=self.actor,
                    embedder=self.embedder,
                    k=k,
                )
                seconds.append(time.perf_counter() - started)
                found.append([item.content for item in items])
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET enable_indexscan")
        return {"seconds": seconds, "found": found}
