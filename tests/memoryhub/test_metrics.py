"""/metrics: only for the configured token; requests per route, scrape-time state, several workers."""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone
from kombu import Connection
from prometheus_client.parser import text_string_to_metric_families

from memoryhub.actors import Actor
from memoryhub.metrics import broker_queue_depth
from memoryhub.models import Session, WebhookDelivery, WebhookEndpoint
from memoryhub.process_model import web_command
from memoryhub.services.sessions import end_session, start_session
from tests import factories
from tests.pg_clusters import free_port
from tests.processes import current_database_url, wait_for

TOKEN = "scrape-token-for-tests"
REPO = Path(__file__).resolve().parents[2]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, keyed by name and sorted labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return samples(response.content.decode())


def test_metrics_are_not_served_without_a_configured_token(client, settings):
    settings.MEMORYHUB_METRICS_TOKEN = None
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404


def test_metrics_want_the_configured_token(client, settings):
    settings.MEMORYHUB_METRICS_TOKEN = TOKEN
    missing = client.get("/metrics")
    assert missing.status_code == 401
    assert missing["WWW-Authenticate"] == 'Bearer realm="metrics"'
    wrong = client.get("/metrics", headers={"Authorization": "Bearer scrape-token-for-test"})
    assert wrong.status_code == 401
    assert b"memoryhub" not in wrong.content


@pytest.mark.django_db
def test_requests_are_counted_and_timed_per_route_pattern(client, settings, workspace):
    settings.MEMORYHUB_METRICS_TOKEN = TOKEN
    user = factories.make_user(workspace=workspace, external_id="carol")
    _, key = factories.make_agent(workspace)
    route = ("route", "api/v1/memories")
    before = scrape(client)
    for _ in range(3):
        listed = client.get(
            "/api/v1/memories",
            {"user": "carol", "mode": "personal"},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert listed.status_code == 200, listed.content
    assert client.get("/api/v1/memories").status_code == 401
    assert client.get("/no-such-page/").status_code == 404
    after = scrape(client)

    def grew(name: str, *labels: tuple[str, str]) -> float:
        key = (name, tuple(sorted(labels)))
        return after.get(key, 0) - before.get(key, 0)

    ok = ("status", "200")
    assert grew("memoryhub_http_requests_total", route, ("method", "GET"), ok) == 3
    assert grew("memoryhub_http_requests_total", route, ("method", "GET"), ("status", "401")) == 1
    unmatched = ("route", "unmatched")
    assert grew("memoryhub_http_requests_total", unmatched, ("method", "GET"), ("status", "404"))
    assert grew("memoryhub_http_request_duration_seconds_count", route, ("method", "GET")) == 4
    # A route's pattern, never a path with ids or a query string.
    routes = {dict(labels).get("route") for _, labels in after}
    assert not any("carol" in str(r) for r in routes)
    assert (
        after[("memoryhub_db_pool_connections", (("state", "max"),))]
        == (django_settings.DATABASE_POOL_OPTIONS["max_size"])
    )
    assert user.pk  # The memories listed were the user's own (no cross-user data involved).


@pytest.mark.django_db
def test_scrape_time_gauges_count_the_queue_failures_memories_and_the_audit(
    client, settings, workspace, embedder
):
    settings.MEMORYHUB_METRICS_TOKEN = TOKEN
    user = factories.make_user(workspace=workspace)
    mode = factories.mode_of(user)
    factories.make_memory(user, mode, "Prefers green tea", embedder=embedder)
    factories.make_memory(user, mode, "Lives near the harbour", embedder=embedder)
    actor = Actor.system("tests")
    waiting = end_session(session=start_session(user=user, mode=mode, actor=actor), actor=actor)
    # Queued for an hour with nothing running: its task was lost.
    Session.objects.filter(pk=waiting.pk).update(
        extraction_status=Session.ExtractionStatus.QUEUED,
        ended_at=timezone.now() - timedelta(hours=1),
    )
    failed = start_session(user=user, mode=mode, actor=actor)
    Session.objects.filter(pk=failed.pk).update(
        ended_at=timezone.now(), extraction_status=Session.ExtractionStatus.FAILED
    )
    call_command("verify_audit", stdout=open(os.devnull, "w"))  # noqa: SIM115

    values = scrape(client)
    assert values[("memoryhub_database_up", ())] == 1
    assert values[("memoryhub_extraction_queued_sessions", ())] == 1
    assert values[("memoryhub_extraction_stranded_sessions", ())] == 1
    assert 3590 <= values[("memoryhub_extraction_lag_seconds", ())] <= 3700
    assert values[("memoryhub_extraction_failed_sessions", ())] == 1
    assert values[("memoryhub_memories", (("workspace", workspace.slug),))] == 2
    assert values[("memoryhub_stored_bytes", (("workspace", workspace.slug),))] > 0
    assert values[("memoryhub_audit_chain_intact", ())] == 1
    assert values[("memoryhub_audit_rows_checked", ())] >= 1
    assert values[("memoryhub_broker_up", ())] == 1
    # Counts only: no memory text anywhere in the exposition.
    body = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).content
    assert b"green tea" not in body
    assert user.email.encode() not in body


