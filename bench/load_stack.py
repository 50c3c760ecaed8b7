"""What the load benchmark drives: a database of its own, seeded agents and end users, and the
production web process (memoryhub/process_model.py), started and always stopped.

Only loopback addresses; every wait has a bound. Nothing here touches the development database:
the benchmark's database is dropped and created again on each run.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlparse, urlunparse

import psycopg
from psycopg import sql

from memoryhub.crypto import generate_master_key_entry
from memoryhub.process_model import web_command, worker_command

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
WORKSPACE = "load"
MODE = "personal"
# Nothing the mix does enqueues much; a Redis database of its own keeps it apart all the same.
BROKER_URL = "redis://127.0.0.1:6379/13"
# A guard on the DROP DATABASE below: it only ever drops a database named like this.
DATABASE_PREFIX = "memoryhub_load"

PEOPLE = ("Ana", "Ben", "Chloé", "Dev", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jun")
FACTS = (
    ("likes to eat", ("ramen", "tacos", "lentil soup", "sushi", "paella", "dumplings")),
    ("plays", ("the cello", "chess", "tennis", "the piano", "football", "go")),
    ("travelled to", ("Lisbon", "Kyoto", "Montreal", "Nairobi", "Oslo", "Lima")),
    ("works on", ("billing", "a mobile app", "a data pipeline", "search", "a compiler", "a game")),
    ("is allergic to", ("peanuts", "cats", "pollen", "penicillin", "shellfish", "dust")),
)


def memory_texts(count: int) -> list[str]:
    """`count` distinct, deterministic sentences about a handful of people."""
    combos = [f"{p} {verb} {thing}" for verb, things in FACTS for thing in things for p in PEOPLE]
    return [
        f"{combos[n % len(combos)]} (noted in {2010 + n // len(combos)})." for n in range(count)
    ]


def queries() -> list[str]:
    """Questions the seeded memories answer, cycled through by search and context."""
    return [f"What does {person} know about {verb}?" for verb, _ in FACTS for person in PEOPLE]


@dataclass(frozen=True)
class LoadAgent:
    """One simulated agent: its own key and its own end user."""

    index: int
    key: str
    user: str  # The end user's external id.


def base_database_url() -> str:
    """The server the development settings use: DATABASE_URL, or the embedded PostgreSQL."""
    url = os.environ.get("DATABASE_URL")
    if url:
        return url
    from memoryhub.embedded_db import ensure_embedded_postgres

    data_dir = Path(os.environ.get("MEMORYHUB_DATA_DIR") or REPO / ".data")
    return ensure_embedded_postgres(data_dir / "postgres")


def database_url(base_url: str, name: str) -> str:
    """The same server, another database."""
    return urlunparse(urlparse(base_url)._replace(path="/" + name))


def _check_name(name: str) -> None:
    if not name.startswith(DATABASE_PREFIX) or not name.replace("_", "").isalnum():
        raise ValueError(f"the load database must be named {DATABASE_PREFIX}…, got {name!r}")


def recreate_database(admin_url: str, name: str) -> None:
    """Drop the load database if it exists (closing its connections) and create it empty."""
    _check_name(name)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_database(admin_url: str, name: str) -> None:
    _check_name(name)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def stack_environment(
    *, database_url: str, pool_max_size: int, rate_limit_per_minute: int
) -> dict[str, str]:
    """Settings of the process under load: DEBUG off, secrets made for this run only."""
    return {
        "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "MEMORYHUB_MASTER_KEYS": generate_master_key_entry("load"),
        "MEMORYHUB_AUDIT_KEY": secrets.token_urlsafe(32),
        "DATABASE_URL": database_url,
        "DATABASE_POOL_MAX_SIZE": str(pool_max_size),
        "ALLOWED_HOSTS": HOST,
        # The bench plays the TLS proxy: it sends X-Forwarded-Proto: https on every request.
        "SECURE_PROXY_SSL_HEADER": "true",
        "MEMORYHUB_RATE_LIMIT_PER_MINUTE": str(rate_limit_per_minute),
        "CELERY_BROKER_URL": BROKER_URL,
    }


def migrate(environment: Mapping[str, str]) -> None:
    """`manage.py migrate` on the load database, as a process of its own."""
    result = subprocess.run(  # Our own interpreter and arguments.
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=REPO,
        env={**os.environ, **environment},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"migrate failed:\n{result.stdout}\n{result.stderr}")


def seed(*, environment: Mapping[str, str], agents: int, memories_per_user: int) -> list[LoadAgent]:
    """Create the workspace, the agents with their keys, and an end user with memories each.

    Runs Django in this process, on the load database, through the real services (encryption,
    blind index, audit). Call it once: Django is set up for the rest of the process.
    """
    os.environ.update(environment)
    # No pool here: an idle pooled connection of this process would count as the server's.
    os.environ["DATABASE_POOL_MAX_SIZE"] = "0"
    import django

    django.setup()
    from django.db import connections

    from bench.memoryhub_retriever import CachedEmbedder
    from memoryhub.actors import Actor
    from memoryhub.embeddings import default_embedder
    from memoryhub.services.agents import create_agent, get_or_create_workspace
    from memoryhub.services.memories import NewMemory, remember_many
    from memoryhub.services.users import create_user, ensure_mode

    # Every user holds the same sentences (each encrypted under their own key): embed them once.
    embedder = CachedEmbedder(default_embedder())
    actor = Actor.system("bench-load")
    texts = memory_texts(memories_per_user)
    workspace = get_or_create_workspace(slug=WORKSPACE)
    seeded = []
    try:
        for index in range(agents):
            _, issued = create_agent(workspace=workspace, name=f"load-agent-{index}")
            user = create_user(workspace=workspace, external_id=f"load-user-{index}")
            mode = ensure_mode(user=user, slug=MODE)
            for start in range(0, len(texts), 100):
                items = [NewMemory(kind="fact", content=t) for t in texts[start : start + 100]]
                remember_many(user=user, mode=mode, items=items, actor=actor, embedder=embedder)
            seeded.append(LoadAgent(index=index, key=issued.raw_key, user=f"load-user-{index}"))
    finally:
        connections.close_all()
    return seeded


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    retry_after: str | None
    seconds: float

    def json(self) -> Any:
        return json.loads(self.body)


class ApiClient:
    """One keep-alive HTTP connection to the agent API, with one agent's key."""

    def __init__(self, *, port: int, key: str, timeout: float) -> None:
        self.port = port
        self.timeout = timeout
        self.headers = {
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "X-Forwarded-Proto": "https",
        }
        self._connection: http.client.HTTPConnection | None = None

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, object] | None = None,
        query: Mapping[str, str] | None = None,
    ) -> Reply:
        """Send one request and read the whole answer; raise OSError/HTTPException on failure."""
        if self._connection is None:
            self._connection = http.client.HTTPConnection(HOST, self.port, timeout=self.timeout)
        target = f"{path}?{urlencode(query)}" if query else path
        payload = json.dumps(body).encode() if body is not None else None
        started = time.perf_counter()
        try:
            self._connection.request(method, target, body=payload, headers=self.headers)
            response = self._connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            self.close()  # The next request starts on a fresh connection.
            raise
        seconds = time.perf_counter() - started
        if response.will_close:
            self.close()
        return Reply(response.status, data, response.getheader("Retry-After"), seconds)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
    return port


