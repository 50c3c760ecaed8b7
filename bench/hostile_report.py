"""The hostile-input benchmark's measurements and verdict: each request's own time, the worst
latency of the searches that overlapped it, the table, the targets.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

OWN_TARGET_SECONDS = 1.0  # No request takes longer itself…
DELAY_TARGET_SECONDS = 0.1  # …nor delays another request by more than this.
# Routes whose time is not a request's: judged on the delay they cause only.
BACKGROUND_ROUTES = frozenset({"extraction"})


@dataclass(frozen=True)
class Sample:
    """One timed request (monotonic clock); status 0: no HTTP answer, `error` says why."""

    started: float
    finished: float
    status: int
    error: str = ""

    @property
    def seconds(self) -> float:
        return self.finished - self.started

    @property
    def is_ok(self) -> bool:
        return 200 <= self.status < 300


def overlapping(samples: Sequence[Sample], started: float, finished: float) -> list[Sample]:
    """The samples that were in flight at some moment between `started` and `finished`."""
    return [s for s in samples if s.started < finished and s.finished > started]


def baseline(samples: Sequence[Sample]) -> dict[str, Any]:
    """The concurrent search alone: n, p50 and worst in seconds (successes only)."""
    seconds = sorted(s.seconds for s in samples if s.is_ok)
    return {
        "n": len(seconds),
        "errors": sum(not s.is_ok for s in samples),
        "p50_seconds": round(statistics.median(seconds), 4) if seconds else None,
        "max_seconds": round(seconds[-1], 4) if seconds else None,
    }


def measure(
    *,
    input_name: str,
    route: str,
    attempt: Sample,
    searches: Sequence[Sample],
    baseline_p50: float,
    detail: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One row: the hostile request's own time and status, and what the searcher saw meanwhile.

    The worst concurrent search counts a failed or timed-out search at the time it waited: a
    search that hung behind the hostile request is exactly what the target is about.
    """
    during = overlapping(searches, attempt.started, attempt.finished)
    worst = max((s.seconds for s in during), default=None)
    delay = max(0.0, worst - baseline_p50) if worst is not None else None
    is_request = route not in BACKGROUND_ROUTES
    own_passed = attempt.is_ok and attempt.seconds <= OWN_TARGET_SECONDS if is_request else None
    delay_passed = delay <= DELAY_TARGET_SECONDS if delay is not None else None
    return {
        "input": input_name,
        "route": route,
        "status": attempt.status,
        "error": attempt.error,
        "own_seconds": round(attempt.seconds, 4),
        "alone_p50_seconds": round(baseline_p50, 4),
        "concurrent_searches": len(during),
        "concurrent_search_errors": sum(not s.is_ok for s in during),
        "worst_concurrent_seconds": round(worst, 4) if worst is not None else None,
        "delay_seconds": round(delay, 4) if delay is not None else None,
        "own_passed": own_passed,
        "delay_passed": delay_passed,
        "passed": own_passed is not False and delay_passed is not False and attempt.is_ok,
        **({"detail": detail} if detail else {}),
    }


def worst_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per input and route, the attempt with the longest own time, merged with the largest
    delay any attempt caused (repeats are there to catch the worst, not to average it)."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["input"], row["route"])
        seen = merged.get(key)
        if seen is None:
            merged[key] = {**row, "attempts": 1}
            continue
        worse = row if row["own_seconds"] > seen["own_seconds"] else seen
        delays = [d for d in (row["delay_seconds"], seen["delay_seconds"]) if d is not None]
        delay = max(delays) if delays else None
        merged[key] = {
            **worse,
            "attempts": seen["attempts"] + 1,
            "delay_seconds": delay,
            "delay_passed": delay <= DELAY_TARGET_SECONDS if delay is not None else None,
            "passed": seen["passed"] and row["passed"],
        }
    return list(merged.values())


def judge(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The two targets over every attempt: passed True/False, None when nothing was measured."""
    own = [r for r in rows if r["own_passed"] is not None]
    delays = [r for r in rows if r["delay_passed"] is not None]

    def failures(selected: Sequence[dict[str, Any]], key: str) -> list[str]:
        return sorted({f"{r['input']} {r['route']}" for r in selected if r[key] is False})

    return [
        {
            "target": f"no request takes more than {OWN_TARGET_SECONDS:g} s itself (and none fails)",
            "passed": all(r["own_passed"] for r in own) if own else None,
            "failed": failures(own, "own_passed"),
        },
        {
            "target": f"no request (nor an extraction) delays a concurrent search by more than "
            f"{DELAY_TARGET_SECONDS * 1000:.0f} ms over its p50 alone",
            "passed": all(r["delay_passed"] for r in delays) if delays else None,
            "failed": failures(delays, "delay_passed"),
        },
    ]


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _verdict(passed: bool | None) -> str:
    return {True: "yes", False: "NO", None: "-"}[passed]


def format_report(report: dict[str, Any]) -> str:
    """The worst attempt of each input x route as a plain-text table, then the targets."""
    settings = report["settings"]
    base = report["baseline"]
    lines = [
        f"Hostile inputs: {settings['content_bytes']:,} bytes of content "
        f"(server limit {settings['server_content_bytes']:,}), {settings['web_workers']} web "
        f"worker(s), extraction in a Celery worker, {settings['repeat']} attempt(s) per route",
        f"code: {report['code']['commit']}"
        f"{' + uncommitted changes' if report['code']['uncommitted_changes'] else ''}; "
        f"machine: {report['machine']['cpus']} CPUs, load average before "
        f"{report['machine']['load_average']}, after {report['machine']['load_average_after']} "
        "(a busy machine inflates the delays)",
        f"concurrent search alone: p50 {_seconds(base['p50_seconds'])}, worst "
        f"{_seconds(base['max_seconds'])} over {base['n']} searches before the first input",
        "own: the hostile request's time (worst attempt); worst search: the slowest search in "
        "flight meanwhile; alone: the search p50 alone just before the input; delay: worst "
        "search minus alone",
        "",
        f"{'input':<16} {'route':<15} {'status':>6} {'own':>10} {'worst search':>13} "
        f"{'alone':>7} {'delay':>10} {'own<=1s':>7} {'delay<=100ms':>12}",
    ]
    for row in report["rows"]:
        status = str(row["status"]) if row["status"] else (row["error"] or "-")
        lines.append(
            f"{row['input']:<16} {row['route']:<15} {status:>6} {_seconds(row['own_seconds']):>10} "
            f"{_seconds(row['worst_concurrent_seconds']):>13} "
            f"{_seconds(row['alone_p50_seconds']):>7} {_seconds(row['delay_seconds']):>10} "
            f"{_verdict(row['own_passed']):>7} {_verdict(row['delay_passed']):>12}"
        )
    for skipped in report["skipped"]:
        lines.append(f"skipped (time cap): {skipped}")
    if report["restarts"]:
        lines.append(f"server restarted after a timeout {len(report['restarts'])} time(s)")
    lines.append("")
    for target in report["targets"]:
        verdict = {True: "PASS", False: "FAIL", None: "n/a "}[target["passed"]]
        failed = f" ({len(target['failed'])} failed: {', '.join(target['failed'][:8])}" + (
            " …)" if len(target["failed"]) > 8 else ")"
        )
        lines.append(f"  {verdict}  {target['target']}{failed if target['failed'] else ''}")
    return "\n".join(lines) + "\n"
