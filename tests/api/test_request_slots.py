"""The concurrent-request limit per key owner, against a real two-worker web server.

Requests are held inside PostgreSQL by a lock the test takes on the memory table, after they
took their slot: the fourth of one owner is refused while three run, in whichever worker, another
owner is not, and every slot is given back however its request ended (a response, an error, a
client that hung up).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

from memoryhub.models import RequestSlot
from memoryhub.process_model import web_command
from tests import factories
from tests.pg_clusters import free_port
from tests.processes import current_database_url, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]
LIMIT = 3
PATH = "/api/v1/memories?user=dana&mode=personal"


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[int]:
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": current_database_url(),
        "MEMORYHUB_MAX_CONCURRENT_REQUESTS": str(LIMIT),
        "SECRET_KEY": settings.SECRET_KEY,
        "MEMORYHUB_MASTER_KEYS": settings.MEMORYHUB_MASTER_KEYS,
        "MEMORYHUB_AUDIT_KEY": settings.MEMORYHUB_AUDIT_KEY,
        "CELERY_BROKER_URL": "memory://",
    }
    log = tmp_path / "web.log"
    argv = web_command(host="127.0.0.1", port=port, workers=2, production=False)
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


def _get(port: int, key: str, path: str = PATH) -> tuple[int, http.client.HTTPMessage, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {key}"})
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def _waiting_on_locks() -> int:
    with psycopg.connect(current_database_url(), autocommit=True) as probe:
        row = probe.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE wait_event_type = 'Lock' AND datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else 0


def _in_background(call, results: list) -> threading.Thread:
    thread = threading.Thread(target=lambda: results.append(call()), daemon=True)
    thread.start()
    return thread


def test_one_owner_gets_429_past_the_limit_while_others_are_served(two_workers):
    port = two_workers
    user = factories.make_user(external_id="dana")
    _, busy_key = factories.make_agent(user.workspace, "busy")
    _, other_key = factories.make_agent(user.workspace, "other")
    assert _get(port, busy_key)[0] == 200
    results: list = []

    with psycopg.connect(current_database_url(), autocommit=False) as holder:
        holder.execute("LOCK TABLE memoryhub_memory IN ACCESS EXCLUSIVE MODE")
        threads = [_in_background(lambda: _get(port, busy_key)[0], results) for _ in range(LIMIT)]
        wait_for(lambda: _waiting_on_locks() >= LIMIT, "three requests to block", timeout=60)

        status, headers, body = _get(port, busy_key)
        threads.append(_in_background(lambda: _get(port, other_key)[0], results))
        wait_for(lambda: _waiting_on_locks() >= LIMIT + 1, "the other owner to run", timeout=60)
        # A client that hangs up mid-request: its slot must come back all the same.
        hung_up = socket.create_connection(("127.0.0.1", port), timeout=10)
        hung_up.sendall(
            f"GET {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {other_key}\r\n\r\n".encode()
        )
        wait_for(lambda: _waiting_on_locks() >= LIMIT + 2, "the last request to run", timeout=60)
        slots_while_held = RequestSlot.objects.count()
        hung_up.close()
        holder.rollback()
    for thread in threads:
        thread.join(timeout=60)

    assert status == 429
    assert json.loads(body)["code"] == "too_many_concurrent_requests"
    assert int(headers["Retry-After"]) >= 1
    assert slots_while_held == LIMIT + 2
    assert results.count(200) == LIMIT + 1
    wait_for(lambda: not RequestSlot.objects.exists(), "every slot to be given back", timeout=30)


def test_slots_are_given_back_after_errors(two_workers):
    port = two_workers
    user = factories.make_user(external_id="dana")
    _, key = factories.make_agent(user.workspace)

    statuses = [
        _get(port, key, "/api/v1/memories?user=nobody")[0],
        _get(port, key, "/api/v1/memories?user=dana&limit=-5")[0],
        *(_get(port, key)[0] for _ in range(LIMIT + 1)),  # One after another: never refused.
    ]

    assert statuses[:2] == [404, 422]
    assert statuses[2:] == [200] * (LIMIT + 1)
    wait_for(lambda: not RequestSlot.objects.exists(), "every slot to be given back", timeout=30)
