"""Prometheus metrics: requests per route, the connection pool, and gauges read at scrape time.

The only module that imports prometheus_client. Two kinds of metric:

- Counted in each web worker as requests pass (`RequestMetricsMiddleware`): requests, latency
  and errors per route, the database pool's connections and waits. With several workers
  (uvicorn --workers) each process writes its own files under PROMETHEUS_MULTIPROC_DIR
  (prometheus_client's multiprocess mode; `runstack --production` sets it) and a scrape of
  any worker adds them up.
- Read from PostgreSQL and the broker when scraped (`StateCollector`): the extraction queue
  and its lag, failed and stranded extractions, the broker's queue depth, the last audit
  verification, memories per workspace. They are the same whichever worker answers.

Nothing here carries memory text, queries, names or emails: labels are routes, methods,
status codes and workspace slugs; values are counts, bytes and seconds.
"""

from __future__ import annotations

import hmac
import os
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

from amqp.exceptions import ChannelError
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import MiddlewareNotUsed
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.models import Count, Min, Sum
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from memoryhub.health import broker_connection
from memoryhub.models import ExtractionRun, MemoryUsage, Session, WebhookDelivery, WebhookEndpoint

AUDIT_VERIFICATION_CACHE_KEY = "memoryhub:audit-verification"
BROKER_QUEUE = "celery"  # Celery's default queue: every task here goes to it.
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUESTS = Counter(
    "memoryhub_http_requests",
    "HTTP requests answered, by route pattern, method and status code.",
    ["route", "method", "status"],
)
LATENCY = Histogram(
    "memoryhub_http_request_duration_seconds",
    "Time from the request reaching Django to its response, by route pattern and method.",
    ["route", "method"],
    buckets=LATENCY_BUCKETS,
)
# "livesum": the sum over the worker processes alive now; a dead worker's files are dropped.
POOL_CONNECTIONS = Gauge(
    "memoryhub_db_pool_connections",
    "Database connections of the web workers' pools: open, idle (available) and the bound.",
    ["state"],
    multiprocess_mode="livesum",
)
POOL_WAITING = Gauge(
    "memoryhub_db_pool_waiting_requests",
    "Requests waiting for a pooled database connection right now.",
    multiprocess_mode="livesum",
)
POOL_WAITS = Counter(
    "memoryhub_db_pool_waits", "Requests for a connection that had to queue for one."
)
POOL_WAIT_SECONDS = Counter(
    "memoryhub_db_pool_wait_seconds", "Time requests spent waiting for a pooled connection."
)
POOL_FAILURES = Counter(
    "memoryhub_db_pool_failures",
    "Requests for a connection that failed: the pool timed out (a 503) or could not connect.",
)


def route_of(request: HttpRequest) -> str:
    """The URL pattern that served the request (never its path: ids would explode the series)."""
    match = request.resolver_match
    if match is not None and match.route:
        return match.route
    if request.path.startswith("/" + settings.STATIC_URL.lstrip("/")):
        return "static"
    return "unmatched"


def record_pool_stats() -> None:
    """Copy this process's pool state into the gauges and its counters since the last call."""
    pool = getattr(connections[DEFAULT_DB_ALIAS], "pool", None)
    if pool is None:
        return
    stats = pool.pop_stats()  # The counters restart at zero: each call adds what is new.
    open_connections = stats.get("pool_size", 0)
    POOL_CONNECTIONS.labels("open").set(open_connections)
    POOL_CONNECTIONS.labels("idle").set(stats.get("pool_available", 0))
    POOL_CONNECTIONS.labels("max").set(stats.get("pool_max", 0))
    POOL_WAITING.set(stats.get("requests_waiting", 0))
    POOL_WAITS.inc(stats.get("requests_queued", 0))
    POOL_WAIT_SECONDS.inc(stats.get("requests_wait_ms", 0) / 1000)
    POOL_FAILURES.inc(stats.get("requests_errors", 0))


class RequestMetricsMiddleware:
    """Count and time every request Django answers, 503s and 500s included."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        if not settings.MEMORYHUB_METRICS_TOKEN:
            # Nobody can scrape: no counting, timing or pool copying on every request.
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        route = route_of(request)
        LATENCY.labels(route, request.method or "").observe(time.perf_counter() - started)
        REQUESTS.labels(route, request.method or "", str(response.status_code)).inc()
        record_pool_stats()
        return response


def record_audit_verification(*, is_intact: bool, rows_checked: int, chains_checked: int) -> None:
    """Keep the outcome of the last audit verification where every worker's scrape reads it."""
    value = {
        "is_intact": is_intact,
        "rows_checked": rows_checked,
        "chains_checked": chains_checked,
        "verified_at": time.time(),
    }
    cache.set(AUDIT_VERIFICATION_CACHE_KEY, value, timeout=None)


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


