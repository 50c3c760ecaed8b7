"""Celery entry points of review: the daily digest to reviewers."""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

from .notices import send_review_digests


@shared_task(  # type: ignore[untyped-decorator]  # Celery's decorators are untyped.
    name="review.send_review_digests",
    acks_late=True,
    autoretry_for=(OperationalError, InterfaceError),
    max_retries=3,
    soft_time_limit=240,
    time_limit=300,
)
def send_review_digests_task() -> int:
    """Email every opted-in reviewer what waits (at most once a day each); how many were sent."""
    return send_review_digests()
