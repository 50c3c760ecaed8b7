"""Fixed-window request counting per key owner and per IP, shared by the HTTP API and MCP.

A valid key's owner is counted in PostgreSQL on every request (one upsert), so its budget
holds exactly across every web worker and the MCP server. Invalid keys are counted in each
process first (`InvalidKeyCounter`): a request with a bad key writes nothing, and a process adds
its count to the shared row only once per fifth of the limit. An IP therefore gets at most
MEMORYHUB_INVALID_KEY_LIMIT_PER_MINUTE + (N - 1) x (limit / 5 - 1) bad keys a minute across
N processes (30 and 35 with the default limit and two workers), and one that sends fewer than
a fifth of the limit to a process in a minute never reaches the database at all.

allauth keeps its own login limits in the shared cache (settings.CACHES); when that is the
database cache, a sweep here deletes its expired entries.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.errors import RateLimitedError
from memoryhub.models import RateLimitWindow
from memoryhub.sweeping import delete_oldest_in_batches

WINDOW = timedelta(minutes=1)
# How often per window a process adds its invalid-key count to the shared row, at most.
INVALID_KEY_FLUSHES_PER_WINDOW = 5
# Rows deleted per statement by the sweeps: short statements, no long lock on the table.
SWEEP_BATCH = 5_000
DATABASE_CACHE = "django.core.cache.backends.db.DatabaseCache"


@dataclass(frozen=True)
class RateLimitState:
    """A budget after this request: what the X-RateLimit-* response headers say."""

    limit: int
    remaining: int
    reset_seconds: int  # Until the current window ends and the budget is whole again.


def _window_start(now: datetime) -> datetime:
    return now.replace(second=0, microsecond=0)


def _state(limit: int, used: int, now: datetime) -> RateLimitState:
    next_window = _window_start(now) + WINDOW
    reset = max(1, math.ceil((next_window - now).total_seconds()))
    return RateLimitState(limit=limit, remaining=max(0, limit - used), reset_seconds=reset)


def _refuse(state: RateLimitState) -> RateLimitedError:
    return RateLimitedError(
        gettext_noop("rate limit of {limit} requests per minute exceeded"),
        limit=state.limit,
        retry_after_seconds=state.reset_seconds,
        rate_limit=state,
    )


def _add_to_window(bucket: str, start: datetime, amount: int) -> int:
    """Add `amount` to the bucket's window row and return the row's new count."""
    table = RateLimitWindow._meta.db_table
    # One atomic upsert: concurrent workers never lose an increment or race on the insert.
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {table} (bucket, window_start, count) VALUES (%s, %s, %s)
            ON CONFLICT (bucket, window_start) DO UPDATE SET count = {table}.count + %s
            RETURNING count
            """,  # noqa: S608 - the table name comes from the model, never from input.
            [bucket, start, amount, amount],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else amount


def count_request(bucket: str, *, now: datetime | None = None) -> int:
    """Add one request to the bucket's current window and return the window's count."""
    now = now or timezone.now()
    return _add_to_window(bucket, _window_start(now), 1)


def check_rate_limit(bucket: str, *, now: datetime | None = None) -> RateLimitState | None:
    """Count one request and return the budget left (None: no limit).

    Raises RateLimitedError (with seconds to wait, and the budget) past the per-minute limit.
    """
    now = now or timezone.now()
    limit = settings.MEMORYHUB_RATE_LIMIT_PER_MINUTE
    if limit <= 0:
        return None  # 0 turns the limit off.
    used = count_request(bucket, now=now)
    state = _state(limit, used, now)
    if used > limit:
        raise _refuse(state)
    return state