class StateCollector(Collector):
    """Gauges computed at scrape time from PostgreSQL, the broker and the cache."""

    def collect(self) -> Iterator[Metric]:
        try:
            yield from self._extraction_metrics()
            yield from self._workspace_metrics()
            yield from self._webhook_metrics()
            yield _gauge("memoryhub_database_up", "The primary answered this scrape.", 1)
        except DatabaseError:
            yield _gauge("memoryhub_database_up", "The primary answered this scrape.", 0)
        yield from self._broker_metrics()
        yield from self._audit_metrics()

    def _extraction_metrics(self) -> Iterator[Metric]:
        now = timezone.now()
        queued = Session.objects.filter(extraction_status=Session.ExtractionStatus.QUEUED)
        totals = queued.aggregate(oldest=Min("ended_at"))
        oldest = totals["oldest"]
        yield _gauge(
            "memoryhub_extraction_queued_sessions",
            "Ended sessions waiting for their extraction.",
            queued.count(),
        )
        yield _gauge(
            "memoryhub_extraction_lag_seconds",
            "How long the oldest session waiting for extraction has waited since it ended.",
            (now - oldest).total_seconds() if oldest is not None else 0,
        )
        stranded_after = timedelta(minutes=settings.MEMORYHUB_EXTRACTION_STRANDED_AFTER_MINUTES)
        stranded = (
            queued.filter(ended_at__lte=now - stranded_after)
            .exclude(extraction_runs__status=ExtractionRun.Status.RUNNING)
            .count()
        )
        yield _gauge(
            "memoryhub_extraction_stranded_sessions",
            "Sessions queued longer than MEMORYHUB_EXTRACTION_STRANDED_AFTER_MINUTES with no "
            "extraction running (their task was lost; beat publishes them again).",
            stranded,
        )
        yield _gauge(
            "memoryhub_extraction_failed_sessions",
            "Sessions whose extraction failed and waits for a requeue or an admin.",
            Session.objects.filter(extraction_status=Session.ExtractionStatus.FAILED).count(),
        )
        yield _gauge(
            "memoryhub_extraction_given_up_runs",
            "Failed extraction runs queued again MEMORYHUB_EXTRACTION_MAX_REQUEUES times: left "
            "for an admin.",
            ExtractionRun.objects.filter(
                status=ExtractionRun.Status.FAILED,
                requeue_count__gte=settings.MEMORYHUB_EXTRACTION_MAX_REQUEUES,
                session__extraction_status=Session.ExtractionStatus.FAILED,
            ).count(),
        )
        yield _gauge(
            "memoryhub_extraction_running",
            "Extraction runs in progress.",
            ExtractionRun.objects.filter(status=ExtractionRun.Status.RUNNING).count(),
        )

    def _workspace_metrics(self) -> Iterator[Metric]:
        memories = GaugeMetricFamily(
            "memoryhub_memories", "Memory rows per workspace (counts only).", labels=["workspace"]
        )
        stored = GaugeMetricFamily(
            "memoryhub_stored_bytes",
            "Ciphertext bytes of memories and journal notes per workspace.",
            labels=["workspace"],
        )
        # The usage rows the memory table's triggers keep: one row a user, never a memory scan.
        rows = (
            MemoryUsage.objects.values("user__workspace__slug")
            .annotate(memories=Sum("memory_count"), stored=Sum("stored_bytes"))
            .order_by("user__workspace__slug")
        )
        for row in rows:
            memories.add_metric([row["user__workspace__slug"]], row["memories"] or 0)
            stored.add_metric([row["user__workspace__slug"]], row["stored"] or 0)
        yield memories
        yield stored

    def _webhook_metrics(self) -> Iterator[Metric]:
        # Only deliveries not yet delivered: the delivered ones grow without end, and the
        # pending and failed ones are what the partial index of due deliveries covers.
        waiting = WebhookDelivery.objects.exclude(status=WebhookDelivery.Status.DELIVERED)
        deliveries = GaugeMetricFamily(
            "memoryhub_webhook_deliveries",
            "Webhook deliveries not delivered yet, by status (pending, failed: retry due "
            "later, dead: given up after MEMORYHUB_WEBHOOK_MAX_ATTEMPTS, waits for a replay).",
            labels=["status"],
        )
        counts = dict(
            waiting.values("status").annotate(count=Count("id")).values_list("status", "count")
        )
        for status in (
            WebhookDelivery.Status.PENDING,
            WebhookDelivery.Status.FAILED,
            WebhookDelivery.Status.DEAD,
        ):
            deliveries.add_metric([str(status)], counts.get(status, 0))
        yield deliveries
        oldest = waiting.exclude(status=WebhookDelivery.Status.DEAD).aggregate(
            oldest=Min("created_at")
        )["oldest"]
        yield _gauge(
            "memoryhub_webhook_delivery_lag_seconds",
            "Age of the oldest webhook delivery still to be sent (pending or failed).",
            (timezone.now() - oldest).total_seconds() if oldest is not None else 0,
        )
        yield _gauge(
            "memoryhub_webhook_open_circuits",
            "Webhook endpoints whose circuit breaker is open (too many failures in a row).",
            WebhookEndpoint.objects.filter(circuit_opened_at__isnull=False).count(),
        )

    def _broker_metrics(self) -> Iterator[Metric]:
        depth = broker_queue_depth()
        yield _gauge(
            "memoryhub_broker_up", "The broker answered this scrape.", 0 if depth is None else 1
        )
        if depth is not None:
            yield _gauge(
                "memoryhub_broker_queue_messages",
                "Tasks waiting in the Celery queue (not yet taken by a worker).",
                depth,
            )

    def _audit_metrics(self) -> Iterator[Metric]:
        last = cache.get(AUDIT_VERIFICATION_CACHE_KEY)
        if not isinstance(last, dict):
            return  # Never verified since the cache was emptied: no series, an alert says so.
        yield _gauge(
            "memoryhub_audit_chain_intact",
            "1 if the last verification found every audit chain intact, else 0.",
            1 if last["is_intact"] else 0,
        )
        yield _gauge(
            "memoryhub_audit_verified_timestamp_seconds",
            "When the audit chains were last verified (Unix time).",
            last["verified_at"],
        )
        yield _gauge(
            "memoryhub_audit_rows_checked",
            "Audit rows the last verification checked.",
            last["rows_checked"],
        )


