"""What the load benchmark watches beside its own requests: the server connections to the load
database, sampled on a thread of their own, and the CPU the web process, the bench and the
whole machine used (the machine is shared: the rest is PostgreSQL and everyone else).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def count_connections(conn: psycopg.Connection[Any], database: str) -> tuple[int, int]:
    """Client connections to the load database (the asking one excluded), and other backends.

    Only client backends take a max_connections slot, and only they come from the pools; an
    autovacuum worker on the load database (after the seeding, say) shows in pg_stat_activity
    with its datname too.
    """
    row = conn.execute(
        "SELECT count(*) FILTER (WHERE backend_type = 'client backend'),"
        " count(*) FILTER (WHERE backend_type <> 'client backend')"
        " FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        [database],
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


class ConnectionMonitor:
    """Samples the load database's server connections every `interval` seconds, on a thread.

    From a connection to the admin database, so it never counts itself; a spike shorter than
    the interval can be missed.
    """

    def __init__(self, admin_url: str, database: str, interval: float = 0.2) -> None:
        self.admin_url = admin_url
        self.database = database
        self.interval = interval
        self.samples: list[tuple[float, int]] = []  # (monotonic time, client connections)
        self.other_backends_peak = 0
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="connection-monitor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = psycopg.connect(self.admin_url, autocommit=True, connect_timeout=5)
                clients, others = count_connections(conn, self.database)
                self.samples.append((time.monotonic(), clients))
                self.other_backends_peak = max(self.other_backends_peak, others)
            except psycopg.Error:
                self.failures += 1
                if conn is not None:
                    conn.close()
                conn = None
            self._stop.wait(self.interval)
        if conn is not None:
            conn.close()

    def peak(self, since: float = 0.0) -> int:
        return max((n for at, n in list(self.samples) if at >= since), default=0)

    def latest(self) -> int:
        return self.samples[-1][1] if self.samples else 0


def _cpu_seconds(stat: Path) -> tuple[int, float] | None:
    """A process's group and user + system CPU seconds (proc(5)), or None once it has ended."""
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[2]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _group_cpu_seconds(group: int) -> float:
    """CPU seconds of the live processes of a process group."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        reading = _cpu_seconds(stat)
        if reading is not None and reading[0] == group:
            total += reading[1]
    return total


def _backend_cpu_seconds(admin_url: str, database: str) -> dict[int, float]:
    """CPU seconds of each client backend serving the load database, by pid."""
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'",
            [database],
        ).fetchall()
    readings = {pid: _cpu_seconds(Path(f"/proc/{pid}/stat")) for (pid,) in rows}
    return {pid: reading[1] for pid, reading in readings.items() if reading}


def _machine_busy_seconds() -> float:
    """CPU seconds all cores spent not idle since boot (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle, iowait = values[3], values[4]
    return (sum(values[:8]) - idle - iowait) / CLOCK_TICKS


@dataclass(frozen=True)
class CpuReading:
    """CPU seconds used so far by the web process, its PostgreSQL backends, this bench and the
    whole machine (Linux /proc; the backends only if PostgreSQL runs on this machine)."""

    at: float
    web: float
    postgres: dict[int, float]
    bench: float
    machine: float

    @classmethod
    def now(cls, *, web_group: int, admin_url: str, database: str) -> CpuReading:
        own = os.times()
        return cls(
            at=time.monotonic(),
            web=_group_cpu_seconds(web_group),
            postgres=_backend_cpu_seconds(admin_url, database),
            bench=own.user + own.system,
            machine=_machine_busy_seconds(),
        )

    def cores_since(self, start: CpuReading) -> dict[str, float]:
        """Cores used on average since `start`; "others" is everything else on the machine."""
        seconds = max(self.at - start.at, 1e-9)
        # A backend opened since `start` used all its CPU since; one closed meanwhile is missed.
        postgres = sum(cpu - start.postgres.get(pid, 0.0) for pid, cpu in self.postgres.items())
        cores = {
            "web": (self.web - start.web) / seconds,
            "postgres": postgres / seconds,
            "bench": (self.bench - start.bench) / seconds,
            "machine": (self.machine - start.machine) / seconds,
        }
        cores["others"] = max(
            0.0, cores["machine"] - cores["web"] - cores["postgres"] - cores["bench"]
        )
        return {name: round(value, 2) for name, value in cores.items()}
