"""How many API and MCP requests one key owner may have running at once, over every worker.

A slot is a row, taken under a per-owner advisory lock and deleted when the request ends, so
the limit holds across web worker processes (a per-process counter would allow N a worker).
One owner's 600 parallel requests then wait on their own 429s instead of holding every
worker thread and pooled database connection that the other owners need.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID, uuid4

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.errors import TooManyConcurrentRequestsError
from memoryhub.models import RequestSlot

# What a refused request is asked to wait: most requests end well within a second.
RETRY_AFTER_SECONDS = 1


def acquire_request_slot(owner: str, *, now: datetime | None = None) -> UUID | None:
    """Take one of the owner's slots and return its id; None when the limit is off.

    Raises TooManyConcurrentRequestsError when the owner already has the allowed number of
    requests running. Pair it with `release_request_slot` in a `finally`.
    """
    limit = settings.MEMORYHUB_MAX_CONCURRENT_REQUESTS
    if limit <= 0:
        return None
    now = now or timezone.now()
    slot_id = uuid4()
    table = RequestSlot._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:
        # Serialise the owner's takers: each statement after the lock sees the slots that the
        # ones before it committed, so N takers racing for the last slot cannot all win.
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"request-slots:{owner}"]
        )
        # Slots past their lease were left by a worker killed mid-request: drop them.
        cursor.execute(
            f"""
            WITH expired AS (DELETE FROM {table} WHERE owner = %s AND expires_at <= %s)
            INSERT INTO {table} (id, owner, started_at, expires_at)
            SELECT %s, %s, %s, %s
            WHERE (SELECT count(*) FROM {table} WHERE owner = %s AND expires_at > %s) < %s
            RETURNING id
            """,  # noqa: S608 - the table name comes from the model, never from input.
            [
                owner,
                now,
                slot_id,
                owner,
                now,
                now + timedelta(seconds=settings.MEMORYHUB_REQUEST_SLOT_LEASE_SECONDS),
                owner,
                now,
                limit,
            ],
        )
        taken = cursor.fetchone()
    if taken is None:
        raise TooManyConcurrentRequestsError(
            gettext_noop(
                "this key owner already has {limit} requests running: wait for one to finish"
            ),
            limit=limit,
            retry_after_seconds=RETRY_AFTER_SECONDS,
        )
    return slot_id


def release_request_slot(slot_id: UUID | None) -> None:
    """Give a slot back (a slot already gone, or None, is fine: releasing twice is harmless)."""
    if slot_id is None:
        return
    # One statement, no transaction of its own: every request ends here, and the ORM's delete
    # (a collector, its signals, BEGIN and COMMIT around one DELETE) cost three times as much.
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {RequestSlot._meta.db_table} WHERE id = %s",  # noqa: S608 - the model's table.
            [slot_id],
        )
