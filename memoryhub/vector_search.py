"""The cosine distance between a query vector and stored vectors, never across two models.

Vectors of two embedding models live in unrelated spaces: their cosine means nothing. Every
stored vector records its model (`embedding_model`), and every search measures distances
through `cosine_distance`, which only compares a row's vector when the same model made it.
During a switch of model (`manage.py reembed`), the rows not yet re-embedded count as
unrelated (distance 1, cosine 0) instead: a threshold drops them, a ranking puts them last,
and recall can still find them by their words.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from django.db import connections
from django.db.models import Case, FloatField, Func, Value, When
from pgvector import HalfVector, Vector
from pgvector.django import CosineDistance

from memoryhub.embeddings import DIMENSIONS, distance_scale

# The distance of a vector that cannot be compared: cosine 0, as for an unrelated text.
UNRELATED = 1.0


def cosine_distance(vector: Sequence[float], *, model: str, field: str = "embedding") -> Case:
    """The cosine distance of `field` to `vector` (made by `model`); UNRELATED for another model.

    The distance is read on MiniLM's scale (`embeddings.distance_scale`), so the score's blend
    and every threshold keep their meaning whichever model made the vectors.
    """
    distance = CosineDistance(field, list(vector))
    scale = distance_scale(model)
    return Case(
        When(**{f"{field}_model": model}, then=distance if scale == 1.0 else distance * scale),
        default=Value(UNRELATED),
        output_field=FloatField(),
    )


INDEX_PREFIX = "memory_nearest_"


def index_name(user_id: UUID) -> str:
    """The name of a heavy user's own vector index (a UUID's hex digits: safe in SQL)."""
    return f"{INDEX_PREFIX}{user_id.hex}"


PROFILE_INDEX_PREFIX = "memory_profile_"


def profile_index_name(user_id: UUID) -> str:
    """The name of a heavy user's own profile index (services/nearest_index.py)."""
    return f"{PROFILE_INDEX_PREFIX}{user_id.hex}"


# How long a process trusts its answer to "has this user their own index?". A stale answer
# changes only the speed of a search, never its results: without the index the nearest
# candidates are read by an exact sort (the same half-precision order), and with an index
# unknown the search reads every candidate exactly, as for any other user.
OWN_INDEX_SECONDS = 60.0
# Past this many users the answers are forgotten at once: the cache stays small in a worker
# that serves many users, and an answer lost costs one catalogue lookup.
OWN_INDEX_ANSWERS = 10_000
_own_index: dict[str, tuple[bool, float]] = {}


def has_own_index(*, user_id: UUID, using: str) -> bool:
    """Whether the user has their own vector index: a catalogue lookup, whose answer this
    process keeps for `OWN_INDEX_SECONDS` (every search and context request asks, issue 34)."""
    name = index_name(user_id)
    now = time.monotonic()
    known = _own_index.get(name)
    if known is not None and now - known[1] < OWN_INDEX_SECONDS:
        return known[0]
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        row = cursor.fetchone()
    answer = bool(row and row[0])
    if len(_own_index) >= OWN_INDEX_ANSWERS:
        _own_index.clear()
    _own_index[name] = (answer, now)
    return answer


def forget_own_index(user_id: UUID) -> None:
    """Forget this process's answer for the user, whose index was just made or dropped here.

    Another process (`manage.py index_heavy_users`) is heard of within `OWN_INDEX_SECONDS`.
    """
    _own_index.pop(index_name(user_id), None)


# What a heavy user's vector index holds (services/nearest_index.py) and what the search through
# it orders by: the vector in half precision, half the size of the full one.
HALF_PRECISION = f"(embedding::halfvec({DIMENSIONS}))"


class _HalfPrecision(Func):
    # Written as the index's expression, so that PostgreSQL recognises it.
    template = f"(%(expressions)s::halfvec({DIMENSIONS}))"


def nearest_order(vector: Sequence[float]) -> CosineDistance:
    """The order of a heavy user's index: only an order, never a score, and the caller keeps
    to the rows of `vector`'s model (queries/nearest.py)."""
    return CosineDistance(_HalfPrecision("embedding"), HalfVector(list(vector)))


def cosine_distance_sql(
    vector: Sequence[float], *, model: str, column: str
) -> tuple[str, list[Any]]:
    """`cosine_distance` for hand-written SQL: the expression over `column` and its parameters.

    `column` is our own SQL (a qualified column name, "m.embedding"); its model is read from
    the column of the same name with "_model" after it.
    """
    sql = f"CASE WHEN {column}_model = %s THEN ({column} <=> %s::vector) * %s ELSE %s END"
    return sql, [model, Vector(list(vector)).to_text(), distance_scale(model), UNRELATED]
