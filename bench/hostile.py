"""Hostile-input benchmark: the worst texts through every write and read route of the agent
API, at the largest size accepted, while another client searches another user's memory.

For each input (runs of spaces, tabs, newlines, backslashes, punctuation, digits, a long word,
combining marks, a mixture, instruction-like text, brackets and fences) and each route (a
session message, working memory, POST /memories, /memories/batch, /answers, /search, /context,
ending the session and the extraction it queues, run by a Celery worker as in production), it
prints the request's own time and the worst latency of the concurrent searches minus their p50
alone. Target (issue 26): no request over 1 s, none delaying another by more than 100 ms.
Loopback only; every request has a timeout, the whole run a time cap, and the server is
restarted after a request that timed out and always stopped at the end.

    .venv/bin/python bench/hostile.py [--workers 1] [--content-bytes N] [--repeat 2] [--quick]
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # Run as a script: make `bench` and `memoryhub` importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import http.client
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench.hostile_inputs import (
    INPUTS,
    ROUTES,
    WARM_UP_TEXT,
    HostileInput,
    Limits,
    fill,
    request_for,
    request_size,
    server_limits,
)
from bench.hostile_report import (
    Sample,
    baseline,
    format_report,
    judge,
    measure,
    worst_rows,
)
from bench.hostile_stack import Searcher, Stack, wait_for_extraction
from bench.load_report import code_version, machine, write_report
from bench.load_stack import (
    MODE,
    REPO,
    ApiClient,
    LoadAgent,
    base_database_url,
    database_url,
    drop_database,
    migrate,
    recreate_database,
    seed,
    stack_environment,
)

RESULTS_DIR = Path(__file__).resolve().parent / "results"
RATE_LIMIT_PER_MINUTE = 1_000_000  # The limiter is not what is measured.


WARM_UP = HostileInput("warm-up", lambda n: fill(WARM_UP_TEXT, min(n, 512)))


@dataclass(frozen=True)
class Options:
    workers: int = 1
    content_bytes: int | None = None  # None: the server's MEMORYHUB_MAX_CONTENT_BYTES.
    repeat: int = 2
    inputs: tuple[str, ...] = ()  # Empty: every input.
    routes: tuple[str, ...] = ()  # Empty: every route.
    baseline_seconds: float = 5.0
    input_baseline_seconds: float = 2.0
    memories_per_user: int = 100
    request_timeout: float = 60.0
    extraction_timeout: float = 60.0
    max_seconds: float = 2400.0
    database: str = "memoryhub_load_hostile"
    redis_db: int = 14  # The load bench uses 13, the worker tests 11.
    out: Path = RESULTS_DIR
    keep_db: bool = False


QUICK: dict[str, Any] = {
    "content_bytes": 2048,
    "repeat": 1,
    "inputs": ("prose", "spaces"),
    "baseline_seconds": 1.0,
    "input_baseline_seconds": 0.5,
    "memories_per_user": 20,
    "max_seconds": 300.0,
}


@dataclass
class Run:
    """The state of one run: what it drives, what it has measured so far."""

    options: Options
    stack: Stack
    searcher: Searcher
    hostile: LoadAgent
    limits: Limits
    database_url: str
    deadline: float
    baseline_p50: float = 0.0  # Of the searcher alone, measured last (before this input).
    first_baseline_p50: float = 0.0  # Before the first input.
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    restarts: list[dict[str, Any]] = field(default_factory=list)
    warm_up_rows: list[dict[str, Any]] = field(default_factory=list)


def timed(client: ApiClient, method: str, path: str, body: dict[str, Any]) -> Sample:
    """Send one request; a Sample whether it answered, failed or timed out."""
    started = time.monotonic()
    try:
        reply = client.request(method, path, body=body)
    except (OSError, http.client.HTTPException) as exc:
        return Sample(started, time.monotonic(), 0, type(exc).__name__)
    return Sample(started, time.monotonic(), reply.status)


def record(
    run: Run, name: str, route: str, attempt: Sample, detail: dict[str, Any] | None = None
) -> None:
    """Wait for the searches in flight to finish, then keep the row; restart after a timeout."""
    run.searcher.wait_past(attempt.finished, timeout=run.options.request_timeout + 5)
    row = measure(
        input_name=name,
        route=route,
        attempt=attempt,
        searches=run.searcher.since(attempt.started - run.options.request_timeout - 5),
        baseline_p50=run.baseline_p50,
        detail=detail,
    )
    run.rows.append(row)
    print(
        f"  {name:<16} {route:<15} {attempt.status or attempt.error:>6} "
        f"{attempt.seconds:8.3f} s  worst search {row['worst_concurrent_seconds']} s"
    )
    if attempt.status == 0 and attempt.error in {"TimeoutError", "timeout"}:
        # The server (or worker) is still busy with it: measure the next input on fresh ones.
        started = time.monotonic()
        warm = run.stack.restart(run.hostile)
        run.restarts.append(
            {"after": f"{name} {route}", "seconds": round(time.monotonic() - started, 1), **warm}
        )
        if name != WARM_UP.name:  # A warm-up that timed out is not warmed up again.
            warm_every_route(run)


def warm_every_route(run: Run) -> None:
    """Each route once with ordinary text, its rows kept apart: a fresh worker's first answer
    or batch loads what it needs (models, the graph hook), a cost that is not the input's."""
    first = len(run.rows)
    send_input(run, WARM_UP)
    run.warm_up_rows.extend(run.rows[first:])
    del run.rows[first:]


