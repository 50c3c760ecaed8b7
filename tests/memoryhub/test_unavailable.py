"""A web process whose one pooled connection is taken answers 503 with Retry-After, then recovers.

The server is a real uvicorn process (the production command line) on the test database, with a
pool of one connection and a one-second wait. The test holds an exclusive lock on a table the
request needs (the rate-limit windows for the API, the sessions for a page) from its own
connection, so the first request blocks inside the database while holding the pool's only
connection; the second finds the pool exhausted.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

from memoryhub.process_model import web_command
from tests import factories
from tests.pg_clusters import free_port
from tests.processes import current_database_url, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]


def _get(
    port: int, path: str, key: str = "", cookie: str = ""
) -> tuple[int, http.client.HTTPMessage, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if cookie:
        headers["Cookie"] = cookie
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        # HTTPMessage: header names are case-insensitive (httptools sends them lower-case).
        return response.status, response.headers, response.read()
    finally:
        conn.close()


@pytest.fixture
def one_connection_server(tmp_path: Path) -> Iterator[int]:
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": current_database_url(),
        "DATABASE_POOL_MAX_SIZE": "1",
        "DATABASE_POOL_MIN_SIZE": "1",
        "DATABASE_POOL_TIMEOUT_SECONDS": "1",
        "SECRET_KEY": settings.SECRET_KEY,
        "MEMORYHUB_MASTER_KEYS": settings.MEMORYHUB_MASTER_KEYS,
        "MEMORYHUB_AUDIT_KEY": settings.MEMORYHUB_AUDIT_KEY,
        "CELERY_BROKER_URL": "memory://",
    }
    log = tmp_path / "web.log"
    argv = web_command(host="127.0.0.1", port=port, workers=1, production=False)
    process = subprocess.Popen(  # noqa: S603  # Our own interpreter and arguments.
        argv,
        cwd=REPO,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )

    def is_up() -> bool:
        assert process.poll() is None, log.read_text(errors="replace")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    try:
        wait_for(is_up, "the web server to listen", timeout=60, interval=0.1)
        yield port
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _first_request_waits_on_a_lock() -> bool:
    with psycopg.connect(current_database_url(), autocommit=True) as probe:
        row = probe.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE wait_event_type = 'Lock' AND datname = current_database()"
        ).fetchone()
    return bool(row and row[0] >= 1)


def _while_the_pool_is_taken(
    table: str,
    take: Callable[[], int],
    then: Callable[[], tuple[int, http.client.HTTPMessage, bytes]],
) -> tuple[int, tuple[int, http.client.HTTPMessage, bytes]]:
    """Block `take` on a lock of `table` (it holds the only connection), then call `then`."""
    first: list[int] = []
    with psycopg.connect(current_database_url(), autocommit=False) as holder:
        holder.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        blocked = threading.Thread(target=lambda: first.append(take()))
        blocked.start()
        wait_for(
            _first_request_waits_on_a_lock,
            "the first request to block in PostgreSQL",
            timeout=60,
            interval=0.1,
        )
        second = then()
        holder.rollback()  # Releases the lock: the first request goes on.
    blocked.join(timeout=30)
    return first[0], second


def test_an_exhausted_pool_answers_503_with_retry_after_then_recovers(one_connection_server):
    port = one_connection_server
    user = factories.make_user(external_id="dana")
    _, key = factories.make_agent(user.workspace)
    path = "/api/v1/memories?user=dana&mode=personal"
    assert _get(port, path, key)[0] == 200  # The pool's one connection is open and works.

    first, (status, headers, body) = _while_the_pool_is_taken(
        "memoryhub_ratelimitwindow",
        take=lambda: _get(port, path, key)[0],
        then=lambda: _get(port, path, key),
    )

    assert status == 503
    assert json.loads(body)["code"] == "service_unavailable"
    assert int(headers["Retry-After"]) >= 1
    assert first == 200
    assert _get(port, path, key)[0] == 200


def test_a_page_that_finds_the_pool_exhausted_answers_a_503_page(one_connection_server, client):
    port = one_connection_server
    user = factories.make_user(email="dana@example.com")
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"

    first, (status, headers, body) = _while_the_pool_is_taken(
        "django_session",
        take=lambda: _get(port, "/dashboard/", cookie=cookie)[0],
        then=lambda: _get(port, "/dashboard/", cookie=cookie),
    )

    assert status == 503
    assert headers["Content-Type"].startswith("text/html")
    assert b"Back in a moment" in body
    assert int(headers["Retry-After"]) >= 1
    assert first == 200
