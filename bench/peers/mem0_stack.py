"""What the Mem0 side of the peer benchmark runs on: its own virtualenv, its worker process,
its database on the embedded PostgreSQL. Nothing here imports Django or Mem0.
"""

from __future__ import annotations

import json
import os
import resource
import select
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "mem0_worker.py"
VENV = REPO / ".data" / "peers" / "mem0-venv"
# torch first, alone: any other spec pulls a multi-GB CUDA build (as in the Makefile's setup).
TORCH = "torch==2.13.0"
# Mem0 as measured by hand in issue 34; the model code at the versions of the project's venv,
# so both sides run the same tokenizer and transformer code for the MiniLM weights.
PEER_REQUIREMENTS = (
    "mem0ai==2.2.1",
    "psycopg[binary,pool]==3.3.9",
    "psycopg-pool==3.3.3",
    "sentence-transformers==6.3.0",
    "transformers==5.25.0",
    "tokenizers==0.23.3",
)
MEM0_DATABASE = "memoryhub_peers_mem0"
MEM0_COLLECTION = "mem0_bench"
# A bound on every answer of the worker: one command stores at most one conversation's turns.
COMMAND_TIMEOUT_SECONDS = 900
INSTALL_TIMEOUT_SECONDS = 1800


def ensure_venv(venv: Path = VENV) -> Path:
    """Make Mem0's virtualenv unless it holds these requirements already; return its python."""
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    wanted = "\n".join((TORCH, *PEER_REQUIREMENTS)) + "\n"
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == wanted:
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    steps = (
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--quiet", TORCH],
        [str(python), "-m", "pip", "install", "--quiet", *PEER_REQUIREMENTS],
    )
    for step in steps:
        subprocess.run(step, check=True, timeout=INSTALL_TIMEOUT_SECONDS)  # noqa: S603  # Ours.
    stamp.write_text(wanted, encoding="utf-8")
    return python


def worker_environment(mem0_dir: Path) -> dict[str, str]:
    """The worker's whole environment: offline, telemetry off, Mem0's files in a temp folder."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(mem0_dir),
        "MEM0_DIR": str(mem0_dir),
        "MEM0_TELEMETRY": "False",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(mem0_dir / "huggingface"),
    }


class Mem0Worker:
    """The Mem0 process: one JSON command in, one JSON answer out, each with a time bound."""

    def __init__(self, *, python: Path, mem0_dir: Path) -> None:
        self.log_path = mem0_dir / "worker.log"
        self._log: IO[bytes] = self.log_path.open("wb")
        # -I: the script's folder (which holds this mem0.py) must not shadow the mem0 package.
        self.process = subprocess.Popen(  # noqa: S603  # Our venv's python and our script.
            [str(python), "-I", str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=worker_environment(mem0_dir),
            text=True,
        )

    def call(self, op: str, **arguments: Any) -> dict[str, Any]:
        if self.process.stdin is None or self.process.stdout is None:
            raise RuntimeError("Mem0's worker has no pipes")
        self.process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], COMMAND_TIMEOUT_SECONDS)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            raise RuntimeError(f"Mem0's worker gave no answer to {op!r}: {self._log_tail()}")
        answer: dict[str, Any] = json.loads(line)
        if not answer.pop("ok"):
            raise RuntimeError(f"Mem0's worker failed {op!r}: {answer['error']}")
        return answer

    def stop(self) -> None:
        if self.process.poll() is None and self.process.stdin is not None:
            try:
                self.process.stdin.write('{"op": "stop"}\n')
                self.process.stdin.close()
                self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(timeout=30)
        self._log.close()

    def _log_tail(self) -> str:
        self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-2000:]


def recreate_database(admin_url: str, name: str) -> None:
    """Drop Mem0's bench database if it exists and create it empty, with pgvector."""
    if name != MEM0_DATABASE:  # A guard on the DROP below.
        raise ValueError(f"refusing to drop {name!r}")
    with psycopg.connect(admin_url, autocommit=True) as connection:
        drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        connection.execute(drop)
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_database(admin_url: str, name: str) -> None:
    if name != MEM0_DATABASE:
        raise ValueError(f"refusing to drop {name!r}")
    with psycopg.connect(admin_url, autocommit=True) as connection:
        drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        connection.execute(drop)


def vector_indexes(url: str) -> list[str]:
    """The approximate (HNSW, IVFFlat) indexes of a database: what its searches may go through."""
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT indexname FROM pg_indexes WHERE indexdef ~* 'using (hnsw|ivfflat|diskann)'"
        ).fetchall()
    return sorted(row[0] for row in rows)


def search_plan_indexes(url: str, *, collection: str, user: str) -> list[str]:
    """The indexes PostgreSQL's plan for Mem0's vector search of one user reads (its query as
    mem0/vector_stores/pgvector.py writes it): an HNSW index here means the user filter is
    applied to the index's candidates, after its scan."""
    vector = "[" + ",".join(["0.05"] * 384) + "]"
    query = sql.SQL(
        "EXPLAIN (FORMAT JSON) SELECT id, vector <=> %s::vector AS distance, payload FROM {} "
        "WHERE payload->>'user_id' = %s ORDER BY distance LIMIT 60"
    ).format(sql.Identifier(collection))
    with psycopg.connect(url) as connection:
        row = connection.execute(query, (vector, user)).fetchone()
    return sorted(_index_names(row[0][0]["Plan"])) if row else []


def _index_names(node: dict[str, Any]) -> set[str]:
    names = {node["Index Name"]} if "Index Name" in node else set()
    for child in node.get("Plans", []):
        names |= _index_names(child)
    return names


def server_versions(url: str) -> dict[str, str]:
    with psycopg.connect(url) as connection:
        postgres = connection.execute("SHOW server_version").fetchone()
        pgvector = connection.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        connection.execute("SELECT '[1]'::vector")  # Loads pgvector, which defines its settings.
        ef_search = connection.execute("SELECT current_setting('hnsw.ef_search', true)").fetchone()
    return {
        "postgresql": postgres[0] if postgres else "",
        "pgvector": pgvector[0] if pgvector else "",
        "hnsw.ef_search": ef_search[0] if ef_search else "",
    }


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
