"""Publish session extractions, and publish again what a failed run or a lost message left."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from functools import partial
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnavailableError

from memoryhub.models import ExtractionRun, Session
from memoryhub.task_queue import EXTRACT_SESSION, enqueue

logger = logging.getLogger(__name__)

# The stranded sweep's wait doubles after each publish, up to 2**6 times the first (5 h 20 min
# with the default 5 minutes).
MAX_REPUBLISH_DOUBLINGS = 6


def enqueue_extraction(session_id: UUID) -> bool:
    """Publish the session's extraction task; False (logged) when the broker is unavailable.

    Never raises for the broker: the caller has committed already (ending a session answers
    200 either way), and the session stays queued for `requeue_stranded_extractions`.
    """
    try:
        enqueue(EXTRACT_SESSION, str(session_id))
    except BrokerUnavailableError as error:
        logger.warning(
            "extraction of session %s stays queued: broker unavailable (%s)", session_id, error
        )
        return False
    return True


def requeue_failed_extractions(*, now: datetime | None = None) -> int:
    """Queue again each failed extraction that has rested long enough; return how many.

    A run fails for good once its task's own retries are spent (the LLM down for half an hour,
    say). The sweep gives it another try after MEMORYHUB_EXTRACTION_REQUEUE_AFTER_MINUTES, then
    twice as long before each further one, MEMORYHUB_EXTRACTION_MAX_REQUEUES times at most.
    """
    now = now or timezone.now()
    first_wait = timedelta(minutes=settings.MEMORYHUB_EXTRACTION_REQUEUE_AFTER_MINUTES)
    failed = ExtractionRun.objects.filter(
        status=ExtractionRun.Status.FAILED,
        finished_at__lt=now - first_wait,
        requeue_count__lt=settings.MEMORYHUB_EXTRACTION_MAX_REQUEUES,
        session__extraction_status=Session.ExtractionStatus.FAILED,
    )
    count = 0
    for run in failed.only("pk", "session_id", "finished_at", "requeue_count").iterator():
        rested = run.finished_at is not None and (
            run.finished_at <= now - first_wait * 2**run.requeue_count
        )
        if not rested:
            continue
        with transaction.atomic():
            # Counted under a condition, so two sweeps at once queue it only once.
            claimed = ExtractionRun.objects.filter(
                pk=run.pk, status=ExtractionRun.Status.FAILED, requeue_count=run.requeue_count
            ).update(requeue_count=F("requeue_count") + 1)
            if not claimed:
                continue
            # Published now: the stranded sweep counts its wait from here, not from the end.
            Session.objects.filter(pk=run.session_id).update(
                extraction_status=Session.ExtractionStatus.QUEUED,
                extraction_published_at=now,
                extraction_republish_count=0,
            )
            transaction.on_commit(partial(enqueue_extraction, run.session_id))
        count += 1
    return count


def requeue_stranded_extractions(*, now: datetime | None = None) -> int:
    """Publish again each extraction left queued with no task on the way; return how many.

    The session row marked queued is the outbox: its task is published only after the commit,
    and a broker that is down then (or that loses the message) leaves the session queued with
    nothing coming. After MEMORYHUB_EXTRACTION_STRANDED_AFTER_MINUTES the sweep publishes it
    again, then waits twice as long before each further time (at most 2**6 times as long). A
    session still waiting in a long queue is thus published a few times, not once a minute:
    harmless, since extraction runs once per session whatever the deliveries (its idempotency
    key and run lock), and a backlog does not grow by itself. A publish the broker refuses
    does not count.
    """
    now = now or timezone.now()
    first_wait = timedelta(minutes=settings.MEMORYHUB_EXTRACTION_STRANDED_AFTER_MINUTES)
    stranded = (
        Session.objects.filter(
            extraction_status=Session.ExtractionStatus.QUEUED, ended_at__lte=now - first_wait
        )
        .exclude(extraction_published_at__gt=now - first_wait)
        .exclude(extraction_runs__status=ExtractionRun.Status.RUNNING)
        .order_by("ended_at")
        .values_list("pk", "ended_at", "extraction_published_at", "extraction_republish_count")
    )
    count = 0
    for session_id, ended_at, published_at, republished in stranded.iterator():
        waited_since = published_at or ended_at
        if waited_since > now - first_wait * 2 ** min(republished, MAX_REPUBLISH_DOUBLINGS):
            continue
        if not enqueue_extraction(session_id):
            break  # The broker is gone again: the next sweep carries on.
        Session.objects.filter(pk=session_id).update(
            extraction_published_at=now,
            extraction_republish_count=F("extraction_republish_count") + 1,
        )
        count += 1
    return count
