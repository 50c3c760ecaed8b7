"""The load benchmark for real, briefly: 2 agents on one production web worker for 3 seconds.

It runs bench/load.py as a process of its own (it sets Django up on a database of its own),
then checks the JSON it wrote. No timings are asserted: the benchmark measures them.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from bench.load import agents_for_run
from bench.load_report import (
    OPERATIONS,
    Outcome,
    judge,
    scaling,
    scaling_by_round,
    summarise_outcomes,
)
from bench.load_stack import HOST, LoadAgent, base_database_url

REPO = Path(__file__).resolve().parents[2]


def _database_name() -> str:
    # A database of this test run's own, apart from a full bench run's (memoryhub_load).
    suffix = re.sub(r"\W", "_", os.environ.get("DATABASE_TEST_NAME") or "test")
    return f"memoryhub_load_{suffix}"


def _database_exists(name: str) -> bool:
    with psycopg.connect(base_database_url(), autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
    return row is not None


def _accepts_connections(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex((HOST, port)) == 0


def test_quick_load_run_reads_back_every_write_and_stays_within_the_pool(tmp_path):
    database = _database_name()
    result = subprocess.run(  # noqa: S603  # Our own interpreter and script.
        [sys.executable, "bench/load.py", "--quick", "--database", database, "--out", tmp_path],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((tmp_path / "load-latest.json").read_text())
    assert len(list(tmp_path.glob("load-2*.json"))) == 1  # The dated copy.

    [run] = report["runs"]
    assert (run["workers"], run["agents"]) == (1, 2)
    assert all(run["operations"][name]["n"] > 0 for name in OPERATIONS)
    assert run["ok"] == run["requests"] > 0
    assert run["errors_by_status"] == {}  # No 301 either: the forwarded HTTPS is trusted.
    assert run["server_errors"] == run["unexpected_errors"] == 0
    writes = run["writes"]
    assert writes["acknowledged"] > 0
    assert writes["lost"] == 0
    assert writes["read_statuses"] == {"200": writes["acknowledged"]}
    connections = run["connections"]
    assert connections["bound"] == 10
    assert 1 <= connections["peak"] <= connections["bound"]  # The monitor saw the server's own.
    assert {"web", "postgres", "others", "machine"} <= set(run["cpu_cores"])
    assert run["web_cpu_ms_per_request"] > 0

    [server] = report["servers"]
    assert server["warm_up"]["settled"] is True
    assert server["log"]["tracebacks"] == 0
    targets = {target["target"]: target["passed"] for target in report["targets"]}
    # No 8-agent run to compare, on one worker or two.
    assert list(targets.values()) == [True, True, None, None, True]
    assert report["machine"]["cpus"] and report["machine"]["load_average_after"]

    # Cleaned up: the server is stopped and the load database dropped.
    assert not _accepts_connections(server["port"])
    assert not _database_exists(database)


@pytest.mark.parametrize(
    ("outcome", "unexpected", "server_error"),
    [
        (Outcome("search", 200, 0.1, has_retry_after=False), 0, 0),
        (Outcome("search", 503, 0.1, has_retry_after=True), 0, 0),
        (Outcome("search", 429, 0.1, has_retry_after=True), 0, 0),
        (Outcome("search", 503, 0.1, has_retry_after=False), 1, 0),
        (Outcome("search", 500, 0.1, has_retry_after=False), 1, 1),
        (Outcome("search", 301, 0.1, has_retry_after=False), 1, 0),
        (Outcome("search", 0, 30.0, has_retry_after=False, error="TimeoutError"), 1, 0),
    ],
)
def test_only_throttling_that_says_when_to_retry_is_an_expected_error(
    outcome, unexpected, server_error
):
    summary = summarise_outcomes([outcome], seconds=1.0)
    assert summary["unexpected_errors"] == unexpected
    assert summary["server_errors"] == server_error
    assert summary["ok"] == (1 if outcome.status == 200 else 0)


def test_the_scaling_ratio_pairs_runs_of_the_same_round_and_takes_the_median():
    def run(workers: int, agents: int, round_number: int, throughput: float) -> dict[str, object]:
        return {
            "workers": workers,
            "agents": agents,
            "round": round_number,
            "throughput_per_second": throughput,
        }

    # The host lent less CPU in round 2: paired within rounds, each ratio stays near 1.6,
    # where pairing round 1's single agent with round 2's eight would give 1.0.
    runs = [
        run(2, 1, 1, 30.0),
        run(2, 8, 1, 48.0),
        run(2, 1, 2, 20.0),
        run(2, 8, 2, 30.0),
        run(2, 1, 3, 25.0),
        run(2, 8, 3, 42.5),
        run(1, 1, 1, 30.0),  # no 8-agent run for one worker
    ]
    assert scaling_by_round(runs) == {"1": [], "2": [1.6, 1.5, 1.7]}
    assert scaling(runs) == {"1": None, "2": 1.6}


def test_each_worker_count_is_judged_on_its_own_scaling_target():
    def run(workers: int, agents: int, round_number: int, throughput: float) -> dict[str, object]:
        return {
            "workers": workers,
            "agents": agents,
            "round": round_number,
            "throughput_per_second": throughput,
            "unexpected_errors": 0,
            "writes": {"lost": 0},
        }

    def scaling_verdicts(runs: list[dict[str, object]]) -> list[tuple[bool | None, object]]:
        return [
            (t["passed"], t["detail"]["ratio"])
            for t in judge(runs, [])
            if "8 agents" in t["target"]
        ]

    one_worker = [run(1, 1, 1, 50.0), run(1, 8, 1, 65.0), run(1, 1, 2, 50.0), run(1, 8, 2, 80.0)]
    two_workers = [run(2, 1, 1, 50.0), run(2, 8, 1, 95.0)]
    # One worker: the median of 1.3 and 1.6 (1.45) misses 1.5; two workers: 1.9 meets 1.8.
    assert scaling_verdicts([*one_worker, *two_workers]) == [(False, 1.45), (True, 1.9)]
    assert scaling_verdicts([*one_worker, run(1, 1, 3, 50.0), run(1, 8, 3, 77.5)]) == [
        (True, 1.55),
        (None, None),  # two workers not measured
    ]
    assert scaling_verdicts([run(2, 1, 1, 50.0), run(2, 8, 1, 85.0)]) == [
        (None, None),
        (False, 1.7),
    ]


def test_each_run_of_an_agent_count_takes_the_next_seeded_agents():
    agents = [LoadAgent(index=n, key=f"k{n}", user=f"u{n}") for n in range(32)]
    earlier: list[dict[str, object]] = []
    firsts = []
    for _ in range(3):
        for count in (1, 8, 32):
            chosen = agents_for_run(agents, count, earlier)
            assert len({a.index for a in chosen}) == count  # never the same agent twice
            if count == 1:
                firsts.append(chosen[0].index)
            earlier.append({"agents": count})
    assert firsts == [0, 1, 2]  # one agent alone is not always the first agent's user
    assert [a.index for a in agents_for_run(agents, 8, earlier)] == list(range(24, 32))