def broker_queue_depth() -> int | None:
    """Messages waiting in the Celery queue; None when the broker does not answer within 1 s."""
    url = settings.CELERY_BROKER_URL or ""
    if url.startswith("filesystem://"):
        folder = Path(str(settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("data_folder_in", "")))
        return sum(1 for path in folder.glob("*.msg")) if folder.is_dir() else 0
    try:
        with broker_connection() as broker:
            declared = broker.default_channel.queue_declare(queue=BROKER_QUEUE, passive=True)
            return int(declared.message_count)
    except ChannelError:  # The broker answered: no such queue yet, nothing ever published.
        return 0
    except Exception:  # The broker is away or does not answer in time.
        return None


def _drop_dead_workers(directory: Path) -> None:
    """Forget the "live" gauges of worker processes that have exited (uvicorn restarted them)."""
    for path in directory.glob("gauge_live*_*.db"):
        pid = int(path.stem.rsplit("_", 1)[1])
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            multiprocess.mark_process_dead(pid, str(directory))  # type: ignore[no-untyped-call]  # Untyped in prometheus_client.
        except PermissionError:
            continue  # Alive, another user's process.


def exposition() -> bytes:
    """Every metric in Prometheus' text format: all workers' counters, then the scrape gauges."""
    directory = settings.METRICS_MULTIPROCESS_DIR
    if directory is not None:
        _drop_dead_workers(directory)
        workers = CollectorRegistry()
        multiprocess.MultiProcessCollector(workers, path=str(directory))  # type: ignore[no-untyped-call]  # Untyped in prometheus_client.
        counted = generate_latest(workers)
    else:
        counted = generate_latest(REGISTRY)
    state = CollectorRegistry()
    state.register(StateCollector())
    return counted + generate_latest(state)


def metrics_response(request: HttpRequest) -> HttpResponse:
    """The exposition for a scraper holding MEMORYHUB_METRICS_TOKEN; 404 while none is set."""
    token = settings.MEMORYHUB_METRICS_TOKEN
    if not token:
        return HttpResponse(status=404)
    offered = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    if not hmac.compare_digest(offered.encode(), token.encode()):
        response = HttpResponse(status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
