"""Load benchmark: 1, 8 and 32 concurrent agents against the production web process model.

Each agent is a thread with its own key, end user and keep-alive connection, cycling remember,
search, context and list for a fixed time. Per configuration (agents x web workers) it reports
throughput, p50/p95 per operation, errors by status, every acknowledged write read back, and the
most server connections seen beside the pool bound (workers x DATABASE_POOL_MAX_SIZE).
Loopback only; every wait is bounded and the server is always stopped.

    .venv/bin/python bench/load.py [--agents 1,8,32] [--workers 1,2] [--duration 20] [--quick]
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # Run as a script: make `bench` and `memoryhub` importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from bench.load_agents import drive, read_back, warm_up
from bench.load_monitor import ConnectionMonitor, CpuReading
from bench.load_report import (
    OPERATIONS,
    code_version,
    format_report,
    judge,
    machine,
    scaling,
    scaling_by_round,
    summarise_outcomes,
    write_report,
)
from bench.load_stack import (
    REPO,
    LoadAgent,
    WebServer,
    base_database_url,
    database_url,
    drop_database,
    migrate,
    recreate_database,
    scan_log,
    seed,
    stack_environment,
    start_web,
    wait_until_ready,
)

RESULTS_DIR = Path(__file__).resolve().parent / "results"
# Raised far above any agent's pace: the bench measures capacity, not the rate limiter (each
# request still pays for its count).
RATE_LIMIT_PER_MINUTE = 1_000_000


@dataclass(frozen=True)
class Options:
    agents: tuple[int, ...] = (1, 8, 32)
    workers: tuple[int, ...] = (1, 2)
    duration: float = 20.0
    rounds: int = 1
    memories_per_user: int = 300
    pool_max_size: int = 10
    database: str = "memoryhub_load"
    request_timeout: float = 30.0
    idle_wait: float = 5.0
    max_seconds: float = 480.0
    out: Path = RESULTS_DIR
    keep_db: bool = False


QUICK = {
    "agents": (2,),
    "workers": (1,),
    "duration": 3.0,
    "memories_per_user": 30,
    "idle_wait": 1.0,
}


def run_configuration(
    server: WebServer,
    agents: Sequence[LoadAgent],
    *,
    monitor: ConnectionMonitor,
    options: Options,
) -> dict[str, Any]:
    """`len(agents)` agents for `options.duration` seconds, then the re-reads and the idle level."""
    label = f"load w{server.workers} a{len(agents)}"
    read_cpu = partial(
        CpuReading.now,
        web_group=server.process.pid,
        admin_url=monitor.admin_url,
        database=monitor.database,
    )
    cpu_before = read_cpu()
    started = time.monotonic()
    drive_one = partial(
        drive,
        port=server.port,
        until=started + options.duration,
        timeout=options.request_timeout,
        label=label,
    )
    with ThreadPoolExecutor(max_workers=len(agents)) as pool:
        results = list(pool.map(drive_one, agents))
    seconds = time.monotonic() - started
    cpu_cores = read_cpu().cores_since(cpu_before)
    peak_under_load = monitor.peak(started)
    outcomes = [o for r in results for o in r.outcomes]
    writes = [w for r in results for w in r.writes]
    # Any agent key of the workspace reaches each of its end users.
    reread = read_back(writes, port=server.port, key=agents[0].key, timeout=options.request_timeout)
    peak = monitor.peak(started)
    time.sleep(options.idle_wait + 2 * monitor.interval)
    return {
        "workers": server.workers,
        "agents": len(agents),
        **summarise_outcomes(outcomes, seconds=seconds),
        "writes": reread,
        # A starved web process (machine busy, web well under its cores) makes slow figures.
        "cpu_cores": {**cpu_cores, "load_average": machine()["load_average"]},
        # The web process's CPU per request answered: the Python a request costs (issue 34),
        # less at the mercy of what else the machine runs than the throughput is.
        "web_cpu_ms_per_request": round(1000 * cpu_cores["web"] * seconds / len(outcomes), 2)
        if outcomes
        else None,
        "connections": {
            "peak_under_load": peak_under_load,
            "peak": peak,
            "bound": server.workers * options.pool_max_size,
            "idle_after": monitor.latest(),
            "idle_after_seconds": options.idle_wait,
        },
    }


def agents_for_run(
    agents: Sequence[LoadAgent], count: int, earlier_runs: Sequence[dict[str, Any]]
) -> list[LoadAgent]:
    """The next `count` seeded agents after those the earlier runs of this count used.

    Every run's writes grow its users' memories, and a user with more memories is slower to
    search: rotating, no agent count keeps piling onto the same users (one agent alone would
    otherwise always be the first agent, its user growing run after run).
    """
    start = count * sum(1 for run in earlier_runs if run["agents"] == count)
    return [agents[(start + n) % len(agents)] for n in range(count)]


def measure_server(
    workers: int,
    agents: Sequence[LoadAgent],
    *,
    options: Options,
    environment: dict[str, str],
    admin_url: str,
    log_dir: Path,
    deadline: float,
    report: dict[str, Any],
    current: list[WebServer],
) -> None:
    """Start the web process with `workers` workers, warm it up, run each agent count, stop it."""
    server = start_web(
        environment=environment, workers=workers, log=log_dir / f"web-w{workers}.log"
    )
    current.append(server)
    monitor = ConnectionMonitor(admin_url, options.database)
    monitor.start()
    summary: dict[str, Any] = {"workers": workers, "port": server.port, "log_file": str(server.log)}
    try:
        wait_until_ready(server, agents[0])
        summary["warm_up"] = warm_up(server, agents, timeout=options.request_timeout)
        print(f"workers={workers}: ready, warm-up {summary['warm_up']['slowest_seconds']} s")
        # Rounds interleave the agent counts (1, 8, 32, 1, 8, 32 …): on a VM whose host lends it
        # more or less CPU from one minute to the next, each round's ratio compares runs
        # made side by side.
        for round_number in range(options.rounds):
            for count in options.agents:
                if time.monotonic() + options.duration + options.idle_wait + 15 > deadline:
                    report["skipped"].append(
                        f"{count} agents x {workers} workers, round {round_number + 1}"
                    )
                    continue
                run = run_configuration(
                    server,
                    agents_for_run(agents, count, report["runs"]),
                    monitor=monitor,
                    options=options,
                )
                run["round"] = round_number + 1
                report["runs"].append(run)
                print(
                    f"workers={workers} agents={count} round {round_number + 1}: "
                    f"{run['throughput_per_second']} ok/s, "
                    f"errors {run['errors_by_status'] or 'none'}, lost {run['writes']['lost']}, "
                    f"connections {run['connections']['peak']}/{run['connections']['bound']}"
                )
    finally:
        server.stop()
        current.remove(server)
        monitor.stop()
        summary["connections_peak"] = monitor.peak()
        summary["connections_bound"] = workers * options.pool_max_size
        summary["other_backends_peak"] = monitor.other_backends_peak
        summary["monitor_samples"] = len(monitor.samples)
        summary["monitor_failures"] = monitor.failures
        summary["log"] = scan_log(server.log)
        report["servers"].append(summary)


def run(options: Options) -> tuple[dict[str, Any], Path]:
    """Set up the load database, measure every configuration, write the JSON; return both."""
    started = time.monotonic()
    deadline = started + options.max_seconds
    current: list[WebServer] = []

    def abort() -> None:
        # The last bound: whatever hangs, the server goes and the run ends.
        for server in list(current):
            os.killpg(server.process.pid, signal.SIGKILL)
        print(f"load bench: aborted after {options.max_seconds + 60:.0f} s", file=sys.stderr)
        os._exit(3)

    watchdog = threading.Timer(options.max_seconds + 60, abort)
    watchdog.daemon = True
    watchdog.start()
    report: dict[str, Any] = {
        "benchmark": "load",
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "code": code_version(REPO),
        "settings": {
            "duration_seconds": options.duration,
            "rounds": options.rounds,
            "agents": list(options.agents),
            "workers": list(options.workers),
            "pool_max_size": options.pool_max_size,
            "rate_limit_per_minute": RATE_LIMIT_PER_MINUTE,
            "memories_per_user": options.memories_per_user,
            "request_timeout_seconds": options.request_timeout,
            "mix": list(OPERATIONS),
        },
        "servers": [],
        "runs": [],
        "skipped": [],
    }
    admin_url = base_database_url()
    environment = stack_environment(
        database_url=database_url(admin_url, options.database),
        pool_max_size=options.pool_max_size,
        rate_limit_per_minute=RATE_LIMIT_PER_MINUTE,
    )
    recreate_database(admin_url, options.database)
    log_dir = Path(tempfile.mkdtemp(prefix="memoryhub-load-"))
    try:
        migrate(environment)
        agents = seed(
            environment=environment,
            agents=max(options.agents),
            memories_per_user=options.memories_per_user,
        )
        report["setup_seconds"] = round(time.monotonic() - started, 1)
        print(f"seeded {len(agents)} agents x {options.memories_per_user} memories")
        for workers in options.workers:
            measure_server(
                workers,
                agents,
                options=options,
                environment=environment,
                admin_url=admin_url,
                log_dir=log_dir,
                deadline=deadline,
                report=report,
                current=current,
            )
    finally:
        watchdog.cancel()
        if not options.keep_db:
            drop_database(admin_url, options.database)
    if not any(server["log"]["tracebacks"] for server in report["servers"]):
        shutil.rmtree(log_dir)  # Kept only when the report points at a traceback in them.
        for server in report["servers"]:
            server["log_file"] = None
    report["machine"]["load_average_after"] = machine()["load_average"]
    report["seconds"] = round(time.monotonic() - started, 1)
    report["scaling"] = scaling(report["runs"])
    report["scaling_by_round"] = scaling_by_round(report["runs"])
    report["targets"] = judge(report["runs"], report["servers"])
    return report, write_report(report, options.out)


def _counts(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(","))


def parse_options(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--agents", type=_counts, help="concurrent agents per configuration (default 1,8,32)")
    add("--workers", type=_counts, help="web worker processes (default 1,2)")
    add("--duration", type=float, help="seconds per configuration (default 20)")
    add("--rounds", type=int, help="times each agent count runs, interleaved (default 1)")
    add("--memories-per-user", type=int, help="seeded per end user (default 300)")
    add("--pool-max-size", type=int, help="DATABASE_POOL_MAX_SIZE (default 10)")
    add("--database", help="the load database, dropped and created (default memoryhub_load)")
    add("--idle-wait", type=float, help="seconds after a run before the idle connection count")
    add("--max-seconds", type=float, help="wall-clock cap of the whole run (default 480)")
    add("--out", type=Path, help="results folder (default bench/results)")
    add("--keep-db", action="store_true", help="keep the load database afterwards")
    add("--quick", action="store_true", help="2 agents, 1 worker, 3 s, 30 memories (the test)")
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
