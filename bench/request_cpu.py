"""Per-request CPU of the hot API routes: process CPU time and SQL statements per request.

Drives remember, search, context and list in this process through Django's test client (the
whole middleware stack, the production settings as in `bench/load.py`: DEBUG off) on a seeded
database of its own, and reports per route the median and mean process CPU per request
(`time.process_time`: this process's user + system time, the query embedding included) and the
statements each request sends. The routes are interleaved request by request, as the load
bench's agents send them. `--profile` writes a cProfile of the measured requests beside the JSON.

To compare two versions of the code in one sitting, run this file from each checkout in turn
(it imports `memoryhub` from the checkout it lives in), interleaved.

    .venv/bin/python bench/request_cpu.py [--requests 100] [--memories-per-user 300] [--profile]
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # Run as a script: make `bench` and `memoryhub` importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import cProfile
import json
import os
import pstats
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from bench.load_report import OPERATIONS, code_version, machine
from bench.load_stack import (
    HOST,
    MODE,
    REPO,
    base_database_url,
    database_url,
    drop_database,
    memory_texts,
    migrate,
    queries,
    recreate_database,
    seed,
    stack_environment,
)

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DATABASE = "memoryhub_load_cpu"
WARM_UP = 10  # Requests per route before measuring: imports, caches and the ONNX session.
CALL_COUNTED = 5  # Requests per route run again under cProfile, to count their Python calls.


def request_sender(key: str, user: str) -> Callable[[str, int], int]:
    """A function sending the n-th request of a route through the test client; returns the status."""
    from django.test import Client

    client = Client(
        SERVER_NAME=HOST,
        headers={"Authorization": f"Bearer {key}", "X-Forwarded-Proto": "https"},
    )
    texts = memory_texts(300)
    questions = queries()
    scope = {"user": user, "mode": MODE}

    def send(operation: str, n: int) -> int:
        query = questions[n % len(questions)]
        if operation == "remember":
            body = {**scope, "kind": "fact", "content": f"cpu #{n}: {texts[n % len(texts)]}"}
            response = client.post("/api/v1/memories", body, content_type="application/json")
        elif operation == "search":
            body = {**scope, "query": query}
            response = client.post("/api/v1/search", body, content_type="application/json")
        elif operation == "context":
            body = {**scope, "message": query}
            response = client.post("/api/v1/context", body, content_type="application/json")
        else:
            response = client.get("/api/v1/memories", scope)
        return int(response.status_code)

    return send


def measure(
    send: Callable[[str, int], int], *, requests: int, profiler: cProfile.Profile | None
) -> dict[str, dict[str, Any]]:
    """CPU seconds and statements of each request, by route, the routes interleaved."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for n in range(WARM_UP):
        for operation in OPERATIONS:
            send(operation, n)
    cpu: dict[str, list[float]] = {operation: [] for operation in OPERATIONS}
    statements: dict[str, list[int]] = {operation: [] for operation in OPERATIONS}
    for n in range(WARM_UP, WARM_UP + requests):
        for operation in OPERATIONS:
            with CaptureQueriesContext(connection) as captured:
                if profiler is not None:
                    profiler.enable()
                started = time.process_time()
                status = send(operation, n)
                cpu[operation].append(time.process_time() - started)
                if profiler is not None:
                    profiler.disable()
            if status >= 300:
                raise RuntimeError(f"{operation} answered {status}")
            statements[operation].append(len(captured.captured_queries))
    calls = count_calls(send, first=WARM_UP + requests, requests=CALL_COUNTED)
    return {
        operation: {
            "requests": requests,
            "cpu_ms_p50": round(statistics.median(cpu[operation]) * 1000, 2),
            "cpu_ms_mean": round(statistics.fmean(cpu[operation]) * 1000, 2),
            "statements_p50": statistics.median(statements[operation]),
            "statements_max": max(statements[operation]),
            "python_calls_p50": statistics.median(calls[operation]),
        }
        for operation in OPERATIONS
    }


def count_calls(
    send: Callable[[str, int], int], *, first: int, requests: int
) -> dict[str, list[int]]:
    """Python function calls per request, by route: a measure of the Python a request runs that,
    unlike CPU time, does not move with what else the machine runs (this VM is shared)."""
    calls: dict[str, list[int]] = {operation: [] for operation in OPERATIONS}
    for n in range(first, first + requests):
        for operation in OPERATIONS:
            profiler = cProfile.Profile()
            profiler.runcall(send, operation, n)
            calls[operation].append(pstats.Stats(profiler).total_calls)  # type: ignore[attr-defined]
    return calls


def format_table(report: dict[str, Any]) -> str:
    lines = [
        f"per-request CPU, {report['code']['commit']}"
        f"{' (uncommitted changes)' if report['code']['uncommitted_changes'] else ''} "
        f"(load average {report['machine']['load_average']})",
        f"{'route':<10} {'cpu ms p50':>10} {'cpu ms mean':>11} {'stmts p50':>9} {'stmts max':>9}"
        f" {'py calls':>9}",
    ]
    for operation, row in report["routes"].items():
        lines.append(
            f"{operation:<10} {row['cpu_ms_p50']:>10} {row['cpu_ms_mean']:>11} "
            f"{row['statements_p50']:>9} {row['statements_max']:>9} {row['python_calls_p50']:>9}"
        )
    lines.append(f"{'all four':<10} {report['cpu_ms_mean_of_routes']:>22}")
    return "\n".join(lines)


def run(
    *, requests: int, memories_per_user: int, profile: bool, out: Path, database: str = DATABASE
) -> dict[str, Any]:
    admin_url = base_database_url()
    environment = stack_environment(
        database_url=database_url(admin_url, database),
        pool_max_size=0,
        rate_limit_per_minute=1_000_000,
    )
    recreate_database(admin_url, database)
    try:
        migrate(environment)
        (agent,) = seed(environment=environment, agents=1, memories_per_user=memories_per_user)
        from django.db import connections

        # The seeding turned the pool off; keep one connection open instead, as a pooled
        # production worker does, so no request pays for connecting.
        connections["default"].settings_dict["CONN_MAX_AGE"] = None
        profiler = cProfile.Profile(time.process_time) if profile else None
        routes = measure(
            request_sender(agent.key, agent.user), requests=requests, profiler=profiler
        )
        connections.close_all()
    finally:
        drop_database(admin_url, database)
    report: dict[str, Any] = {
        "benchmark": "request_cpu",
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "code": code_version(REPO),
        "settings": {"requests_per_route": requests, "memories_per_user": memories_per_user},
        "routes": routes,
        "cpu_ms_mean_of_routes": round(
            statistics.fmean(row["cpu_ms_mean"] for row in routes.values()), 2
        ),
    }
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for name in (f"request_cpu-{stamp}.json", "request_cpu-latest.json"):
        (out / name).write_text(json.dumps(report, indent=2) + "\n")
    if profiler is not None:
        profiler.dump_stats(out / f"request_cpu-{stamp}.prof")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100, help="measured per route")
    parser.add_argument("--memories-per-user", type=int, default=300, help="seeded memories")
    parser.add_argument("--profile", action="store_true", help="also write a cProfile (.prof)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results folder")
    parser.add_argument(
        "--database", default=DATABASE, help="dropped and created (memoryhub_load…)"
    )
    options = parser.parse_args(argv)
    os.chdir(REPO)
    report = run(
        requests=options.requests,
        memories_per_user=options.memories_per_user,
        profile=options.profile,
        out=options.out,
        database=options.database,
    )
    print(format_table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
