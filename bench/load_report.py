"""The load benchmark's verdict and output: the issue 13 targets, the table, the JSON files."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# The mix, in the order each agent cycles through it.
OPERATIONS = ("remember", "search", "context", "list")
THROTTLED = frozenset({429, 503})
# Throughput at 8 agents over throughput at 1, the median over interleaved rounds, per web
# worker count (issue 34). One worker is one Python interpreter, which runs one thread of Python
# at a time: its ratio is bounded by how much of a request waits outside the interpreter lock
# (PostgreSQL, ONNX Runtime), so the Python a request spends sets it. Two workers (the
# production model, WEB_CONCURRENCY=2 on this 2-core VM) add a second interpreter.
SCALING_TARGETS = {1: 1.5, 2: 1.8}


@dataclass(frozen=True)
class Outcome:
    operation: str
    status: int  # 0: no HTTP answer (`error` says why).
    seconds: float
    has_retry_after: bool
    error: str = ""


def percentiles(seconds: Sequence[float]) -> dict[str, float]:
    """n, p50, p95 and mean of timings in seconds, in milliseconds (zeros when empty)."""
    if not seconds:
        return {"n": 0, "p50_ms": 0.0, "p95_ms": 0.0, "mean_ms": 0.0}
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(p95 * 1000, 1),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 1),
    }


def _status_key(outcome: Outcome) -> str:
    return str(outcome.status) if outcome.status else outcome.error


def is_expected(outcome: Outcome) -> bool:
    """A success, or a 429/503 that says when to retry: what the targets allow."""
    ok = 200 <= outcome.status < 300
    return ok or (outcome.status in THROTTLED and outcome.has_retry_after)


def summarise_outcomes(outcomes: Sequence[Outcome], *, seconds: float) -> dict[str, Any]:
    """Throughput, latency per operation (successes only) and errors by status."""
    ok = [o for o in outcomes if 200 <= o.status < 300]
    failed = [o for o in outcomes if not 200 <= o.status < 300]
    operations = {
        name: {
            **percentiles([o.seconds for o in ok if o.operation == name]),
            "errors": dict(Counter(_status_key(o) for o in failed if o.operation == name)),
        }
        for name in OPERATIONS
    }
    return {
        "seconds": round(seconds, 2),
        "requests": len(outcomes),
        "ok": len(ok),
        "throughput_per_second": round(len(ok) / seconds, 2) if seconds else 0.0,
        "operations": operations,
        "errors_by_status": dict(sorted(Counter(_status_key(o) for o in failed).items())),
        "server_errors": sum(o.status >= 500 and o.status != 503 for o in outcomes),
        "throttled_without_retry_after": sum(
            o.status in THROTTLED and not o.has_retry_after for o in outcomes
        ),
        "unexpected_errors": sum(not is_expected(o) for o in outcomes),
    }


def machine() -> dict[str, Any]:
    """What the figures were measured on, and how busy it was."""
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def code_version(repo: Path) -> dict[str, Any]:
    """The commit measured, and whether the working tree held uncommitted changes to it."""

    def git(*args: str) -> str:
        result = subprocess.run(  # noqa: S603  # git, with our own arguments.
            ["git", *args],  # noqa: S607  # git from PATH, as a developer runs it.
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        return result.stdout.strip()

    changed = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "--short", "HEAD"), "uncommitted_changes": bool(changed)}


def scaling_by_round(runs: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """Per worker count: throughput at 8 agents over throughput at 1, for each round."""
    ratios: dict[str, list[float]] = {}
    for workers in sorted({run["workers"] for run in runs}):
        own = [run for run in runs if run["workers"] == workers]
        one = {run.get("round", 1): run for run in own if run["agents"] == 1}
        eight = {run.get("round", 1): run for run in own if run["agents"] == 8}
        ratios[str(workers)] = [
            round(eight[n]["throughput_per_second"] / one[n]["throughput_per_second"], 2)
            for n in sorted(one.keys() & eight.keys())
            if one[n]["throughput_per_second"]
        ]
    return ratios


def scaling(runs: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """Per worker count: the median over rounds of throughput at 8 agents over throughput at
    1 (None if either is missing)."""
    return {
        workers: round(statistics.median(ratios), 2) if ratios else None
        for workers, ratios in scaling_by_round(runs).items()
    }


def scaling_target(runs: Sequence[dict[str, Any]], workers: int) -> dict[str, Any]:
    """The scaling target of one worker count, judged on the median over its rounds."""
    target = SCALING_TARGETS[workers]
    ratio = scaling(runs).get(str(workers))
    return {
        "target": f"throughput at 8 agents >= {target}x the single-agent throughput on "
        f"{workers} web worker(s) (median of interleaved rounds)",
        "passed": ratio >= target if ratio is not None else None,
        "detail": {"ratio": ratio, "rounds": scaling_by_round(runs).get(str(workers), [])},
    }


def judge(
    runs: Sequence[dict[str, Any]], servers: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each target with passed True/False (None: not measured in this run) and the figures."""
    unexpected = {f"w{r['workers']} a{r['agents']}": r["unexpected_errors"] for r in runs}
    lost = {f"w{r['workers']} a{r['agents']}": r["writes"]["lost"] for r in runs}
    peaks = {
        f"w{s['workers']}": f"{s['connections_peak']}/{s['connections_bound']}" for s in servers
    }
    return [
        {
            "target": "0 errors other than 429/503 with Retry-After (every configuration, "
            "32 agents included)",
            "passed": all(n == 0 for n in unexpected.values()) if runs else None,
            "detail": unexpected,
            "measured_at_32_agents": any(r["agents"] == 32 for r in runs),
        },
        {
            "target": "0 lost acknowledged writes",
            "passed": all(n == 0 for n in lost.values()) if runs else None,
            "detail": lost,
        },
        *(scaling_target(runs, workers) for workers in SCALING_TARGETS),
        {
            "target": "server connections never above the pool bound (workers x pool size)",
            "passed": all(s["connections_peak"] <= s["connections_bound"] for s in servers)
            if servers
            else None,
            "detail": peaks,
        },
    ]


