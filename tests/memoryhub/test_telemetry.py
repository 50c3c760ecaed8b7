"""Traces: our spans on the whole write and read path carry no text, and tasks continue the trace.

The path runs as deployed, with the real instrumentations (Django, Celery, psycopg) and our own
spans, into an in-memory exporter: an API write, a session with a message, its end, the
extraction a Celery worker runs from the queued message, a search and a context. Every span's
name, attributes, events, links and status are then scanned for canaries: the memory and
message text, the query, the user's email and external id, the agent's and mode's names.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker
from django.db import connections
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from memoryhub import telemetry
from memoryhub.celery import app
from memoryhub.models import Session
from memoryhub.services.users import create_mode
from tests import factories
from tests.processes import wait_for

pytestmark = pytest.mark.django_db(transaction=True)
REPO = Path(__file__).resolve().parents[2]

EXPORTER = InMemorySpanExporter()
CANARIES = {
    "memory text": "Zanzibarcanary",
    "message text": "Quixoticanary",
    "query": "Quokkacanary",
    "context message": "Marmotcanary",
    "email": "canary.person@example.com",
    "external id": "canary-external-7731",
    "agent name": "Canary Agent Zeta",
    "mode name": "canarymode",
}


@pytest.fixture
def spans():
    """Our telemetry on, exporting into memory; connections reopened so psycopg is traced."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)
    telemetry.instrument()
    for connection in connections.all():
        connection.close()
        connection.close_pool()
    EXPORTER.clear()
    yield EXPORTER
    telemetry.uninstrument()
    for connection in connections.all():
        connection.close()
        connection.close_pool()


def _everything_said(span: ReadableSpan) -> str:
    """A span's name, attributes, events, links, status and resource as one string."""
    parts = [span.name, span.status.description or "", json.dumps(dict(span.attributes or {}))]
    parts += [event.name + json.dumps(dict(event.attributes or {})) for event in span.events]
    parts += [json.dumps(dict(link.attributes or {})) for link in span.links]
    parts.append(json.dumps(dict(span.resource.attributes), default=str))
    return "\n".join(parts)


def test_the_write_and_read_path_traces_ids_and_counts_never_text(client, spans):
    workspace = factories.make_workspace()
    user = factories.make_user(
        workspace=workspace, email=CANARIES["email"], external_id=CANARIES["external id"]
    )
    create_mode(user=user, name=CANARIES["mode name"])
    _, key = factories.make_agent(workspace, name=CANARIES["agent name"])
    auth = {"Authorization": f"Bearer {key}"}
    scope = {"user": CANARIES["external id"], "mode": CANARIES["mode name"]}

    def post(path: str, body: dict[str, object]) -> dict[str, object]:
        response = client.post(
            "/api/v1" + path, json.dumps(body), content_type="application/json", headers=auth
        )
        assert response.status_code in (200, 201), response.content
        return response.json()

    post("/memories", {**scope, "kind": "fact", "content": f"Has a {CANARIES['memory text']}"})
    session = post("/sessions", scope)
    post(
        f"/sessions/{session['id']}/messages",
        {"role": "user", "content": f"I moved to {CANARIES['message text']} last spring."},
    )
    post(f"/sessions/{session['id']}/end", {})

    # The worker takes the message the end queued (on commit) from the broker, as deployed.
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        wait_for(
            lambda: (
                Session.objects.get(pk=session["id"]).extraction_status
                in (Session.ExtractionStatus.DONE, Session.ExtractionStatus.FAILED)
            ),
            "the worker to extract the session",
            timeout=60,
        )
    assert Session.objects.get(pk=session["id"]).extraction_status == "done"

    # A GET names its user and mode in the query string: it must not reach the span's URL.
    listed = client.get("/api/v1/memories", scope, headers=auth)
    assert listed.status_code == 200, listed.content
    post("/search", {**scope, "query": f"where is {CANARIES['query']}"})
    post("/context", {**scope, "message": f"Tell me about {CANARIES['context message']}"})

    finished = spans.get_finished_spans()
    names = {span.name for span in finished}
    for ours in (
        "search_memory",
        "assemble_context",
        "extract_memories",
        "audit.append",
        "embeddings all-MiniLM-L6-v2",
        "run/memoryhub.extract_session",
    ):
        assert ours in names, sorted(names)
    assert any(span.attributes.get("db.statement") for span in finished)  # psycopg is traced
    search = next(span for span in finished if span.name == "search_memory")
    assert search.attributes["gen_ai.operation.name"] == "search_memory"
    assert search.attributes["memoryhub.user.id"] == str(user.pk)
    assert search.attributes["memoryhub.query.chars"] == len(f"where is {CANARIES['query']}")
    embedding = next(span for span in finished if span.name.startswith("embeddings"))
    assert embedding.attributes["gen_ai.request.model"] == "all-MiniLM-L6-v2"
    assert embedding.attributes["gen_ai.usage.input_tokens"] > 0

    leaks = [
        f"{what!r} in span {span.name!r}"
        for span in finished
        for what, canary in CANARIES.items()
        if canary.lower() in _everything_said(span).lower()
    ]
    assert leaks == []


