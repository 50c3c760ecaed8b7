"""Read replicas: which database serves a user's read-only queries, and the read-your-writes fence.

A replica (settings.DATABASE_REPLICA_URLS) is a hot standby that replays the primary's
write-ahead log (WAL) a little behind it. After a transaction that wrote a user's memory commits,
`note_write` records on the primary where the WAL stood (the user's write mark). A read for that
user goes to a replica only once the replica has replayed past the mark, so the user (and any
agent reading for them) always sees their own writes, a forget included. Nobody reads from a
replica further behind than DATABASE_REPLICA_MAX_LAG_SECONDS either: a standby whose replication
broke would otherwise serve ever older data (what retention has deleted since, say) to every
user who has not written. A replica that is down, not a standby or failing is left out for a
while and the primary answers instead.

The chosen read-only queries call `read_for_user` and pass the alias to `.using()`; nothing else
changes database. Audit rows, access counters, rate limits, key lookups and every write go to
"default". With no replica configured none of this runs a query.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Callable
from functools import partial
from typing import TypeVar
from uuid import UUID

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections, transaction

from memoryhub.models import UserWriteMark

logger = logging.getLogger(__name__)

REPLICA_PREFIX = "replica_"
# After a failure this process leaves the replica alone this long: reaching a replica that is
# down can cost a connect timeout, which no request should pay more than once in a while.
RETRY_AFTER_SECONDS = 10.0
# A failed connection, a cancelled query (a recovery conflict): worth another database.
REPLICA_ERRORS = (OperationalError, InterfaceError)
_MARK_SQL = f"""
    INSERT INTO {UserWriteMark._meta.db_table} AS mark (user_id, lsn, updated_at)
    VALUES (%s, (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint, now())
    ON CONFLICT (user_id) DO UPDATE
    SET lsn = greatest(mark.lsn, excluded.lsn), updated_at = excluded.updated_at
"""  # noqa: S608  # The table name is our model's; the user id is a parameter.
# On the primary, in one round trip: the user's mark (NULL: no write since replicas came) and
# how far the WAL is flushed, i.e. what a replica that is fully caught up has replayed.
_PRIMARY_SQL = f"""
    SELECT (SELECT lsn FROM {UserWriteMark._meta.db_table} WHERE user_id = %s),
        (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::bigint
"""  # noqa: S608  # The table name is our model's; the user id is a parameter.
# On a replica: whether it is a standby, how far it has replayed, and how old the last
# transaction it replayed is (NULL: none since it started).
_REPLICA_SQL = """
    SELECT pg_is_in_recovery(), (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint,
        extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8
"""

T = TypeVar("T")
_failures_lock = threading.Lock()
_failed_at: dict[str, float] = {}


def replica_aliases() -> list[str]:
    """The configured replicas' database aliases, in order ("replica_0", "replica_1"…)."""
    return [alias for alias in settings.DATABASES if alias.startswith(REPLICA_PREFIX)]


def note_write(user_id: UUID) -> None:
    """Fence the user's replica reads until the replicas have replayed the current transaction.

    Call it inside the transaction that writes the user's memories, messages or working memory.
    """
    if not replica_aliases():
        return
    # After the commit, not inside the transaction: only a position past the commit record
    # makes the write visible on a replica that has replayed it. The insert position (not the
    # flushed one) is past it even with synchronous_commit off. `robust`: the write has
    # committed; a failed mark is logged, never turned into an error for the caller.
    transaction.on_commit(partial(_record_mark, user_id), using=DEFAULT_DB_ALIAS, robust=True)


def _record_mark(user_id: UUID) -> None:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(_MARK_SQL, [user_id])


def read_alias_for(user_id: UUID) -> str:
    """The database for this user's reads: a replica that has their last write, else "default"."""
    aliases = replica_aliases()
    if not aliases:
        return DEFAULT_DB_ALIAS
    if connections[DEFAULT_DB_ALIAS].in_atomic_block:
        # A read inside a write transaction (a forget by query, say) must see its own changes.
        return DEFAULT_DB_ALIAS
    usable = [alias for alias in aliases if not _is_set_aside(alias)]
    if not usable:
        return DEFAULT_DB_ALIAS
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(_PRIMARY_SQL, [user_id])
        mark, flushed = cursor.fetchone() or (None, 0)
    # Each user sticks to one replica while it is usable: reads never step back in time by
    # moving to a replica further behind.
    start = zlib.crc32(str(user_id).encode()) % len(usable)
    for alias in usable[start:] + usable[:start]:
        position = _replica_position(alias)
        if position is None:
            continue
        replayed, lag_seconds = position
        has_their_writes = mark is None or replayed >= mark
        # Caught up with the primary, or behind by less than the bound: the age of the last
        # transaction it replayed is how far behind it is (a paused or cut-off standby's grows).
        is_recent = replayed >= flushed or (
            lag_seconds is not None and lag_seconds <= settings.DATABASE_REPLICA_MAX_LAG_SECONDS
        )
        if has_their_writes and is_recent:
            return alias
    return DEFAULT_DB_ALIAS


def read_for_user(user_id: UUID, read: Callable[[str], T]) -> T:
    """Run `read(alias)` on the user's read database; if a replica fails it, on the primary.

    `read` must only read: it may run twice.
    """
    alias = read_alias_for(user_id)
    if alias == DEFAULT_DB_ALIAS:
        return read(alias)
    try:
        return read(alias)
    except REPLICA_ERRORS as error:
        _set_aside(alias, error)
    return read(DEFAULT_DB_ALIAS)


def _is_set_aside(alias: str) -> bool:
    with _failures_lock:
        failed_at = _failed_at.get(alias)
    return failed_at is not None and time.monotonic() - failed_at < RETRY_AFTER_SECONDS


def replica_position(alias: str) -> tuple[int, float | None] | None:
    """How far the replica has replayed and how old that is; None when it is set aside or down."""
    return None if _is_set_aside(alias) else _replica_position(alias)


def _replica_position(alias: str) -> tuple[int, float | None] | None:
    """How far the replica has replayed and how old that is; None when it is down or no standby."""
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute(_REPLICA_SQL)
            row = cursor.fetchone()
    except REPLICA_ERRORS as error:
        _set_aside(alias, error)
        return None
    is_standby, replayed, lag_seconds = row if row is not None else (False, None, None)
    if not is_standby or replayed is None:
        # Promoted, or never a standby: its data may have parted from the primary's.
        _set_aside(alias, "not a standby in recovery")
        return None
    with _failures_lock:
        _failed_at.pop(alias, None)
    return int(replayed), None if lag_seconds is None else float(lag_seconds)


def _set_aside(alias: str, reason: BaseException | str) -> None:
    with _failures_lock:
        _failed_at[alias] = time.monotonic()
    # The class and first line only: a driver message names hosts, never memory text.
    text = str(reason).splitlines()[0] if str(reason) else ""
    kind = type(reason).__name__ if isinstance(reason, BaseException) else "unusable"
    logger.warning(
        "read replica %s set aside for %.0f s, reading from the primary: %s: %s",
        alias,
        RETRY_AFTER_SECONDS,
        kind,
        text,
    )
    # A broken connection would fail every later query of this thread (a Celery worker has no
    # request end to close it): drop it now.
    try:
        connections[alias].close()
    except REPLICA_ERRORS:
        logger.debug("closing the connection to %s failed", alias)