def send_input(run: Run, hostile: HostileInput) -> None:
    """Every chosen route for one input, `repeat` times each (the end and extraction once)."""
    options = run.options
    text = hostile.build(run.limits.content_bytes)
    scope = {"user": run.hostile.user, "mode": MODE}
    routes = [r for r in ROUTES if not options.routes or r in options.routes]
    if time.monotonic() > run.deadline:
        run.skipped.append(f"{hostile.name} (every route)")
        return
    # The machine is shared and its load drifts over a run: each input's delays are counted
    # from the searcher's p50 alone just before it, not only from the one before the first.
    measure_baseline(run, seconds=options.input_baseline_seconds)
    client = ApiClient(port=run.stack.port, key=run.hostile.key, timeout=options.request_timeout)
    try:
        opened = client.request("POST", "/api/v1/sessions", body=scope)
        session_id = str(opened.json()["id"])
        for route in routes:
            if route == "extraction":
                continue  # Measured right after the session's end, below.
            attempts = 1 if route == "session_end" else options.repeat
            for _ in range(attempts):
                if time.monotonic() > run.deadline:
                    run.skipped.append(f"{hostile.name} {route}")
                    break
                if client.port != run.stack.port:  # Restarted after a timeout.
                    client.close()
                    client = ApiClient(
                        port=run.stack.port, key=run.hostile.key, timeout=options.request_timeout
                    )
                method, path, body = request_for(
                    route, text, scope=scope, session_id=session_id, limits=run.limits
                )
                attempt = timed(client, method, path, body)
                detail = (
                    {"items": len(body["items"]), "body_bytes": request_size(body)}
                    if route == "batch"
                    else None
                )
                record(run, hostile.name, route, attempt, detail)
                if attempt.status == 0:
                    break  # Timed out (the server restarted) or failed: no second try.
                if route == "session_end" and "extraction" in routes:
                    waited, detail = wait_for_extraction(
                        run.database_url,
                        session_id,
                        since=attempt.finished,
                        timeout=options.extraction_timeout,
                    )
                    record(run, hostile.name, "extraction", waited, detail)
    finally:
        client.close()


def measure_baseline(run: Run, *, seconds: float) -> dict[str, Any]:
    """The searcher alone for `seconds`: its p50 is what the next delays are counted from
    (the first baseline's when this one caught no search)."""
    started = time.monotonic()
    time.sleep(seconds)
    alone = baseline([s for s in run.searcher.since(started) if s.started >= started])
    run.baseline_p50 = alone["p50_seconds"] or run.first_baseline_p50
    return alone


def chosen_inputs(options: Options) -> list[HostileInput]:
    unknown = set(options.inputs) - {i.name for i in INPUTS}
    if unknown:
        raise SystemExit(f"unknown inputs: {', '.join(sorted(unknown))}")
    return [i for i in INPUTS if not options.inputs or i.name in options.inputs]


