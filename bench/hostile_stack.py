"""What the hostile-input benchmark runs against: the production web process and a Celery
worker on a broker of their own (restarted together after a request that timed out, so the
next input is measured on a server not still busy with the last), and the concurrent searcher.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psycopg

from bench.hostile_report import Sample
from bench.load_agents import warm_up
from bench.load_stack import (
    MODE,
    ApiClient,
    CeleryWorker,
    LoadAgent,
    WebServer,
    queries,
    scan_log,
    start_web,
    start_worker,
    wait_until_ready,
)

TERMINAL_EXTRACTION = frozenset({"done", "failed", "skipped"})


class Stack:
    """The web server and the Celery worker; `port` follows restarts."""

    def __init__(
        self, *, environment: Mapping[str, str], workers: int, log_dir: Path, timeout: float
    ) -> None:
        self.environment = dict(environment)
        self.workers = workers
        self.log_dir = log_dir
        self.timeout = timeout
        self.web: WebServer | None = None
        self.worker: CeleryWorker | None = None
        self.starts = 0
        self.logs: list[dict[str, Any]] = []

    @property
    def port(self) -> int:
        return self.web.port if self.web else 0

    def start(self, agent: LoadAgent) -> dict[str, Any]:
        """Start both processes, wait for the web to answer, warm it up (one agent only)."""
        self.starts += 1
        log = self.log_dir / f"web-{self.starts}.log"
        self.web = start_web(environment=self.environment, workers=self.workers, log=log)
        self.worker = start_worker(
            environment=self.environment, concurrency=1, log=self.log_dir / "worker.log"
        )
        wait_until_ready(self.web, agent)
        return warm_up(self.web, [agent], timeout=self.timeout, cap_seconds=60)

    def stop(self) -> None:
        if self.web is not None:
            self.web.stop()
            entry = {"port": self.web.port, "log_file": str(self.web.log)}
            self.logs.append({**entry, **scan_log(self.web.log)})
            self.web = None
        if self.worker is not None:
            self.worker.stop()
            self.worker = None

    def restart(self, agent: LoadAgent) -> dict[str, Any]:
        self.stop()
        return self.start(agent)

    def kill(self) -> None:
        """The watchdog's last resort: SIGKILL both groups, no waiting."""
        for handle in (self.web, self.worker):
            if handle is not None and handle.process.poll() is None:
                handle.process.kill()


class Searcher(threading.Thread):
    """Searches one user's memory back to back until stopped; every search becomes a Sample."""

    def __init__(self, stack: Stack, agent: LoadAgent, *, timeout: float) -> None:
        super().__init__(name="concurrent-searcher", daemon=True)
        self.stack = stack
        self.agent = agent
        self.timeout = timeout
        self.samples: list[Sample] = []  # Appended by this thread only; read by the main one.
        self._stop_event = threading.Event()
        self._queries = queries()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=self.timeout + 5)

    def run(self) -> None:
        client: ApiClient | None = None
        n = 0
        while not self._stop_event.is_set():
            port = self.stack.port
            if client is None or client.port != port:
                if client is not None:
                    client.close()
                client = ApiClient(port=port, key=self.agent.key, timeout=self.timeout)
            body = {
                "user": self.agent.user,
                "mode": MODE,
                "query": self._queries[n % len(self._queries)],
            }
            n += 1
            started = time.monotonic()
            try:
                reply = client.request("POST", "/api/v1/search", body=body)
                self.samples.append(Sample(started, time.monotonic(), reply.status))
            except (OSError, http.client.HTTPException) as exc:
                self.samples.append(Sample(started, time.monotonic(), 0, type(exc).__name__))
                self._stop_event.wait(0.1)  # A server being restarted: no busy loop.
        if client is not None:
            client.close()

    def since(self, started: float) -> list[Sample]:
        return [s for s in list(self.samples) if s.finished > started]

    def wait_past(self, moment: float, *, timeout: float) -> None:
        """Wait until a search that started after `moment` has finished: then every search in
        flight at `moment` has been recorded."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.is_alive():
            if any(s.started >= moment for s in reversed(self.samples[-5:])):
                return
            time.sleep(0.01)


def extraction_state(database_url: str, session_id: str) -> tuple[str, float | None]:
    """The session's extraction status, and its last run's duration in the worker (seconds)."""
    with psycopg.connect(database_url, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute(
            "SELECT s.extraction_status,"
            " (SELECT extract(epoch FROM r.finished_at - r.started_at)"
            "  FROM memoryhub_extractionrun r WHERE r.session_id = s.id"
            "  ORDER BY r.started_at DESC LIMIT 1)"
            " FROM memoryhub_session s WHERE s.id = %s",
            [session_id],
        ).fetchone()
    if row is None:
        return "missing", None
    return str(row[0]), float(row[1]) if row[1] is not None else None


def wait_for_extraction(
    database_url: str, session_id: str, *, since: float, timeout: float
) -> tuple[Sample, dict[str, Any]]:
    """From `since` (the end of the session answered) until its extraction ends (done, failed
    or skipped), bounded by `timeout`.

    Status 200 when it ended done, 0 with error "timeout" or the final status otherwise.
    """
    started = since
    status, run_seconds = extraction_state(database_url, session_id)
    while status not in TERMINAL_EXTRACTION and time.monotonic() - started < timeout:
        time.sleep(0.05)
        status, run_seconds = extraction_state(database_url, session_id)
    finished = time.monotonic()
    detail = {
        "extraction_status": status,
        "run_seconds": round(run_seconds, 4) if run_seconds is not None else None,
    }
    if status == "done":
        return Sample(started, finished, 200), detail
    return Sample(started, finished, 0, status if status in TERMINAL_EXTRACTION else "timeout"), (
        detail
    )
