"""Fixed-window request counting per key owner and per IP, shared by the HTTP API and MCP."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memoryhub.errors import RateLimitedError
from memoryhub.models import RateLimitWindow

WINDOW = timedelta(minutes=1)


def _window_start(now: datetime) -> datetime:
    return now.replace(second=0, microsecond=0)


def count_request(bucket: str, *, now: datetime | None = None) -> int:
    """Add one request to the bucket's current window and return the window's count."""
    now = now or timezone.now()
    start = _window_start(now)
    table = RateLimitWindow._meta.db_table
    # One atomic upsert: concurrent workers never lose an increment or race on the insert.
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {table} (bucket, window_start, count) VALUES (%s, %s, 1)
            ON CONFLICT (bucket, window_start) DO UPDATE SET count = {table}.count + 1
            RETURNING count
            """,  # noqa: S608 - the table name comes from the model, never from input.
            [bucket, start],
        )
        row = cursor.fetchone()
    count = int(row[0]) if row else 1
    if count == 1:
        # First request of a new window: drop the bucket's old windows, so the table stays small.
        RateLimitWindow.objects.filter(bucket=bucket, window_start__lt=start).delete()
    return count


def check_rate_limit(bucket: str, *, now: datetime | None = None, limit: int | None = None) -> None:
    """Count one request; raise RateLimitedError (with seconds to wait) past the per-minute limit."""
    now = now or timezone.now()
    limit = settings.MEMORYHUB_RATE_LIMIT_PER_MINUTE if limit is None else limit
    if limit <= 0:
        return  # 0 turns the limit off.
    if count_request(bucket, now=now) > limit:
        next_window = _window_start(now) + WINDOW
        wait = max(1, math.ceil((next_window - now).total_seconds()))
        raise RateLimitedError(
            f"rate limit of {limit} requests per minute exceeded", retry_after_seconds=wait
        )


def count_invalid_key(client_ip: str | None, *, now: datetime | None = None) -> None:
    """Count a request with an invalid key against its IP; RateLimitedError past the limit."""
    if client_ip:
        check_rate_limit(
            f"invalid-key:{client_ip}",
            now=now,
            limit=settings.MEMORYHUB_INVALID_KEY_LIMIT_PER_MINUTE,
        )
