"""/healthz and /readyz: alive without the database, ready only with database, broker and model."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from memoryhub import health, probes
from memoryhub.process_model import wait_until_ready, web_command
from tests.pg_clusters import free_port, temporary_cluster
from tests.processes import current_database_url, wait_for

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh_probe(monkeypatch):
    """A probe with no cached result, so each test sees its own settings checked."""
    probe = health.ReadinessProbe()
    monkeypatch.setattr(probes, "probe", probe)
    return probe


def test_healthz_answers_any_host_over_plain_http_without_the_database(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.ALLOWED_HOSTS = ["memoryhub.example"]
    # A kubelet probes the pod's address: no redirect, no DisallowedHost, no query.
    response = client.get("/healthz", HTTP_HOST="10.1.2.3:8000")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response["Cache-Control"] == "no-store"


@pytest.mark.django_db
def test_readyz_is_ready_with_the_database_the_broker_and_the_model_loaded(
    client, embedder, fresh_probe
):
    embedder.embed(["loaded"])  # The session's embedder is the process's default one.
    response = client.get("/readyz", HTTP_HOST="10.1.2.3")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ready"
    assert {name: check["ok"] for name, check in body["checks"].items()} == {
        "database": True,
        "broker": True,
        "model": True,
    }
    assert body["checks"]["model"]["state"] == "loaded"
    assert body["replicas"] == {}


@pytest.mark.django_db
def test_readyz_answers_503_naming_an_unreachable_broker(client, settings, embedder, fresh_probe):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port()}/0"
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not_ready"
    assert body["checks"]["broker"]["ok"] is False
    assert body["checks"]["broker"]["error"]  # An exception class, never the driver's text.
    assert "127.0.0.1" not in json.dumps(body)
    assert body["checks"]["database"]["ok"] is True


@pytest.mark.django_db
def test_a_readiness_result_is_reused_for_a_second(fresh_probe):
    first = fresh_probe.readiness()
    assert fresh_probe.readiness() is first  # Probes every second per worker cost one check.


def _get(port: int, path: str) -> tuple[int, dict[str, object]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_a_web_worker_stays_alive_but_unready_while_its_database_is_down(tmp_path):
    """A real server: not ready until the model loads, 503 while PostgreSQL is stopped, back."""
    with temporary_cluster() as cluster:
        port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": cluster.url(),
            "DATABASE_POOL_TIMEOUT_SECONDS": "1",
            "SECRET_KEY": settings.SECRET_KEY,
            "MEMORYHUB_MASTER_KEYS": settings.MEMORYHUB_MASTER_KEYS,
            "MEMORYHUB_AUDIT_KEY": settings.MEMORYHUB_AUDIT_KEY,
            "CELERY_BROKER_URL": "memory://",
        }
        log = tmp_path / "web.log"
        process = subprocess.Popen(  # noqa: S603  # Our own interpreter and arguments.
            web_command(host="127.0.0.1", port=port, workers=1, production=False),
            cwd=REPO,
            env=env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            # What runstack --production waits for; the first probe starts loading the model.
            is_ready, body = wait_until_ready(host="127.0.0.1", port=port, timeout=90)
            assert is_ready, (body, log.read_text(errors="replace"))
            assert body["checks"]["model"]["state"] == "loaded"

            cluster.stop()

            def reports_database_down() -> bool:
                status, body = _get(port, "/readyz")
                return status == 503 and body["checks"]["database"]["ok"] is False

            wait_for(reports_database_down, "/readyz to report the database down", timeout=30)
            assert _get(port, "/healthz") == (200, {"status": "ok"})

            cluster.start()
            is_ready, body = wait_until_ready(host="127.0.0.1", port=port, timeout=30)
            assert is_ready, body
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@pytest.mark.django_db(transaction=True)
def test_runstack_production_stops_everything_when_the_stack_never_gets_ready(tmp_path):
    """The broker is unreachable: /readyz says so, and runstack gives up instead of announcing."""
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
        "DEBUG": "false",
        "SECRET_KEY": settings.SECRET_KEY,
        "MEMORYHUB_MASTER_KEYS": settings.MEMORYHUB_MASTER_KEYS,
        "MEMORYHUB_AUDIT_KEY": "an audit key other than the secret key",
        "DATABASE_URL": current_database_url(),
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0",
        "MEMORYHUB_DATA_DIR": str(tmp_path),
        "WEB_CONCURRENCY": "1",
    }
    port = free_port()
    process = subprocess.Popen(  # noqa: S603  # Our own interpreter and arguments.
        [
            *(sys.executable, "manage.py", "runstack", "--production", "--allow-console-email"),
            *("--port", str(port), "--ready-timeout", "45"),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode != 0
    assert "was not ready within 45 s" in stderr
    assert "'broker': {'ok': False" in stderr
    assert "MemoryHub runs on" not in stdout
    # Every process it started is gone, the web server's port included.
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