def run(options: Options) -> tuple[dict[str, Any], Path]:
    """Set up the database and the stack, measure every input, write the JSON; return both."""
    started = time.monotonic()
    inputs = chosen_inputs(options)
    admin_url = base_database_url()
    bench_url = database_url(admin_url, options.database)
    environment = stack_environment(
        database_url=bench_url, pool_max_size=10, rate_limit_per_minute=RATE_LIMIT_PER_MINUTE
    )
    environment["CELERY_BROKER_URL"] = f"redis://127.0.0.1:6379/{options.redis_db}"
    log_dir = Path(tempfile.mkdtemp(prefix="memoryhub-hostile-"))
    stack = Stack(
        environment=environment,
        workers=options.workers,
        log_dir=log_dir,
        timeout=options.request_timeout,
    )

    def abort() -> None:
        # The last bound: whatever hangs, the processes go and the run ends.
        stack.kill()
        print(f"hostile bench: aborted after {options.max_seconds + 120:.0f} s", file=sys.stderr)
        os._exit(3)

    watchdog = threading.Timer(options.max_seconds + 120, abort)
    watchdog.daemon = True
    watchdog.start()
    report: dict[str, Any] = {
        "benchmark": "hostile",
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "code": code_version(REPO),
    }
    recreate_database(admin_url, options.database)
    searcher: Searcher | None = None
    try:
        migrate(environment)
        hostile, quiet = seed(
            environment=environment, agents=2, memories_per_user=options.memories_per_user
        )
        limits, server_content = server_limits(options.content_bytes)
        report["settings"] = {
            "web_workers": options.workers,
            "content_bytes": limits.content_bytes,
            "server_content_bytes": server_content,
            "limits": limits.__dict__,
            "repeat": options.repeat,
            "inputs": [i.name for i in inputs],
            "routes": [r for r in ROUTES if not options.routes or r in options.routes],
            "memories_per_user": options.memories_per_user,
            "request_timeout_seconds": options.request_timeout,
            "extraction_timeout_seconds": options.extraction_timeout,
            "max_seconds": options.max_seconds,
            "extraction": "a Celery worker process (worker_command, concurrency 1), as deployed",
        }
        report["warm_up"] = stack.start(hostile)
        searcher = Searcher(stack, quiet, timeout=options.request_timeout)
        searcher.start()
        current = Run(
            options=options,
            stack=stack,
            searcher=searcher,
            hostile=hostile,
            limits=limits,
            database_url=bench_url,
            deadline=started + options.max_seconds,
        )
        warm_every_route(current)
        report["baseline"] = measure_baseline(current, seconds=options.baseline_seconds)
        current.first_baseline_p50 = current.baseline_p50
        print(f"concurrent search alone: {report['baseline']}")
        for hostile_input in inputs:
            send_input(current, hostile_input)
        report["attempts"] = current.rows
        report["rows"] = worst_rows(current.rows)
        report["skipped"] = current.skipped
        report["restarts"] = current.restarts
        report["warm_up_routes"] = current.warm_up_rows
        report["searches"] = baseline(searcher.samples)
    finally:
        if searcher is not None:
            searcher.stop()
        stack.stop()
        watchdog.cancel()
        if not options.keep_db:
            drop_database(admin_url, options.database)
    report["servers"] = stack.logs
    if not any(log["tracebacks"] for log in stack.logs):
        shutil.rmtree(log_dir)  # Kept only when the report points at a traceback in them.
    report["targets"] = judge(report["attempts"])
    report["machine"]["load_average_after"] = machine()["load_average"]
    report["seconds"] = round(time.monotonic() - started, 1)
    return report, write_report(report, options.out, name="hostile")


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def parse_options(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add: Callable[..., Any] = parser.add_argument
    add("--workers", type=int, help="web worker processes (default 1: one shared, the worst)")
    add("--content-bytes", type=int, help="content size (default: the server's limit, 32 KiB)")
    add("--repeat", type=int, help="attempts per input and route (default 2)")
    add("--inputs", type=_names, help=f"comma-separated, of: {', '.join(i.name for i in INPUTS)}")
    add("--routes", type=_names, help=f"comma-separated, of: {', '.join(ROUTES)}")
    add("--baseline-seconds", type=float, help="the searcher alone first (default 5)")
    add("--input-baseline-seconds", type=float, help="…and before each input (default 2)")
    add("--memories-per-user", type=int, help="seeded per user (default 100)")
    add("--request-timeout", type=float, help="seconds per request (default 60)")
    add("--extraction-timeout", type=float, help="seconds an extraction may take (default 60)")
    add("--max-seconds", type=float, help="wall-clock cap of the whole run (default 2400)")
    add("--database", help="the bench database, dropped and created (memoryhub_load_hostile)")
    add("--redis-db", type=int, help="Redis database of the broker, purged (default 14)")
    add("--out", type=Path, help="results folder (default bench/results)")
    add("--keep-db", action="store_true", help="keep the bench database afterwards")
    add("--quick", action="store_true", help="2 inputs at 2 KiB, once each (the test)")
    given = vars(parser.parse_args(argv))
    defaults = QUICK if given.pop("quick") else {}
    return Options(**{**defaults, **{k: v for k, v in given.items() if v is not None}})


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(argv)
    # SIGTERM unwinds like Ctrl-C, so the finally blocks stop the server and drop the database.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    report, path = run(options)
    print(format_report(report))
    print(f"Results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
