"""When to try a request again, and how long to wait first."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

# 429: refused before any work; 503: the server (or its database) is briefly unavailable.
RETRY_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class RetryPolicy:
    """Up to `attempts` tries; waits `Retry-After` when the server sends it, else backs off
    exponentially from `base_delay` with jitter. A wait over `max_delay` is not waited: the
    error is raised instead, so a caller never sleeps longer than it agreed to."""

    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before try number `attempt + 1`, or None to give up."""
        if attempt >= self.attempts:
            return None
        if retry_after is not None:
            wait = retry_after
        else:
            backoff = self.base_delay * 2 ** (attempt - 1)
            wait = backoff / 2 + random.uniform(0, backoff / 2)  # noqa: S311  Jitter, not crypto.
        return wait if wait <= self.max_delay else None


NO_RETRY = RetryPolicy(attempts=1)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
