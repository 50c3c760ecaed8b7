"""MemoryHub itself as a benchmark `Retriever`: the service's own ingestion and search code.

Needs Django set up and a database (`manage.py bench_retrieval` provides both). Each LoCoMo
conversation becomes one user holding both speakers; each turn one memory written through
`remember_many` with extraction off, dated with its session's date.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID, uuid4

import numpy as np
from django.utils import timezone
from numpy.typing import NDArray

from memoryhub.actors import Actor
from memoryhub.embeddings import Embedder
from memoryhub.models import Mode, User, Workspace
from memoryhub.queries.recall import search_memories
from memoryhub.services.agents import get_or_create_workspace
from memoryhub.services.memories import NewMemory, remember_many
from memoryhub.services.users import create_user, ensure_mode

if TYPE_CHECKING:
    from bench.locomo import Conversation

# A dialog turn is something that happened, said on a given day: an episode.
TURN_KIND = "episode"


class CachedEmbedder:
    """An `Embedder` that remembers every vector it computed, so two retrievers embed once.

    With a `path`, the vectors are also kept on disk between runs (`save`), keyed by a hash of
    each text, so the file holds no LoCoMo text: a recall experiment then embeds nothing.
    """

    def __init__(self, inner: Embedder, *, path: Path | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.path = path
        self._vectors: dict[str, list[float]] = {}
        if path is not None and path.is_file():
            with np.load(path) as stored:
                self._vectors = dict(
                    zip(stored["keys"].tolist(), stored["vectors"].tolist(), strict=True)
                )

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [_text_key(text) for text in texts]
        missing = {
            key: text for key, text in zip(keys, texts, strict=True) if key not in self._vectors
        }
        if missing:
            vectors = self.inner.embed(list(missing.values()))
            self._vectors.update(zip(missing, vectors, strict=True))
        return [self._vectors[key] for key in keys]

    def embed_query(self, text: str) -> list[float]:
        # A model may embed a question unlike a stored text: its own key.
        key = _text_key(f"query\0{text}")
        if key not in self._vectors:
            self._vectors[key] = self.inner.embed_query(text)
        return self._vectors[key]

    def save(self) -> None:
        """Write the vectors to `path` (nothing without one)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._vectors), dtype="U64")
        vectors = np.array(list(self._vectors.values()), dtype=np.float32)
        partial = self.path.with_name(f"{self.path.name}.partial.npz")
        np.savez(partial, keys=keys, vectors=vectors)
        partial.replace(self.path)

    def encode(
        self,
        sentences: list[str],
        *,
        batch_size: int,
        normalize_embeddings: bool,
        convert_to_numpy: bool,
        show_progress_bar: bool,
    ) -> NDArray[np.float32]:
        """The `SentenceEncoder` face of the same cache, for the MiniLM baseline."""
        return np.asarray(self.embed(sentences), dtype=np.float32)


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class MemoryHubRetriever:
    """Stores turns with `remember_many` and ranks them with `search_memories`."""

    name = "memoryhub"

    def __init__(
        self, *, embedder: Embedder, workspace: Workspace | None = None, batch_size: int = 200
    ) -> None:
        self.embedder = embedder
        self.workspace = workspace or get_or_create_workspace(slug="bench-locomo")
        self.batch_size = batch_size
        self.actor = Actor.system("bench")
        self.scopes: dict[str, tuple[User, Mode]] = {}
        # Memory id → LoCoMo turn id, to score rankings and contexts.
        self.turn_of: dict[UUID, str] = {}
        # Users of several runs in one database must not collide on their external ids.
        self._run = uuid4().hex[:8]

    def index(self, conversation: Conversation) -> None:
        """Create the conversation's user and remember every turn, in batches."""
        user = create_user(
            workspace=self.workspace, external_id=f"locomo-{conversation.id}-{self._run}"
        )
        mode = ensure_mode(user=user, slug="personal")
        self.scopes[conversation.id] = (user, mode)
        turns = conversation.turns
        # Remembered in the order they were said, as an agent storing a dialog would: the
        # neighbours of a turn in the ranking are the turns before and after it.
        told_at = timezone.now()
        for start in range(0, len(turns), self.batch_size):
            batch = turns[start : start + self.batch_size]
            rows = remember_many(
                user=user,
                mode=mode,
                items=[
                    NewMemory(
                        kind=TURN_KIND,
                        content=turn.text,
                        occurred_at=turn.occurred_at,
                        created_at=told_at + timedelta(milliseconds=start + offset),
                    )
                    for offset, turn in enumerate(batch)
                ],
                actor=self.actor,
                embedder=self.embedder,
            )
            self.turn_of.update(
                (row.id, turn.dia_id) for row, turn in zip(rows, batch, strict=True)
            )

    def search(self, conversation_id: str, query: str, k: int) -> list[str]:
        """Rank the conversation's turns for the question with MemoryHub's own search."""
        user, mode = self.scopes[conversation_id]
        items = search_memories(
            user=user, mode=mode, query=query, actor=self.actor, embedder=self.embedder, k=k
        )
        return [self.turn_of[item.id] for item in items]
