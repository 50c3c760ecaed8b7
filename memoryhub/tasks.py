"""Celery entry points of the memory domain: thin adapters that load ids and call one service."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils import timezone

from memoryhub import graph
from memoryhub.audit.log import verify_chain
from memoryhub.errors import NotFoundError
from memoryhub.extraction import ExtractionError
from memoryhub.imports import services as import_services
from memoryhub.metrics import record_audit_verification
from memoryhub.services import (
    compaction,
    consolidate,
    decay,
    deletion_requests,
    extraction_queue,
    forget_tasks,
    idempotency,
    ingest,
    nearest_index,
    ratelimit,
    retention,
    sessions,
)
from memoryhub.webhooks import services as webhook_services

logger = logging.getLogger(__name__)

# Only failures a later attempt can fix: the LLM or the database being briefly unavailable.
# Malformed LLM output is an ExtractionError too: the model may well answer properly next time.
TRANSIENT_ERRORS = (ExtractionError, OperationalError, InterfaceError)
# Every other task touches only the database: it retries when the database is briefly away.
DATABASE_ERRORS = (OperationalError, InterfaceError)


def _task(
    name: str,
    *,
    soft_time_limit: int,
    time_limit: int,
    retry_on: tuple[type[Exception], ...] = DATABASE_ERRORS,
    max_retries: int = 3,
    **options: Any,
) -> Callable[[Callable[..., Any]], Any]:
    """A task with a stable name, acknowledged late, retried only on `retry_on`, time-limited.

    Acknowledged after it ran (acks_late), so a worker lost mid-task leaves the message for
    another: every task here is idempotent, and a second run writes nothing twice.
    """
    decorator: Callable[[Callable[..., Any]], Any] = shared_task(
        name=name,
        acks_late=True,
        autoretry_for=retry_on,
        max_retries=max_retries,
        soft_time_limit=soft_time_limit,
        time_limit=time_limit,
        **options,
    )
    return decorator


@_task(
    "memoryhub.extract_session",
    # A worker killed mid-task (OOM, deploy) leaves the message unacknowledged: redeliver it.
    reject_on_worker_lost=True,
    retry_on=TRANSIENT_ERRORS,
    retry_backoff=30,
    retry_backoff_max=600,
    retry_jitter=True,
    max_retries=5,
    soft_time_limit=540,
    time_limit=600,
)
def extract_session(session_id: str) -> str | None:
    """Extract an ended session into memories; running it twice writes nothing twice."""
    try:
        run = ingest.run_extraction(session_id=session_id)
    except NotFoundError:
        # Deleted since it was queued (account deletion, forget): nothing left to do.
        logger.info("session %s no longer exists; extraction dropped", session_id)
        return None
    return None if run is None else str(run.pk)


@_task("memoryhub.requeue_failed_extractions", soft_time_limit=240, time_limit=300)
def requeue_failed_extractions() -> int:
    """Queue again the failed extractions that have rested long enough."""
    return extraction_queue.requeue_failed_extractions()


@_task("memoryhub.requeue_stranded_extractions", soft_time_limit=50, time_limit=60)
def requeue_stranded_extractions() -> int:
    """Publish again the extractions whose task was lost (the broker down when they ended)."""
    return extraction_queue.requeue_stranded_extractions()


@_task("memoryhub.sweep_idempotency_keys", soft_time_limit=240, time_limit=300)
def sweep_idempotency_keys() -> int:
    """Delete the idempotency records older than the replay window."""
    return idempotency.sweep_idempotency_keys()


@_task("memoryhub.sweep_rate_limit_windows", soft_time_limit=240, time_limit=300)
def sweep_rate_limit_windows() -> int:
    """Delete the rate-limit windows of past minutes."""
    return ratelimit.sweep_rate_limit_windows()


@_task("memoryhub.sweep_expired_cache_entries", soft_time_limit=240, time_limit=300)
def sweep_expired_cache_entries() -> int:
    """Delete the database cache's expired entries (allauth's login limits)."""
    return ratelimit.sweep_expired_cache_entries()


@_task("memoryhub.end_idle_sessions", soft_time_limit=240, time_limit=300)
def end_idle_sessions() -> int:
    """End sessions idle past the timeout (each then queues its own extraction)."""
    return sessions.end_idle_sessions()


@_task("memoryhub.expire_working_memory", soft_time_limit=240, time_limit=300)
def expire_working_memory() -> int:
    """Erase working memory past its time to live."""
    return sessions.expire_working_memory()


# Maintenance (issue 8): each job is idempotent, so a redelivered or overlapping run is harmless.
@_task("memoryhub.decay_memories", soft_time_limit=1700, time_limit=1800)
def decay_memories() -> int:
    """Recompute decay priorities and dormancy; return how many memories changed."""
    return decay.decay_memories().changed


@_task("memoryhub.apply_retention", soft_time_limit=1700, time_limit=1800)
def apply_retention() -> dict[str, int]:
    """Forget what is past each user's retention limit; return counts by kind."""
    return retention.apply_retention().counts


# Below the broker's visibility timeout (an hour by default; memoryhub/celery.py checks it).
@_task("memoryhub.consolidate_memories", soft_time_limit=3200, time_limit=3300)
def consolidate_memories() -> int:
    """Build themes from settled episodes and merge duplicate facts; return themes written."""
    return consolidate.consolidate_all().themes