def _cell(operation: dict[str, Any]) -> str:
    return f"{operation['p50_ms']:.0f}/{operation['p95_ms']:.0f}" if operation["n"] else "-"


def _cores(cores: dict[str, float]) -> str:
    return f"{cores['web']:.1f}/{cores['postgres']:.1f}/{cores['others']:.1f}"


def _errors(run: dict[str, Any]) -> str:
    errors = run["errors_by_status"]
    return ", ".join(f"{status}x{n}" for status, n in errors.items()) or "none"


def format_report(report: dict[str, Any]) -> str:
    """The runs as a plain-text table, then the targets with PASS/FAIL."""
    settings = report["settings"]
    lines = [
        f"Load: {settings['duration_seconds']:.0f} s per configuration, "
        f"DATABASE_POOL_MAX_SIZE={settings['pool_max_size']} per web process, rate limit "
        f"{settings['rate_limit_per_minute']:,}/min (raised: capacity, not the limiter)",
        f"code: {report['code']['commit']}"
        f"{' + uncommitted changes' if report['code']['uncommitted_changes'] else ''}; "
        f"machine: {report['machine']['cpus']} CPUs, load average before "
        f"{report['machine']['load_average']}, after {report['machine']['load_average_after']}",
        "p50/p95 in ms of the successful requests; conns: peak / bound, idle after the load;",
        "cores: CPU used by the web process / its PostgreSQL backends / everything else on the",
        "machine (other users; the bench itself is listed in the JSON); web ms/req: the web",
        "process's CPU per request",
        "",
        f"{'workers':>7} {'agents':>6} {'round':>5} {'requests':>8} {'ok/s':>7}  "
        f"{'remember':>9} {'search':>9} {'context':>9} {'list':>9}  "
        f"{'lost/acked':>10} {'conns':>7} {'idle':>4} {'cores':>14} {'web ms/req':>10}  errors",
    ]
    for run in report["runs"]:
        ops = run["operations"]
        conns = run["connections"]
        writes = run["writes"]
        lines.append(
            f"{run['workers']:>7} {run['agents']:>6} {run.get('round', 1):>5} {run['requests']:>8} "
            f"{run['throughput_per_second']:>7.1f}  "
            f"{_cell(ops['remember']):>9} {_cell(ops['search']):>9} "
            f"{_cell(ops['context']):>9} {_cell(ops['list']):>9}  "
            f"{writes['lost']:>4}/{writes['acknowledged']:<5} "
            f"{conns['peak']:>3}/{conns['bound']:<3} {conns['idle_after']:>4} "
            f"{_cores(run['cpu_cores']):>14} {run.get('web_cpu_ms_per_request') or '-':>10}  "
            f"{_errors(run)}"
        )
        if run["server_errors"] or run["throttled_without_retry_after"]:
            lines.append(
                f"{'':>15}!! {run['server_errors']} server errors (5xx other than 503), "
                f"{run['throttled_without_retry_after']} 429/503 without Retry-After"
            )
    for server in report["servers"]:
        log = server["log"]
        if log["tracebacks"] or log["database_unavailable_warnings"]:
            lines.append(
                f"server w{server['workers']}: {log['tracebacks']} tracebacks, "
                f"{log['database_unavailable_warnings']} 'database unavailable' warnings logged"
            )
    for skipped in report["skipped"]:
        lines.append(f"skipped (time cap): {skipped}")
    lines.append("")
    by_round = scaling_by_round(report["runs"])
    ratios = ", ".join(
        f"{workers} worker(s): {ratio if ratio is not None else '-'}"
        + (f" (rounds {by_round[workers]})" if len(by_round.get(workers, [])) > 1 else "")
        for workers, ratio in report["scaling"].items()
    )
    lines.append(f"throughput 8 agents / 1 agent (median over rounds): {ratios}")
    for target in report["targets"]:
        verdict = {True: "PASS", False: "FAIL", None: "n/a "}[target["passed"]]
        lines.append(f"  {verdict}  {target['target']}: {target['detail']}")
    return "\n".join(lines) + "\n"


def write_report(report: dict[str, Any], directory: Path, *, name: str = "load") -> Path:
    """Save the report as JSON: a dated file `<name>-<UTC time>.json`, and `<name>-latest.json`
    beside it."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    text = json.dumps(report, indent=2, default=str) + "\n"
    path = directory / f"{name}-{stamp}.json"
    path.write_text(text, encoding="utf-8")
    (directory / f"{name}-latest.json").write_text(text, encoding="utf-8")
    return path