def _get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_two_web_workers_add_up_their_counts_in_every_scrape(tmp_path):
    """uvicorn --workers 2 with PROMETHEUS_MULTIPROC_DIR: no request is lost to the other worker."""
    port = free_port()
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    env = {
        **os.environ,
        "DATABASE_URL": current_database_url(),
        "SECRET_KEY": django_settings.SECRET_KEY,
        "MEMORYHUB_MASTER_KEYS": django_settings.MEMORYHUB_MASTER_KEYS,
        "MEMORYHUB_AUDIT_KEY": django_settings.MEMORYHUB_AUDIT_KEY,
        "CELERY_BROKER_URL": "memory://",
        "MEMORYHUB_METRICS_TOKEN": TOKEN,
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
    }
    log = tmp_path / "web.log"
    process = subprocess.Popen(  # noqa: S603  # Our own interpreter and arguments.
        web_command(host="127.0.0.1", port=port, workers=2, production=True),
        cwd=REPO,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:

        def is_up() -> bool:
            assert process.poll() is None, log.read_text(errors="replace")
            try:
                return _get(port, "/healthz")[0] == 200
            except OSError:
                return False

        wait_for(is_up, "two web workers", timeout=90)
        # New connections spread over both workers' sockets (memoryhub/web_server.py).
        for _ in range(40):
            assert _get(port, "/api/v1/memories")[0] == 401
        wait_for(lambda: len(list(metrics_dir.glob("counter_*.db"))) >= 2, "both workers' files")
        key = (
            "memoryhub_http_requests_total",
            (("method", "GET"), ("route", "api/v1/memories"), ("status", "401")),
        )
        for _ in range(5):  # Whichever worker answers the scrape, every request is there.
            status, text = _get(port, "/metrics", {"Authorization": f"Bearer {TOKEN}"})
            assert status == 200, text
            assert samples(text)[key] == 40
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


@pytest.fixture
def redis_broker(settings, tmp_path):
    """A redis-server of this test's own on loopback, as the Celery broker."""
    port = free_port()
    server = subprocess.Popen(  # noqa: S603  # The system's redis-server, loopback only.
        [
            shutil.which("redis-server") or "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    wait_for(lambda: broker_queue_depth_at(url) is not None, "redis-server", timeout=30)
    settings.CELERY_BROKER_URL = url
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    yield url
    server.terminate()
    server.wait(timeout=30)


def broker_queue_depth_at(url: str) -> int | None:
    with override_settings(CELERY_BROKER_URL=url, CELERY_BROKER_TRANSPORT_OPTIONS={}):
        return broker_queue_depth()


@pytest.mark.django_db
def test_the_broker_queue_depth_counts_waiting_tasks_on_redis(client, settings, redis_broker):
    settings.MEMORYHUB_METRICS_TOKEN = TOKEN
    values = scrape(client)
    assert values[("memoryhub_broker_up", ())] == 1  # Up, though nothing was ever queued.
    assert values[("memoryhub_broker_queue_messages", ())] == 0
    with Connection(redis_broker) as broker:
        queue = broker.SimpleQueue("celery")
        queue.put({"task": "waiting"})
        queue.put({"task": "waiting too"})
        queue.close()
    assert scrape(client)[("memoryhub_broker_queue_messages", ())] == 2


def test_webhook_deliveries_waiting_their_lag_and_open_circuits_are_gauged(
    client, settings, workspace
):
    settings.MEMORYHUB_METRICS_TOKEN = TOKEN
    endpoint = WebhookEndpoint.objects.create(
        workspace=workspace,
        url="https://hooks.example.com/memoryhub",
        secret_ciphertext=b"sealed",
        event_types=["memory.created"],
        circuit_opened_at=timezone.now(),
    )
    hour_ago = timezone.now() - timedelta(hours=1)
    statuses = ["pending", "pending", "failed", "dead", "delivered", "delivered"]
    for number, status in enumerate(statuses):
        WebhookDelivery.objects.create(
            endpoint=endpoint,
            message_id=f"msg_{number}",
            event_type="memory.created",
            payload={},
            status=status,
            created_at=hour_ago if number == 2 else timezone.now(),
        )

    values = scrape(client)
    assert values[("memoryhub_webhook_deliveries", (("status", "pending"),))] == 2
    assert values[("memoryhub_webhook_deliveries", (("status", "failed"),))] == 1
    assert values[("memoryhub_webhook_deliveries", (("status", "dead"),))] == 1
    assert ("memoryhub_webhook_deliveries", (("status", "delivered"),)) not in values
    # The oldest delivery still to be sent is the failed one, an hour old.
    assert 3590 <= values[("memoryhub_webhook_delivery_lag_seconds", ())] <= 3700
    assert values[("memoryhub_webhook_open_circuits", ())] == 1