def test_a_task_queued_by_a_request_continues_the_requests_trace(client, spans):
    workspace = factories.make_workspace()
    factories.make_user(workspace=workspace, external_id="dora")
    _, key = factories.make_agent(workspace)
    auth = {"Authorization": f"Bearer {key}"}
    started = client.post(
        "/api/v1/sessions", {"user": "dora"}, content_type="application/json", headers=auth
    ).json()
    client.post(
        f"/api/v1/sessions/{started['id']}/messages",
        {"role": "user", "content": "I live in Paris."},
        content_type="application/json",
        headers=auth,
    )
    ended = client.post(f"/api/v1/sessions/{started['id']}/end", headers=auth)
    assert ended.status_code == 200

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        wait_for(
            lambda: Session.objects.get(pk=started["id"]).extraction_status == "done",
            "the worker to extract the session",
            timeout=60,
        )
    finished = spans.get_finished_spans()
    request = next(
        span
        for span in finished
        if span.kind == SpanKind.SERVER and span.name.startswith("POST") and "end" in span.name
    )
    publish = next(
        span for span in finished if span.name == "apply_async/memoryhub.extract_session"
    )
    run = next(span for span in finished if span.name == "run/memoryhub.extract_session")
    extraction = next(span for span in finished if span.name == "extract_memories")
    # One trace from the request through the broker into the worker's task and our span in it.
    assert publish.context.trace_id == request.context.trace_id
    assert run.context.trace_id == request.context.trace_id
    assert run.parent is not None and run.parent.span_id == publish.context.span_id
    assert extraction.parent is not None and extraction.parent.span_id == run.context.span_id
    assert extraction.attributes["gen_ai.conversation.id"] == started["id"]
    assert extraction.attributes["memoryhub.extraction.items_written"] >= 1


def test_nothing_is_traced_unless_configured(settings):
    settings.MEMORYHUB_OTEL_ENABLED = False
    telemetry.configure()
    assert not telemetry.is_enabled()


def test_an_otlp_endpoint_turns_export_on_in_a_process_of_its_own(tmp_path):
    """A fake collector on loopback receives the spans of a process given its endpoint."""
    received: list[tuple[str, bytes]] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"] or 0))
            received.append((self.path, body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
        "OTEL_SERVICE_NAME": "memoryhub-test",
    }
    script = (
        "from memoryhub.embeddings import default_embedder; "
        "default_embedder().embed(['a text of a user']); "
        "from opentelemetry import trace; trace.get_tracer_provider().force_flush()"
    )
    try:
        result = subprocess.run(  # noqa: S603  # Our own interpreter and manage.py.
            [sys.executable, "manage.py", "shell", "-c", script],
            cwd=REPO,
            env=env,
            capture_output=True,
            timeout=120,
            check=False,
        )
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr.decode()
    assert [path for path, _ in received] == ["/v1/traces"]
    body = received[0][1]
    assert b"embeddings all-MiniLM-L6-v2" in body
    assert b"memoryhub-test" in body
    assert b"a text of a user" not in body


def test_a_refused_host_still_gets_its_400_with_tracing_on(client, spans):
    response = client.get("/accounts/login/?next=/dashboard/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert client.get("/accounts/login/?next=/dashboard/").status_code == 200
    [request] = [span for span in spans.get_finished_spans() if span.kind == SpanKind.SERVER]
    assert request.attributes["http.url"] == "http://testserver/accounts/login/"
