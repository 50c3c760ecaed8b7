"""A heavy user's search: their nearest memories through their own vector index, then ranked.

Recall ranks a user's candidates by an exact scan (docs/retrieval.md, "Exact per-user search"):
a few milliseconds at 1,000 memories, too slow at 100,000. A user with `MEMORYHUB_NEAREST_FROM`
active memories in a mode gets their own vector index (`manage.py index_heavy_users`). Once
they have it, the ranking reads only the `MEMORYHUB_NEAREST_CANDIDATES` nearest by vector,
through that index, every candidate holding a rare query word (at most
`MEMORYHUB_NEAREST_WORD_CAP` of the user's memories hold it; the blind index's GIN), and as many
nearest among those holding a frequent one or spoken by a named speaker, and ranks them with
the same SQL, the IDF counted over all of the user's memories. pgvector 0.8's
iterative scan keeps reading the index until enough rows pass the mode, status and model
filters. "Heavy users" in docs/retrieval.md gives the measurements behind the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from django.conf import settings
from django.db.models import QuerySet

from memoryhub.models import Memory, Mode, User
from memoryhub.queries.recall_filter import RecallFilter
from memoryhub.vector_search import has_own_index, nearest_order

_Row = TypeVar("_Row", bound=Any)


def is_broad(recall_filter: RecallFilter) -> bool:
    """Whether a search may go through the index: not narrowed by kind, period, topic or time.

    The index finds the nearest rows first and filters them after; a narrow filter could leave
    too few of them, so a narrowed search reads every candidate exactly.
    """
    return not (
        recall_filter.kinds
        or recall_filter.since
        or recall_filter.until
        or recall_filter.topics
        or recall_filter.as_of
    )


def nearest_candidates(
    *, user: User, mode: Mode, recall_filter: RecallFilter, using: str
) -> int | None:
    """How many nearest candidates to rank for this search, or None to rank every candidate.

    A user is heavy once `manage.py index_heavy_users` has built their index; the check costs
    a smaller user one catalogue lookup a minute per process, not a count of their memories.
    """
    if not settings.MEMORYHUB_NEAREST_FROM or not is_broad(recall_filter):
        return None
    if not has_own_index(user_id=user.pk, using=using):
        return None
    return int(settings.MEMORYHUB_NEAREST_CANDIDATES)


def nearest_rows(
    candidates: QuerySet[Memory, _Row], *, vector: Sequence[float], model: str, limit: int
) -> QuerySet[Memory, _Row]:
    """The `limit` candidates nearest to `vector`, among those `model` embedded."""
    return candidates.filter(embedding_model=model).order_by(nearest_order(vector))[:limit]


def scan_settings(limit: int) -> tuple[str, list[str]]:
    """The statement that turns on the iterative scan for the current transaction.

    `relaxed_order`: rows may come slightly out of order, which costs nothing here since the
    ranking scores every candidate again with the full-precision vector. `ef_search` (the
    candidate list the index search keeps) at least the number of rows asked for.
    """
    return (
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
        "set_config('hnsw.ef_search', %s, true)",
        [str(max(40, limit))],
    )
