"""The fault suite's stack: real processes on loopback, started once for tests/fault.

A throwaway PostgreSQL cluster (tests/pg_clusters.py) holding a migrated database, a Redis
server of its own, and the production web server (`process_model.web_command`: uvicorn
supervising two workers, DEBUG off) on them. The tests stop, start and kill these, so none
of them is the shared development server; all are stopped after the last test, also on failure.
"""

from __future__ import annotations

import base64
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest
import redis

from memoryhub.process_model import web_command
from tests.fault.client import call
from tests.fault.load import Load, running
from tests.pg_clusters import PostgresCluster, free_port, temporary_cluster

REPO = Path(__file__).resolve().parents[2]
WEB_WORKERS = 2
# The outer environment's own database, broker, LLM and MemoryHub settings stay out.
OUTER_PREFIXES = ("DATABASE_", "CELERY_", "CACHE_", "ANTHROPIC_", "MEMORYHUB_", "DJANGO_")


_MEASUREMENTS: list[str] = []


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Note a measurement (how long recovery took, say) for the summary at the end of the run."""

    def note(line: str) -> None:
        _MEASUREMENTS.append(f"{request.node.name}: {line}")

    return note


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _MEASUREMENTS:
        terminalreporter.section("fault suite measurements")
        for line in _MEASUREMENTS:
            terminalreporter.write_line(line)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> float:
    """Poll until `condition` holds; return the seconds it took. Fails past `timeout`."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"gave up waiting for {what} after {timeout:.0f} s")
        time.sleep(0.1)
    return time.monotonic() - started


class RedisServer:
    """A redis-server of the test's own on a fixed port: stopped and started again on it."""

    def __init__(self, port: int, log: Path) -> None:
        self.port = port
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        if shutil.which("redis-server") is None:
            pytest.fail("the fault suite needs redis-server (deselect it with -m 'not fault')")
        # Nothing kept on disk: a restarted broker is empty, as after losing its data.
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        argv += ["--save", "", "--appendonly", "no", "--daemonize", "no"]
        self.process = subprocess.Popen(  # noqa: S603  # Fixed arguments.
            argv, stdout=self.log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_for(self.is_up, "Redis to answer", timeout=30)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)

    def is_up(self) -> bool:
        assert self.process is not None and self.process.poll() is None, self.log.read_text()
        try:
            return bool(self.client().ping())
        except redis.ConnectionError:
            return False

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)


class WebServer:
    """The production web command line: a uvicorn supervisor restarting dead workers."""

    def __init__(self, port: int, env: dict[str, str], log: Path) -> None:
        self.port = port
        self.env = env
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, key: str) -> None:
        argv = web_command(host="127.0.0.1", port=self.port, workers=WEB_WORKERS, production=True)
        self.process = subprocess.Popen(  # noqa: S603  # Our own interpreter and arguments.
            argv,
            cwd=REPO,
            env=self.env,
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for(lambda: self._answers(key), "the web server to answer", timeout=120)
        wait_for(
            lambda: len(self.worker_pids()) == WEB_WORKERS, "both web workers to start", timeout=60
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)  # The supervisor and its workers.
            self.process.wait(timeout=30)

    def worker_pids(self) -> set[int]:
        """The worker processes the supervisor runs now (not its resource tracker)."""
        assert self.process is not None
        children = psutil.Process(self.process.pid).children()
        return {child.pid for child in children if _is_spawned_worker(child)}

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-5000:]

    def _answers(self, key: str) -> bool:
        assert self.process is not None and self.process.poll() is None, self.log_text()
        try:
            reply = call(self.port, "GET", "/api/v1/users/nobody", key=key, timeout=10)
        except OSError:
            return False
        return reply.status == 404


def _is_spawned_worker(process: psutil.Process) -> bool:
    try:
        return "spawn_main" in " ".join(process.cmdline())
    except psutil.NoSuchProcess:
        return False


@dataclass
class Stack:
    cluster: PostgresCluster
    database_url: str
    broker: RedisServer
    web: WebServer
    env: dict[str, str]
    key: str = ""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def port(self) -> int:
        return self.web.port

    def manage(self, *args: str, env: dict[str, str] | None = None) -> str:
        """Run a manage.py command with the stack's settings; return what it printed."""
        result = subprocess.run(  # noqa: S603  # Our own interpreter and arguments.
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert result.returncode == 0, f"manage.py {args[0]} failed:\n{result.stderr[-3000:]}"
        return result.stdout

    def create_user(self, external_id: str) -> str:
        reply = call(
            self.port, "POST", "/api/v1/users", key=self.key, body={"external_id": external_id}
        )
        assert reply.status in {200, 201}, reply.body
        return external_id

    def stored_memories(self, user: str) -> dict[str, str]:
        """Every active memory of the user, id -> content, read through the API page by page."""
        stored: dict[str, str] = {}
        cursor = ""
        while True:
            path = f"/api/v1/memories?user={user}&limit=200" + (
                f"&cursor={cursor}" if cursor else ""
            )
            reply = call(self.port, "GET", path, key=self.key)
            assert reply.status == 200, reply.body
            page = reply.json()
            stored.update({item["id"]: item["content"] for item in page["items"]})
            cursor = page["next_cursor"]
            if not cursor:
                return stored

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Read the stack's database directly, as an operator would."""
        with psycopg.connect(self.database_url, autocommit=True) as connection:
            return connection.execute(query, params).fetchall()  # type: ignore[arg-type]


def _stack_env(database_url: str, broker_url: str, data_dir: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith(OUTER_PREFIXES)}
    master_key = base64.b64encode(secrets.token_bytes(32)).decode()
    return {
        **env,
        "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "MEMORYHUB_MASTER_KEYS": f"fault:{master_key}",
        "MEMORYHUB_AUDIT_KEY": secrets.token_urlsafe(32),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_PROXY_SSL_HEADER": "true",
        "DATABASE_URL": database_url,
        "DATABASE_POOL_TIMEOUT_SECONDS": "2",
        "CELERY_BROKER_URL": broker_url,
        "MEMORYHUB_DATA_DIR": str(data_dir),
        "MEMORYHUB_RATE_LIMIT_PER_MINUTE": "1000000",
    }


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    logs = tmp_path_factory.mktemp("fault")
    with temporary_cluster() as cluster, ExitStack() as cleanup:
        database_url = cluster.create_database("memoryhub")
        broker = RedisServer(free_port(), logs / "redis.log")
        cleanup.callback(broker.stop)
        broker.start()
        env = _stack_env(database_url, broker.url, logs / "data")
        web = WebServer(free_port(), env, logs / "web.log")
        stack = Stack(cluster, database_url, broker, web, env)
        cleanup.callback(_stop_processes, stack.processes)
        stack.manage("migrate", "--no-input", "-v", "0")
        stack.key = stack.manage("create_agent", "fault-agent", "--workspace", "fault").split()[-1]
        cleanup.callback(web.stop)
        web.start(stack.key)
        _warm_up(stack)
        yield stack


def _stop_processes(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def _warm_up(stack: Stack) -> None:
    """Load the embedding model in the web workers (a few seconds each) before the faults."""
    user = stack.create_user("warm-up")
    load = Load(stack.port, stack.key, user, threads=4)
    started = time.monotonic()
    with running(load):
        wait_for(lambda: load.successes_since(started) >= 12, "warm-up writes", timeout=180)
