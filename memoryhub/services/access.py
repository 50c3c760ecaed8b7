"""Record that memories were recalled (last_accessed_at, access_count) without slowing recall.

Recall only notes the ids in a per-process buffer; one UPDATE writes the whole buffer once it
is a few seconds old or large. Decay reads these fields, and decay is measured in days, so a few
seconds of delay cost nothing, and a hot memory recalled by many concurrent requests is not
locked by each of them. Counts still buffered when a process dies are lost: acceptable for a
freshness signal, never used for anything that must be exact.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

from django.db import connection
from django.utils import timezone

from memoryhub.models import Memory

FLUSH_AFTER_SECONDS = 5.0
FLUSH_AFTER_IDS = 1000


class AccessBuffer:
    """Accumulates recall counts per memory and writes them in one statement."""

    def __init__(
        self, *, max_age_seconds: float = FLUSH_AFTER_SECONDS, max_ids: int = FLUSH_AFTER_IDS
    ) -> None:
        self.max_age_seconds = max_age_seconds
        self.max_ids = max_ids
        self._lock = threading.Lock()
        self._counts: dict[UUID, int] = {}
        self._last_seen: dict[UUID, datetime] = {}
        self._oldest: float | None = None

    def __len__(self) -> int:
        return len(self._counts)

    def add(self, memory_ids: Iterable[UUID], *, at: datetime | None = None) -> int:
        """Note one access to each memory; flush if the buffer is due. Return rows flushed."""
        at = at or timezone.now()
        with self._lock:
            for memory_id in memory_ids:
                self._counts[memory_id] = self._counts.get(memory_id, 0) + 1
                self._last_seen[memory_id] = at
            if self._counts and self._oldest is None:
                self._oldest = time.time()
            is_due = len(self._counts) >= self.max_ids or (
                self._oldest is not None and time.time() - self._oldest >= self.max_age_seconds
            )
        return self.flush() if is_due else 0

    def clear(self) -> None:
        """Forget the buffered accesses without writing them (tests: their rows are gone)."""
        with self._lock:
            self._counts, self._last_seen, self._oldest = {}, {}, None

    def flush(self) -> int:
        """Write every buffered access in one UPDATE; return the number of rows updated."""
        with self._lock:
            counts, last_seen = self._counts, self._last_seen
            self._counts, self._last_seen, self._oldest = {}, {}, None
        if not counts:
            return 0
        ids = list(counts)
        table = Memory._meta.db_table
        # A system write keyed by ids that a scoped read just returned; additive, so two
        # processes flushing the same memory both count.
        sql = f"""
            UPDATE {table} AS m
            SET access_count = m.access_count + v.n,
                last_accessed_at = greatest(m.last_accessed_at, v.at)
            FROM unnest(%s::uuid[], %s::int[], %s::timestamptz[]) AS v(id, n, at)
            WHERE m.id = v.id
        """  # noqa: S608  # The table name is our model's; values are parameters.
        with connection.cursor() as cursor:
            cursor.execute(sql, [ids, [counts[i] for i in ids], [last_seen[i] for i in ids]])
            return int(cursor.rowcount)


# One buffer per process: recall in any thread adds to it.
access_buffer = AccessBuffer()


def record_memory_access(memory_ids: Iterable[UUID], *, at: datetime | None = None) -> None:
    """Note that these memories were just recalled; written in batches (see module docstring)."""
    access_buffer.add(memory_ids, at=at)


def flush_memory_access() -> int:
    """Write the buffered accesses now (tests, shutdown, management commands)."""
    return access_buffer.flush()
