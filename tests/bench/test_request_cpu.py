"""The per-request CPU benchmark for real, briefly: a few requests per hot route, in process.

It runs bench/request_cpu.py as a process of its own (it sets Django up on a database of its
own), then checks the JSON it wrote. No timings are asserted: the benchmark measures them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from bench.load_report import OPERATIONS

REPO = Path(__file__).resolve().parents[2]


def test_each_hot_route_gets_its_cpu_statements_and_python_calls(tmp_path):
    suffix = re.sub(r"\W", "_", os.environ.get("DATABASE_TEST_NAME") or "test")
    result = subprocess.run(  # noqa: S603  # Our own interpreter and script.
        [
            sys.executable,
            "bench/request_cpu.py",
            "--requests",
            "2",
            "--memories-per-user",
            "10",
            "--database",
            f"memoryhub_load_cpu_{suffix}",
            "--out",
            tmp_path,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((tmp_path / "request_cpu-latest.json").read_text())
    assert list(report["routes"]) == list(OPERATIONS)
    for row in report["routes"].values():
        assert row["requests"] == 2
        assert row["cpu_ms_mean"] > 0
        assert row["statements_p50"] > 0  # Counted by Django, with DEBUG off.
        assert row["python_calls_p50"] > 0
    assert "all four" in result.stdout