@_task("memoryhub.compact_threads", soft_time_limit=1700, time_limit=1800)
def compact_threads() -> int:
    """Summarise the older messages of long threads; return how many messages were folded."""
    active_since = timezone.now() - compaction.ACTIVE_WINDOW
    return compaction.compact_long_threads(active_since=active_since).messages


@_task("memoryhub.run_forget_task", soft_time_limit=1740, time_limit=1800)
def run_forget_task(task_id: str) -> dict[str, int]:
    """Run a forget by query queued by a request; return its counts by kind (idempotent)."""
    task = forget_tasks.run_forget_task(task_id=task_id)
    return dict(task.counts)


@_task("memoryhub.forget_data", soft_time_limit=540, time_limit=600)
def forget_data(
    user_id: str,
    mode_slug: str,
    memory_ids: list[str] | None = None,
    since: str | None = None,
    until: str | None = None,
    topic: str | None = None,
) -> dict[str, int]:
    """Carry out a data-deletion request (facts, a period or a topic); return counts by kind."""
    return deletion_requests.carry_out_deletion_request(
        user_ref=user_id,
        mode_slug=mode_slug,
        memory_ids=memory_ids or [],
        since=since,
        until=until,
        topic=topic,
    ).counts


# Workspace knowledge graph (issue 9). Reporting an answer enqueues record_answer_in_graph on
# commit, and so does every feedback, by this name (memoryhub/task_queue.py).
@_task("memoryhub.record_answer_in_graph", soft_time_limit=50, time_limit=60)
def record_answer_in_graph(answer_id: str) -> str | None:
    """Record a reported answer (or its new feedback) in the workspace graph; safe to run twice."""
    recorded = graph.record_answer(answer_id=answer_id)
    return None if recorded is None else str(recorded.query_id)


@_task("memoryhub.graph_decay_edges", soft_time_limit=1700, time_limit=1800)
def graph_decay_edges() -> int:
    """Recompute graph edge weights from their age; return how many edges changed."""
    return sum(run.edges_updated for run in graph.decay_edges())


@_task("memoryhub.graph_purge_transient", soft_time_limit=1700, time_limit=1800)
def graph_purge_transient() -> int:
    """Purge graph queries, responses and tool calls past their age; return nodes deleted."""
    older_than = timezone.now() - timedelta(days=settings.MEMORYHUB_GRAPH_TRANSIENT_DAYS)
    return sum(run.nodes_deleted for run in graph.purge_transient_nodes(older_than=older_than))


@_task("memoryhub.verify_audit_chains", soft_time_limit=3000, time_limit=3300)
def verify_audit_chains() -> bool:
    """Verify every audit chain and keep the outcome for the metrics; return whether intact."""
    report = verify_chain()
    record_audit_verification(
        is_intact=report.is_intact,
        rows_checked=report.rows_checked,
        chains_checked=report.chains_checked,
    )
    if not report.is_intact:
        logger.error("audit chain broken at row %s: %s", report.first_broken_id, report.reason)
    return report.is_intact


@_task("memoryhub.send_webhook", soft_time_limit=50, time_limit=60)
def send_webhook(delivery_id: str) -> None:
    """Attempt one webhook delivery (a no-op when it is not due or already delivered)."""
    webhook_services.send_delivery(int(delivery_id))


@_task("memoryhub.send_due_webhooks", soft_time_limit=240, time_limit=300)
def send_due_webhooks() -> int:
    """Attempt every webhook delivery whose retry is due; how many were attempted."""
    ids = webhook_services.due_delivery_ids()
    for delivery_id in ids:
        webhook_services.send_delivery(delivery_id)
    return len(ids)


@_task(
    "memoryhub.run_import",
    # A worker lost mid-import leaves the message for another, which resumes at the position.
    # Below the broker's visibility timeout like every task (a 50 MB file took 115 s here).
    reject_on_worker_lost=True,
    soft_time_limit=1740,
    time_limit=1800,
)
def run_import(job_id: str) -> str | None:
    """Import an uploaded file from where it got to (imports/services.py); safe to run twice."""
    try:
        job = import_services.run_import(job_id=job_id)
    except NotFoundError:
        # The user was deleted (and the job with them) since it was queued.
        logger.info("import %s no longer exists; dropped", job_id)
        return None
    return str(job.status)


@_task("memoryhub.requeue_stranded_imports", soft_time_limit=50, time_limit=60)
def requeue_stranded_imports() -> int:
    """Queue again the imports whose task was lost; a run already at work is left alone."""
    return import_services.requeue_stranded_imports()


@_task(
    "memoryhub.index_heavy_users",
    # Builds run concurrently with writes; 100,000 memories took 40 s under load. Below the
    # broker's visibility timeout like every task; a build cut short is repaired next run.
    soft_time_limit=3000,
    time_limit=3300,
    max_retries=0,
)
def index_heavy_users() -> dict[str, int]:
    """Heavy users' own vector indexes, built and dropped (services/nearest_index.py)."""
    threshold = settings.MEMORYHUB_NEAREST_FROM
    if threshold <= 0:
        # 0 keeps every search exact: no index would be read.
        return {"created": 0, "dropped": 0, "repaired": 0, "busy": 0}
    changes = nearest_index.index_heavy_users(threshold=threshold)
    return {
        "created": len(changes.created),
        "dropped": len(changes.dropped),
        "repaired": len(changes.repaired),
        "busy": int(changes.busy),
    }