class InvalidKeyCounter:
    """This process's invalid-key counts of the current window, per bucket (client IP).

    Only the current window is kept, so memory holds at most the IPs seen this minute.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._window: datetime | None = None
        self._pending: dict[str, int] = {}  # Counted here, not yet added to the shared row.
        self._shared: dict[str, int] = {}  # The shared row's count when this process last wrote.

    def clear(self) -> None:
        """Forget every count (tests: each starts with no invalid keys counted)."""
        with self._lock:
            self._window, self._pending, self._shared = None, {}, {}

    def add(self, bucket: str, start: datetime) -> tuple[int, int]:
        """Count one request in the window starting at `start`; return (pending, shared)."""
        with self._lock:
            if start != self._window:
                self._window, self._pending, self._shared = start, {}, {}
            pending = self._pending.get(bucket, 0) + 1
            self._pending[bucket] = pending
            return pending, self._shared.get(bucket, 0)

    def used(self, bucket: str, start: datetime) -> int:
        """Requests of the bucket this process knows of in the window starting at `start`."""
        with self._lock:
            if start != self._window:
                return 0
            return self._pending.get(bucket, 0) + self._shared.get(bucket, 0)

    def written(self, bucket: str, start: datetime, amount: int, shared: int) -> None:
        """Note that `amount` pending requests were added to the shared row, now at `shared`."""
        with self._lock:
            if start == self._window:
                self._pending[bucket] = max(0, self._pending.get(bucket, 0) - amount)
                self._shared[bucket] = max(shared, self._shared.get(bucket, 0))


invalid_key_counter = InvalidKeyCounter()


def count_invalid_key(
    client_ip: str | None, *, now: datetime | None = None
) -> RateLimitState | None:
    """Count a request with an invalid key against its IP; return the IP's budget left.

    Writes to the database only when this process's pending count reaches a fifth of the
    limit; a refused request writes nothing. Raises RateLimitedError past the limit.
    """
    limit = settings.MEMORYHUB_INVALID_KEY_LIMIT_PER_MINUTE
    if not client_ip or limit <= 0:
        return None
    now = now or timezone.now()
    start = _window_start(now)
    bucket = _invalid_key_bucket(client_ip)
    pending, shared = invalid_key_counter.add(bucket, start)
    if shared + pending > limit:
        raise _refuse(_state(limit, shared + pending, now))
    if pending >= math.ceil(limit / INVALID_KEY_FLUSHES_PER_WINDOW):
        shared = _add_to_window(bucket, start, pending)
        invalid_key_counter.written(bucket, start, pending, shared)
        if shared > limit:
            raise _refuse(_state(limit, shared, now))
        return _state(limit, shared, now)
    return _state(limit, shared + pending, now)


def invalid_key_budget(
    client_ip: str | None, *, now: datetime | None = None
) -> RateLimitState | None:
    """The IP's invalid-key budget as this process knows it, without counting a request.

    What a request that presented no key at all is limited by (None: no limit applies).
    """
    limit = settings.MEMORYHUB_INVALID_KEY_LIMIT_PER_MINUTE
    if not client_ip or limit <= 0:
        return None
    now = now or timezone.now()
    used = invalid_key_counter.used(_invalid_key_bucket(client_ip), _window_start(now))
    return _state(limit, used, now)


def _invalid_key_bucket(client_ip: str) -> str:
    return f"invalid-key:{client_ip}"


def sweep_rate_limit_windows(*, now: datetime | None = None) -> int:
    """Delete the windows before the previous minute's; return how many.

    The previous window stays, for a worker whose clock runs a little behind. Deleted in
    batches through the window_start index, oldest first.
    """
    now = now or timezone.now()
    cutoff = _window_start(now) - WINDOW
    return delete_oldest_in_batches(
        RateLimitWindow.objects.filter(window_start__lt=cutoff),
        order_by="window_start",
        batch_size=SWEEP_BATCH,
    )


def sweep_expired_cache_entries(*, now: datetime | None = None) -> int:
    """Delete the database cache's expired entries; return how many (0 with another cache).

    Django's database cache counts its rows on every write and deletes expired ones only past
    MAX_ENTRIES, all at once inside a login request; swept here, its table stays small.
    Deleted in batches through the expires index, oldest first.
    """
    cache = settings.CACHES["default"]
    if cache["BACKEND"] != DATABASE_CACHE:
        return 0  # Redis expires entries itself; a process's memory is not ours to sweep.
    now = now or timezone.now()
    table = connection.ops.quote_name(str(cache["LOCATION"]))
    deleted = 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                DELETE FROM {table} WHERE cache_key IN (
                    SELECT cache_key FROM {table} WHERE expires < %s ORDER BY expires LIMIT %s
                )
                """,  # noqa: S608 - the table name comes from settings, never from input.
                [now, SWEEP_BATCH],
            )
            count = int(cursor.rowcount)
        deleted += count
        if count < SWEEP_BATCH:
            return deleted
