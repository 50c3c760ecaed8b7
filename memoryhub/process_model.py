"""The processes MemoryHub runs as: web workers, a Celery worker and one beat.

`manage.py runstack` starts them for development, `runstack --production` as a deployment runs
them (README, "Production"); the load and fault benchmarks start the very same command lines.
"""

from __future__ import annotations

import http.client
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path


def web_command(*, host: str, port: int, workers: int, production: bool) -> list[str]:
    """Uvicorn serving the ASGI app (Django and MCP); with several workers it restarts dead ones."""
    # uvicorn's own command line, but binding the workers' socket so that TCP_NODELAY holds.
    argv = [sys.executable, "-m", "memoryhub.web_server", "memoryhub.asgi:application"]
    argv += ["--host", host, "--port", str(port)]
    # libuv's event loop and the C HTTP parser: named, so a missing install fails at start
    # instead of falling back to the pure-Python ones (12% more requests per second, measured).
    argv += ["--loop", "uvloop", "--http", "httptools"]
    if production:
        # Every worker answers any request (stateless MCP, PostgreSQL rate limits and sessions,
        # a shared cache for allauth's login limits: runstack refuses a per-process one).
        # Proxy headers are read only from a proxy on this machine.
        argv += ["--workers", str(workers), "--proxy-headers", "--forwarded-allow-ips", "127.0.0.1"]
        argv += ["--timeout-graceful-shutdown", "20", "--no-server-header", "--no-access-log"]
    return argv


def worker_command(*, concurrency: int) -> list[str]:
    """A Celery worker: prefork children, each with its own database pool."""
    argv = [sys.executable, "-m", "celery", "-A", "memoryhub", "worker", "-l", "info"]
    return [*argv, "-c", str(concurrency)]


def beat_command() -> list[str]:
    """Celery beat: exactly one per deployment, or periodic tasks run twice."""
    return [sys.executable, "-m", "celery", "-A", "memoryhub", "beat", "-l", "info"]


READINESS_PATH = "/readyz"


def wait_until_ready(
    *, host: str, port: int, timeout: float, is_alive: Callable[[], bool] = lambda: True
) -> tuple[bool, dict[str, object]]:
    """Poll the web server's /readyz until it answers 200, `timeout` seconds pass or it dies.

    Returns whether it became ready and its last readiness body ({} if it never answered).
    """
    deadline = time.monotonic() + timeout
    body: dict[str, object] = {}
    while True:
        connection = http.client.HTTPConnection(host, port, timeout=5)
        try:
            connection.request("GET", READINESS_PATH)
            response = connection.getresponse()
            body = json.loads(response.read() or b"{}")
            if response.status == 200:
                return True, body
        except (OSError, http.client.HTTPException, ValueError):
            pass  # Not listening yet, or restarting a worker: ask again.
        finally:
            connection.close()
        if time.monotonic() >= deadline or not is_alive():
            return False, body
        time.sleep(0.5)


def empty_metrics_dir(directory: Path) -> Path:
    """Create or empty the web workers' metric folder (prometheus_client's multiprocess mode).

    Counters start from zero with the processes, as a scraper expects after a restart.
    """
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink()
    return directory
