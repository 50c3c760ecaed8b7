"""Admin tools: memory health and the access audit are staff-only, read-only and audited."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from allauth.mfa.models import Authenticator

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access, subject_pseudonym
from memoryhub.models import AuditEntry, ExtractionRun, Memory, MemoryStatus
from memoryhub.services.forget import delete_account
from tests import factories
from tests.memoryhub.threads import make_session

NOW = datetime(2025, 5, 20, 10, 0, tzinfo=UTC)


@pytest.fixture
def admin(workspace):
    staff = factories.make_user(workspace=workspace, email="root@example.com")
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    Authenticator.objects.create(user=staff, type=Authenticator.Type.TOTP, data={"secret": "x"})
    return staff


@pytest.fixture
def admin_client(client, admin):
    client.force_login(admin)
    return client


def _rows(response):
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


@pytest.mark.parametrize(
    "url", ["/admin-tools/", "/admin-tools/audit/", "/admin-tools/audit/export.csv"]
)
def test_a_non_staff_user_is_refused(client, user, url):
    client.force_login(user)
    assert client.get(url).status_code == 403


@pytest.mark.parametrize("url", ["/admin-tools/", "/admin-tools/audit/"])
def test_an_anonymous_visitor_is_sent_to_log_in(client, db, url):
    response = client.get(url)
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_staff_without_two_factor_must_set_it_up_first(client, admin):
    Authenticator.objects.filter(user=admin).delete()
    client.force_login(admin)
    response = client.get("/admin-tools/")
    assert response.status_code == 302
    assert "/accounts/2fa/" in response["Location"]


def test_the_audit_pages_are_read_only(admin_client):
    assert admin_client.post("/admin-tools/audit/").status_code == 405
    assert admin_client.post("/admin-tools/").status_code == 405


def test_memory_health_shows_the_kpis(admin_client, user, personal, embedder):
    with time_machine.travel(NOW - timedelta(days=10), tick=False):
        facts = [
            factories.make_memory(user, personal, f"Fact number {i}", embedder=embedder)
            for i in range(4)
        ]
    Memory.all_owners.filter(pk=facts[0].pk).update(status=MemoryStatus.SUPERSEDED)
    Memory.all_owners.filter(pk=facts[1].pk).update(is_dormant=True)
    session = make_session(user, personal)
    ExtractionRun.objects.create(
        session=session,
        idempotency_key="k1",
        extractor="offline",
        items_written=6,
        items_rejected=2,
    )
    with time_machine.travel(NOW, tick=False):
        response = admin_client.get("/admin-tools/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "1 of 4 (25%)" in page  # Superseded facts.
    assert "1 (25%)" in page  # Dormant.
    assert "2 of 8 items (25%)" in page  # Rejected hallucinations.
    assert "alice@example.com" in page
    assert "Fact number" not in page  # Counts only: no memory text.


def test_viewing_memory_health_is_audited_on_the_admin_channel(admin_client, admin):
    admin_client.get("/admin-tools/")
    entry = AuditEntry.objects.order_by("-id").first()
    assert (entry.action, entry.channel, entry.actor_type) == ("admin.health", "admin", "admin")
    assert entry.actor_id == str(admin.pk)


def test_the_audit_filters_by_user_email(admin_client, user, other_user):
    record_access(actor=Actor.system("t"), subject_user_id=user.pk, action=AuditAction.MEMORY_READ)
    record_access(
        actor=Actor.system("t"), subject_user_id=other_user.pk, action=AuditAction.MEMORY_READ
    )
    response = admin_client.get("/admin-tools/audit/", {"user": "ALICE@example.com"})
    page = response.content.decode()
    assert subject_pseudonym(user.pk) in page
    assert subject_pseudonym(other_user.pk) not in page


def test_the_audit_filters_by_actor_action_channel_and_period(admin_client, user):
    agent_actor = Actor("agent", "agent-7", "api", label="Helper bot")
    with time_machine.travel(NOW - timedelta(days=3), tick=False):
        record_access(actor=agent_actor, subject_user_id=user.pk, action=AuditAction.MEMORY_SEARCH)
    with time_machine.travel(NOW - timedelta(days=1), tick=False):
        record_access(actor=agent_actor, subject_user_id=user.pk, action=AuditAction.MEMORY_CREATE)
        record_access(
            actor=Actor.system("t"), subject_user_id=user.pk, action=AuditAction.MEMORY_CREATE
        )
    response = admin_client.get(
        "/admin-tools/audit/",
        {
            "actor_type": "agent",
            "actor_id": "Helper bot",
            "action": "memory.",
            "channel": "api",
            "since": (NOW - timedelta(days=1)).date().isoformat(),
            "until": (NOW - timedelta(days=1)).date().isoformat(),
        },
    )
    page = response.content.decode()
    assert "memory.create" in page
    assert "memory.search" not in page
    assert "(1 row)" in page


def test_a_deleted_accounts_entries_are_found_by_pseudonym(admin_client, user):
    pseudonym = subject_pseudonym(user.pk)
    delete_account(user=user, actor=Actor.system("t"))
    page = admin_client.get("/admin-tools/audit/", {"user": pseudonym}).content.decode()
    assert "account.delete" in page


def test_an_unknown_user_matches_nothing(admin_client, user):
    record_access(actor=Actor.system("t"), subject_user_id=user.pk, action=AuditAction.MEMORY_READ)
    page = admin_client.get("/admin-tools/audit/", {"user": "nobody@example.com"}).content
    assert b"No audit entry matches this filter." in page


@pytest.mark.parametrize(
    "query",
    [
        {"channel": "carrier-pigeon"},
        {"actor_type": "robot"},
        {"since": "yesterday"},
        {"since": "2025-05-10", "until": "2025-05-01"},
    ],
)
def test_a_malformed_filter_is_refused(admin_client, query):
    assert admin_client.get("/admin-tools/audit/", query).status_code == 422
    assert admin_client.get("/admin-tools/audit/export.csv", query).status_code == 422


def test_the_htmx_request_gets_only_the_rows_fragment(admin_client):
    response = admin_client.get("/admin-tools/audit/", HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="audit-rows">')
    assert "<html" not in body


def test_the_audit_exports_as_csv_with_formulas_neutralised(admin_client, user):
    record_access(
        actor=Actor("agent", "a1", "api", label='=HYPERLINK("http://x")'),
        subject_user_id=user.pk,
        action=AuditAction.MEMORY_READ,
        object_ids=["m1", "m2"],
    )
    response = admin_client.get("/admin-tools/audit/export.csv", {"action": "memory.read"})
    rows = _rows(response)
    assert response["Content-Type"] == "text/csv"
    assert rows[0][:3] == ["id", "created_at", "actor_type"]
    assert len(rows) == 2
    assert rows[1][4].startswith("'=")
    assert rows[1][7] == "m1 m2"
    # The chain column lets an exported file be re-verified row by row, chain by chain.
    assert rows[1][rows[0].index("chain")] == subject_pseudonym(user.pk)
    export = AuditEntry.objects.order_by("-id").first()
    assert (export.action, export.channel) == ("audit.export", "admin")
