"""Request counters for the API rate limit (one row per key owner or client IP per window)."""

from __future__ import annotations

from typing import ClassVar

from django.db import models


class RateLimitWindow(models.Model):
    """How many requests one bearer key made in one fixed window.

    Counted in PostgreSQL rather than a per-process cache, so the limit holds across every
    web worker and the MCP server alike (invalid keys are counted in each process first:
    services/ratelimit.py). A sweep deletes past windows every few minutes.
    """

    bucket = models.CharField(max_length=64)
    window_start = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["bucket", "window_start"], name="rate_limit_window_unique"
            ),
        ]
        indexes: ClassVar[list[models.Index]] = [
            # The sweep deletes past windows oldest first (services/ratelimit.py).
            models.Index(fields=["window_start"], name="rate_limit_window_start_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.bucket} @ {self.window_start:%H:%M}: {self.count}"