@dataclass(frozen=True)
class WebServer:
    """The production web command (uvicorn, `workers` processes) in a process group of its own."""

    process: subprocess.Popen[bytes]
    port: int
    workers: int
    log: Path

    def stop(self) -> None:
        """SIGTERM to uvicorn (it stops its workers gracefully), then SIGKILL what lingers."""
        stop_group(self.process)

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def stop_group(process: subprocess.Popen[bytes], *, grace: float = 30) -> None:
    """SIGTERM to a process started in a group of its own, then SIGKILL the whole group."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    # Children of a killed supervisor live on as orphans in its group: take them too.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def start_web(*, environment: Mapping[str, str], workers: int, log: Path) -> WebServer:
    """Start `web_command(production=True)` on a free loopback port."""
    port = free_port()
    argv = web_command(host=HOST, port=port, workers=workers, production=True)
    env = {**os.environ, **environment, "WEB_CONCURRENCY": str(workers)}
    with log.open("wb") as output:
        process = subprocess.Popen(  # noqa: S603  # Our own interpreter and arguments.
            argv,
            cwd=REPO,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return WebServer(process=process, port=port, workers=workers, log=log)


def wait_until_ready(server: WebServer, agent: LoadAgent, *, timeout: float = 120) -> None:
    """Wait until an authenticated list answers 200: no answer or 503 means wait, else fail."""
    client = ApiClient(port=server.port, key=agent.key, timeout=10)
    deadline = time.monotonic() + timeout
    try:
        while True:
            if server.process.poll() is not None:
                raise RuntimeError(f"the web server exited:\n{server.log_tail()}")
            try:
                reply = client.request(
                    "GET", "/api/v1/memories", query={"user": agent.user, "mode": MODE}
                )
            except (OSError, http.client.HTTPException):
                reply = None
            if reply is not None and reply.status == 200:
                return
            if reply is not None and reply.status in {301, 302, 308}:
                raise RuntimeError("the server redirects to HTTPS: X-Forwarded-Proto is ignored")
            if reply is not None and reply.status != 503:  # Only "not yet" is worth waiting for.
                raise RuntimeError(f"the server answers {reply.status}:\n{server.log_tail()}")
            if time.monotonic() > deadline:
                status = reply.status if reply else "no answer"
                raise RuntimeError(
                    f"not ready after {timeout:.0f} s ({status}):\n{server.log_tail()}"
                )
            time.sleep(0.25)
    finally:
        client.close()


def scan_log(log: Path) -> dict[str, Any]:
    """Tracebacks and "database unavailable" warnings the server logged, with the first trace."""
    lines = log.read_text(errors="replace").splitlines()
    starts = [n for n, line in enumerate(lines) if line.startswith("Traceback")]
    first = lines[max(0, starts[0] - 2) : starts[0] + 60] if starts else []
    return {
        "tracebacks": len(starts),
        "database_unavailable_warnings": sum("database unavailable" in line for line in lines),
        "first_traceback": "\n".join(first),
    }


@dataclass(frozen=True)
class CeleryWorker:
    """The production Celery worker command, in a process group of its own."""

    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        stop_group(self.process, grace=10)


def start_worker(*, environment: Mapping[str, str], concurrency: int, log: Path) -> CeleryWorker:
    """Start `worker_command` on the environment's broker, dropping what waits in its queue."""
    argv = worker_command(concurrency=concurrency)
    # No gossip, mingle or heartbeat: one worker alone on its broker has no one to talk to.
    argv += ["--without-gossip", "--without-mingle", "--without-heartbeat", "--purge"]
    with log.open("ab") as output:
        process = subprocess.Popen(  # noqa: S603  # Our own interpreter and arguments.
            argv,
            cwd=REPO,
            env={**os.environ, **environment},
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return CeleryWorker(process=process, log=log)
