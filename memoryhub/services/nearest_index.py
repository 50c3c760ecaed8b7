"""Heavy users' vector indexes: one HNSW index per user, over that user's memories alone.

A search of a user with `MEMORYHUB_NEAREST_FROM` active memories in a mode reads its nearest
candidates through the user's index (queries/nearest.py). One index per heavy user, not one over
the whole table: a filter on one user among many leaves an index over everyone's rows reading
thousands of other users' rows for each of theirs, and every write of every user would pay for
it (docs/retrieval.md, "Heavy users"). `manage.py index_heavy_users` runs this after writes
have grown a user; until it has, their search is exact (and slow).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from django.db import connection
from django.db.models import Count

from memoryhub.models import Memory, MemoryStatus
from memoryhub.services.term_counts import counted_users, drop_term_counts, keep_term_counts
from memoryhub.vector_search import (
    HALF_PRECISION,
    INDEX_PREFIX,
    PROFILE_INDEX_PREFIX,
    forget_own_index,
    index_name,
    profile_index_name,
)

# One run at a time (the daily task and the command): a run that finds an invalid index while it
# holds this lock knows it is the leftover of an interrupted build, not one being built.
RUN_LOCK = "memoryhub:index_heavy_users"


@dataclass(frozen=True)
class IndexChanges:
    created: list[UUID]
    dropped: list[UUID]
    # Leftovers of an interrupted concurrent build (PostgreSQL keeps them, marked invalid,
    # and no query reads them): dropped, and built again if the user is still heavy.
    repaired: list[UUID] = field(default_factory=list)
    # Another run held the lock: this one did nothing.
    busy: bool = False


def heavy_users(*, threshold: int) -> set[UUID]:
    """Users with at least `threshold` active memories in one of their modes (a full scan)."""
    rows = (
        Memory.all_owners.filter(status=MemoryStatus.ACTIVE)
        .values("user_id", "mode_id")
        .order_by()
        .annotate(n=Count("id"))
        .filter(n__gte=threshold)
        .values_list("user_id", flat=True)
    )
    return set(rows)


def indexed_users(*, valid: bool = True) -> set[UUID]:
    """The users who have their own vector index (`valid=False`: those with an index, vector or
    profile, left invalid by an interrupted build)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_index i"
            " JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE i.indrelid = %s::regclass AND i.indisvalid = %s"
            " AND (c.relname LIKE %s OR (NOT i.indisvalid AND c.relname LIKE %s))",
            [Memory._meta.db_table, valid, INDEX_PREFIX + "%", PROFILE_INDEX_PREFIX + "%"],
        )
        names = [name for (name,) in cursor.fetchall()]
    return {
        UUID(name.removeprefix(INDEX_PREFIX).removeprefix(PROFILE_INDEX_PREFIX)) for name in names
    }


def create_nearest_index(*, user_id: UUID, concurrently: bool = True) -> None:
    """Build the user's indexes; concurrently (outside a transaction), writes go on meanwhile.

    Their vector index, and their profile index: their latest memories of each kind and
    importance, which context's profile layer reads without sorting all of them
    (queries/context_layers.py). A btree over every user's rows would cost every write, and
    72 MB over the bench's 1.1 million rows (docs/retrieval.md, "Heavy users").
    """
    how = "CONCURRENTLY " if concurrently else ""
    owner = f"WHERE user_id = '{UUID(str(user_id))}'::uuid"
    # Only a UUID's canonical text and our own names are formatted in.
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX {how}IF NOT EXISTS {index_name(user_id)} "
            f"ON {Memory._meta.db_table} USING hnsw ({HALF_PRECISION} halfvec_cosine_ops) {owner}"
        )
        cursor.execute(
            f"CREATE INDEX {how}IF NOT EXISTS {profile_index_name(user_id)} "
            f"ON {Memory._meta.db_table} (mode_id, status, kind, importance, created_at) {owner}"
        )
    forget_own_index(user_id)


def drop_nearest_index(*, user_id: UUID, concurrently: bool = True) -> None:
    how = "CONCURRENTLY " if concurrently else ""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {how}IF EXISTS {index_name(user_id)}")
        cursor.execute(f"DROP INDEX {how}IF EXISTS {profile_index_name(user_id)}")
    forget_own_index(user_id)


def index_heavy_users(*, threshold: int, concurrently: bool = True) -> IndexChanges:
    """Give every heavy user an index and kept counts; drop those of users who left or shrank
    below half.

    Half, not the threshold itself: a user hovering around it is not rebuilt again and again.
    The counts (services/term_counts.py) go with the index: a user with one has the other,
    also one indexed before the counts existed.
    One run at a time (a session advisory lock); a second run returns at once, `busy`.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [RUN_LOCK])
        (locked,) = cursor.fetchone()
    if not locked:
        return IndexChanges(created=[], dropped=[], busy=True)
    try:
        return _index_heavy_users(threshold=threshold, concurrently=concurrently)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [RUN_LOCK])


def _index_heavy_users(*, threshold: int, concurrently: bool) -> IndexChanges:
    # A build stopped half-way (a deploy, a time limit) leaves an invalid index under the name,
    # which CREATE ... IF NOT EXISTS would take for done: drop it first.
    repaired = sorted(indexed_users(valid=False))
    for user_id in repaired:
        drop_nearest_index(user_id=user_id, concurrently=concurrently)
    heavy = heavy_users(threshold=threshold)
    kept = heavy_users(threshold=max(1, threshold // 2))
    indexed = indexed_users()
    created = sorted(heavy - indexed)
    dropped = sorted(indexed - kept)
    # Also those indexed before the profile index existed (IF NOT EXISTS: nothing for others).
    for user_id in sorted((indexed | heavy) - set(dropped)):
        create_nearest_index(user_id=user_id, concurrently=concurrently)
    for user_id in dropped:
        drop_nearest_index(user_id=user_id, concurrently=concurrently)
        drop_term_counts(user_id=user_id)
    # A repaired user no longer heavy keeps no index, so no counts either.
    for user_id in sorted(set(repaired) - heavy - indexed):
        drop_term_counts(user_id=user_id)
    for user_id in sorted((indexed | set(created)) - set(dropped) - counted_users()):
        keep_term_counts(user_id=user_id)
    return IndexChanges(created=created, dropped=dropped, repaired=repaired)
