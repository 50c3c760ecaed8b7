"""A heavy user's kept counts: start and stop keeping them (triggers keep them in between).

A heavy user's search (queries/nearest.py) needs, for its IDF, how many of the user's active
memories hold each query word, and how many there are: counted at search time that was about
half of the statement at 100,000 memories (docs/retrieval.md, "Heavy users"). So once a user
gets their own vector index, the counts are kept in `CountedMode` and `TermCount`, by triggers on
the memory table (migration 0037), which every write path goes through.
"""

from __future__ import annotations

from uuid import UUID

from django.db import connection, transaction

from memoryhub.models import CountedMode, Memory, MemoryStatus, Mode, TermCount


def _lock(user_id: UUID) -> None:
    # The triggers' lock (migration 0037): held exclusively, it waits for the user's writes
    # under way, and holds back new ones until the counts below are committed.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"term-counts:{user_id}"]
        )


def keep_term_counts(*, user_id: UUID) -> None:
    """Count the user's active memories per mode and per digest, and keep them from now on."""
    memory, mode = Memory._meta.db_table, Mode._meta.db_table
    counted, terms = CountedMode._meta.db_table, TermCount._meta.db_table
    active = MemoryStatus.ACTIVE.value
    with transaction.atomic():
        _lock(user_id)
        CountedMode.objects.filter(user_id=user_id).delete()
        TermCount.objects.filter(user_id=user_id).delete()
        # Our own table names only; every value is a parameter.
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                INSERT INTO {counted} (mode_id, user_id, memory_count)
                SELECT mo.id, mo.user_id, (
                    SELECT count(*) FROM {memory} AS m
                    WHERE m.user_id = mo.user_id AND m.mode_id = mo.id AND m.status = %s
                )
                FROM {mode} AS mo WHERE mo.user_id = %s
                """,  # noqa: S608
                [active, user_id],
            )
            cursor.execute(
                f"""
                INSERT INTO {terms} (user_id, mode_id, digest, memory_count)
                SELECT m.user_id, m.mode_id, tok.digest, count(*)
                FROM {memory} AS m CROSS JOIN unnest(m.blind_tokens) AS tok(digest)
                WHERE m.user_id = %s AND m.status = %s
                GROUP BY m.user_id, m.mode_id, tok.digest
                """,  # noqa: S608
                [user_id, active],
            )


def drop_term_counts(*, user_id: UUID) -> None:
    """Stop keeping the user's counts (their index is gone: their search counts again)."""
    with transaction.atomic():
        _lock(user_id)
        CountedMode.objects.filter(user_id=user_id).delete()
        TermCount.objects.filter(user_id=user_id).delete()


def counted_users() -> set[UUID]:
    """The users whose counts are kept."""
    return set(CountedMode.objects.values_list("user_id", flat=True).distinct())
