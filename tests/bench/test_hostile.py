"""The hostile-input benchmark for real, briefly: two inputs at 2 KiB through every route, once.

It runs bench/hostile.py as a process of its own (it sets Django up on a database of its own,
with a web server and a Celery worker), then checks the JSON it wrote. No timings are
asserted: the benchmark measures them.
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

from bench.hostile_inputs import (
    INPUTS,
    ROUTES,
    Limits,
    batch_body,
    query_text,
    request_size,
    working_memory_body,
)
from bench.hostile_report import Sample, judge, measure, worst_rows
from bench.load_stack import HOST, base_database_url

REPO = Path(__file__).resolve().parents[2]
LIMITS = Limits(
    content_bytes=2048,
    working_memory_bytes=4096,
    request_bytes=40_000,
    query_chars=250,
    batch_items=100,
)


def _database_name() -> str:
    # A database of this test run's own, apart from a full bench run's (memoryhub_load_hostile).
    suffix = re.sub(r"\W", "_", os.environ.get("DATABASE_TEST_NAME") or "test")
    return f"memoryhub_load_hostile_{suffix}"


def _database_exists(name: str) -> bool:
    with psycopg.connect(base_database_url(), autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
    return row is not None


def _accepts_connections(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex((HOST, port)) == 0


def test_quick_hostile_run_reports_every_input_through_every_route(tmp_path):
    database = _database_name()
    argv = [sys.executable, "bench/hostile.py", "--quick", "--database", database]
    argv += ["--redis-db", "15", "--out", str(tmp_path)]  # Not the full run's broker (14).
    result = subprocess.run(  # noqa: S603  # Our own interpreter and script.
        argv, cwd=REPO, capture_output=True, text=True, timeout=500, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((tmp_path / "hostile-latest.json").read_text())
    assert len(list(tmp_path.glob("hostile-2*.json"))) == 1  # The dated copy.
    assert "delay<=100ms" in result.stdout  # The table was printed.

    settings = report["settings"]
    assert settings["content_bytes"] == 2048
    assert settings["server_content_bytes"] == 32 * 1024
    assert settings["web_workers"] == 1
    assert report["baseline"]["n"] > 0 and report["baseline"]["p50_seconds"] is not None

    rows = {(row["input"], row["route"]): row for row in report["rows"]}
    assert set(rows) == {(name, route) for name in ("prose", "spaces") for route in ROUTES}
    for (name, route), row in rows.items():
        assert 200 <= row["status"] < 300, (name, route, row)  # Every input was accepted.
        assert row["own_seconds"] > 0
        assert row["delay_passed"] in {True, False, None}
        if row["concurrent_searches"]:
            assert row["worst_concurrent_seconds"] is not None
    assert rows["spaces", "extraction"]["detail"]["extraction_status"] == "done"
    assert rows["spaces", "extraction"]["own_passed"] is None  # Not a request.
    assert rows["prose", "batch"]["detail"]["items"] > 1
    assert {row["input"] for row in report["warm_up_routes"]} == {"warm-up"}

    assert [t["passed"] in {True, False} for t in report["targets"]] == [True, True]
    assert report["restarts"] == []
    [server] = report["servers"]  # Never restarted: one web server, stopped at the end.
    assert server["tracebacks"] == 0
    assert not _accepts_connections(server["port"])
    # Cleaned up: the bench database is dropped.
    assert not _database_exists(database)


def test_every_input_fills_the_size_and_keeps_its_run_past_the_stripping():
    for hostile in INPUTS:
        text = hostile.build(2048)
        size = len(text.encode())
        assert 2048 - 4 < size <= 2048, hostile.name  # A character is at most 4 bytes.
        assert len(text.strip().encode()) == size, hostile.name  # Nothing to strip away.


def test_a_batch_fills_the_request_limit_with_distinct_items():
    text = INPUTS[1].build(LIMITS.content_bytes)
    body = batch_body({"user": "u", "mode": "personal"}, text, LIMITS)
    items = body["items"]
    assert request_size(body) <= LIMITS.request_bytes
    assert request_size({**body, "items": [*items, items[0]]}) > LIMITS.request_bytes
    assert len({item["content"] for item in items}) == len(items)
    assert all(len(item["content"].encode()) <= LIMITS.content_bytes for item in items)


def test_working_memory_and_queries_are_cut_to_their_own_limits():
    text = "é\\" * 3000  # Escaped by JSON: 6 and 2 bytes where UTF-8 takes 2 and 1.
    notes = working_memory_body(text, LIMITS)
    assert len(json.dumps(notes, sort_keys=True).encode()) <= LIMITS.working_memory_bytes
    assert len(json.dumps({"notes": text[: len(notes["notes"]) + 1]}).encode()) > 4096
    assert len(query_text(text, LIMITS)) == LIMITS.query_chars


def test_the_delay_is_the_worst_overlapping_search_over_the_baseline():
    searches = [
        Sample(0.0, 0.1, 200),
        Sample(0.1, 2.5, 200),  # held up by the hostile request
        Sample(2.5, 2.6, 0, "TimeoutError"),
        Sample(3.0, 3.1, 200),  # after it: not counted
    ]
    row = measure(
        input_name="spaces",
        route="message",
        attempt=Sample(0.2, 2.55, 201),
        searches=searches,
        baseline_p50=0.1,
    )
    assert row["concurrent_searches"] == 2
    assert row["concurrent_search_errors"] == 1
    assert row["worst_concurrent_seconds"] == 2.4
    assert row["delay_seconds"] == 2.3
    assert (row["own_passed"], row["delay_passed"], row["passed"]) == (False, False, False)

    quiet = measure(
        input_name="prose",
        route="extraction",
        attempt=Sample(3.0, 3.05, 200),
        searches=searches,
        baseline_p50=0.1,
    )
    assert quiet["own_passed"] is None  # An extraction is judged on the delay it causes only.
    assert (quiet["delay_seconds"], quiet["delay_passed"], quiet["passed"]) == (0.0, True, True)


def test_repeats_keep_the_worst_own_time_and_the_worst_delay_and_the_targets_every_failure():
    def row(own: float, delay: float | None, status: int = 201) -> dict[str, object]:
        attempt = Sample(0.0, own, status)
        searches = [Sample(0.0, 0.1 + delay, 200)] if delay is not None else []
        return measure(
            input_name="tabs", route="memory", attempt=attempt, searches=searches, baseline_p50=0.1
        )

    attempts = [row(0.3, 0.5), row(0.6, 0.05), row(0.2, None, status=422)]
    [merged] = worst_rows(attempts)
    assert merged["attempts"] == 3
    assert merged["own_seconds"] == 0.6
    assert merged["delay_seconds"] == 0.5
    assert merged["passed"] is False

    own, delay = judge(attempts)
    assert (own["passed"], own["failed"]) == (False, ["tabs memory"])  # the 422 fails
    assert (delay["passed"], delay["failed"]) == (False, ["tabs memory"])
    assert [target["passed"] for target in judge([])] == [None, None]
