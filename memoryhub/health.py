"""Liveness and readiness of a web process: what /healthz and /readyz answer an orchestrator.

/healthz says the process is alive and answers; it touches nothing else, so a database outage
never gets a healthy web worker restarted. /readyz says this process can serve: the primary
database answers, the broker takes connections and the embedding model is loaded (the first
call starts loading it). Read replicas are reported, never required: without them the primary
serves every read. A probe every second per worker must stay cheap, so a result is reused for
READINESS_CACHE_SECONDS and the checks are bounded by CHECK_TIMEOUT_SECONDS each.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from kombu.connection import Connection

from memoryhub import replicas
from memoryhub.embeddings import default_embedder

READINESS_CACHE_SECONDS = 1.0
CHECK_TIMEOUT_SECONDS = 1.0
LOCAL_BROKERS = ("filesystem://", "memory://")


@dataclass(frozen=True)
class Check:
    """One dependency's state. `error` is an exception class name: nothing a driver said."""

    is_ok: bool
    milliseconds: float
    state: str = ""
    error: str = ""

    def as_json(self) -> dict[str, object]:
        body: dict[str, object] = {"ok": self.is_ok, "ms": round(self.milliseconds, 1)}
        if self.state:
            body["state"] = self.state
        if self.error:
            body["error"] = self.error
        return body


@dataclass(frozen=True)
class Readiness:
    checks: dict[str, Check]
    replicas: dict[str, Check] = field(default_factory=dict)

    @property
    def is_ready(self) -> bool:
        return all(check.is_ok for check in self.checks.values())

    def as_json(self) -> dict[str, object]:
        return {
            "status": "ready" if self.is_ready else "not_ready",
            "checks": {name: check.as_json() for name, check in self.checks.items()},
            "replicas": {alias: check.as_json() for alias, check in self.replicas.items()},
        }


def check_database(alias: str = DEFAULT_DB_ALIAS) -> Check:
    """`SELECT 1` on a connection of the pool, waiting at most CHECK_TIMEOUT_SECONDS for one."""
    started = time.monotonic()
    try:
        wrapper = connections[alias]
        # The PostgreSQL backend's psycopg pool (None with DATABASE_POOL_MAX_SIZE=0).
        pool = getattr(wrapper, "pool", None)
        if pool is None:
            with wrapper.cursor() as cursor:
                cursor.execute("SELECT 1")
        else:
            # The pool's own connection, not Django's: a probe never holds this thread's
            # connection open, and a pool exhausted by requests answers "not ready" at once.
            pool.open(wait=False)
            with pool.connection(timeout=CHECK_TIMEOUT_SECONDS) as connection:
                connection.execute("SELECT 1")
    except Exception as error:  # Any failure means "not ready", named below.
        return _failed(started, error)
    return Check(is_ok=True, milliseconds=_since(started))


def broker_connection() -> Connection:
    """A new connection to the Celery broker that gives up within CHECK_TIMEOUT_SECONDS."""
    options = {
        **settings.CELERY_BROKER_TRANSPORT_OPTIONS,
        "socket_connect_timeout": CHECK_TIMEOUT_SECONDS,
        "socket_timeout": CHECK_TIMEOUT_SECONDS,
    }
    return Connection(  # type: ignore[no-untyped-call]  # kombu ships no type hints.
        settings.CELERY_BROKER_URL, connect_timeout=CHECK_TIMEOUT_SECONDS, transport_options=options
    )


def check_broker() -> Check:
    """Connect to the Celery broker within CHECK_TIMEOUT_SECONDS (a local folder: always up)."""
    started = time.monotonic()
    url = settings.CELERY_BROKER_URL or ""
    if url.startswith(LOCAL_BROKERS):
        return Check(is_ok=True, milliseconds=_since(started), state="local")
    try:
        with broker_connection() as broker:
            broker.ensure_connection(max_retries=1, timeout=CHECK_TIMEOUT_SECONDS)
    except Exception as error:  # Any failure means "not ready", named below.
        return _failed(started, error)
    return Check(is_ok=True, milliseconds=_since(started))


class ModelWarmUp:
    """Loads the embedding model once, on a thread of its own, so a probe never waits for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._error = ""

    def check(self) -> Check:
        started = time.monotonic()
        embedder = default_embedder()
        if getattr(embedder, "is_loaded", False):
            return Check(is_ok=True, milliseconds=_since(started), state="loaded")
        with self._lock:
            if self._error:
                return Check(False, _since(started), state="failed", error=self._error)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._load, name="model-warm-up", daemon=True
                )
                self._thread.start()
        return Check(is_ok=False, milliseconds=_since(started), state="loading")

    def _load(self) -> None:
        try:
            default_embedder().embed(["warm up"])
        except Exception as error:  # Reported by the next probe.
            with self._lock:
                self._error = type(error).__name__


class ReadinessProbe:
    """Runs the checks at most once per READINESS_CACHE_SECONDS; concurrent probes share one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._checked_at = -READINESS_CACHE_SECONDS
        self._last: Readiness | None = None
        self.model = ModelWarmUp()

    def readiness(self) -> Readiness:
        with self._lock:
            now = time.monotonic()
            if self._last is None or now - self._checked_at >= READINESS_CACHE_SECONDS:
                self._last = self._check()
                self._checked_at = time.monotonic()
            return self._last

    def _check(self) -> Readiness:
        checks = {
            "database": check_database(),
            "broker": check_broker(),
            "model": self.model.check(),
        }
        standbys = {alias: _check_replica(alias) for alias in replicas.replica_aliases()}
        return Readiness(checks=checks, replicas=standbys)


def _check_replica(alias: str) -> Check:
    started = time.monotonic()
    position = replicas.replica_position(alias)
    if position is None:
        return Check(is_ok=False, milliseconds=_since(started), state="set aside")
    _, lag_seconds = position
    # The age of the last transaction it replayed: on a quiet primary it grows without lag.
    state = "nothing replayed" if lag_seconds is None else f"replayed {lag_seconds:.1f} s ago"
    return Check(is_ok=True, milliseconds=_since(started), state=state)


def _since(started: float) -> float:
    return (time.monotonic() - started) * 1000


def _failed(started: float, error: BaseException) -> Check:
    return Check(is_ok=False, milliseconds=_since(started), error=type(error).__name__)


probe = ReadinessProbe()
