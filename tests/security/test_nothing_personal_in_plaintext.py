"""Nothing personal in plaintext: audit modes, journal keys, forgotten topics, TOTP secrets,
secret files; and the demo account only exists in DEBUG."""

from __future__ import annotations

import pytest
from django.test import Client

from memoryhub.models import AuditEntry
from memoryhub.services.audit import (
    _row_hash,
    mode_pseudonym,
    subject_pseudonym,
    verify_chain,
)
from memoryhub.services.users import create_mode

from .canary_scan import columns_holding

pytestmark = pytest.mark.django_db(transaction=True)


# --- Audit rows name a mode by its pseudonym -------------------------------------------------


def test_audit_rows_hold_a_pseudonym_of_the_mode_never_its_name(world):
    create_mode(user=world.alice, name="divorce")
    written = world.agent_http.post(
        "/memories",
        {"user": "alice", "mode": "divorce", "kind": "fact", "content": "Lawyer on Monday"},
    )
    assert written.status_code == 201, written.text
    assert world.agent_http.get("/memories", user="alice", mode="divorce").status_code == 200
    rows = AuditEntry.objects.filter(subject=subject_pseudonym(world.alice.pk))
    assert rows.count() >= 2
    assert set(rows.exclude(mode="").values_list("mode", flat=True)) == {
        mode_pseudonym(subject_pseudonym(world.alice.pk), "divorce")
    }
    assert "memoryhub_auditentry.mode" not in columns_holding("divorce")
    # The same mode name of another user is another pseudonym: rows do not link the two.
    assert mode_pseudonym(subject_pseudonym(world.bob.pk), "divorce") not in set(
        rows.values_list("mode", flat=True)
    )
    assert verify_chain().is_intact


def _old_row(user, slug: str, action: str) -> AuditEntry:
    """A row as written before pseudonyms: the slug itself, hashed as it is."""
    subject = subject_pseudonym(user.pk)
    last = AuditEntry.objects.filter(chain=subject).order_by("-id").first()
    entry = AuditEntry(
        actor_type="agent",
        actor_id="old-agent",
        actor_label="old agent",
        subject=subject,
        chain=subject,
        action=action,
        mode=slug,
        channel="api",
        prev_hash=last.row_hash if last else "0" * 64,
    )
    entry.row_hash = _row_hash(entry)
    entry.save()
    return entry


def test_the_users_access_log_shows_the_mode_of_new_and_old_rows(world, client: Client):
    create_mode(user=world.alice, name="divorce")
    world.agent_http.get("/memories", user="alice", mode="divorce")
    _old_row(world.alice, "divorce", "memory.search")
    assert verify_chain().is_intact  # Old rows keep verifying next to new ones.
    client.force_login(world.alice)
    page = client.get("/dashboard/access/").content.decode()
    assert page.count('<td data-label="Mode">divorce</td>') == 2
    assert "mode:" not in page


def test_the_admin_filters_the_audit_by_user_and_mode(world, superuser_client):
    create_mode(user=world.alice, name="divorce")
    world.agent_http.get("/memories", user="alice", mode="divorce")
    world.agent_http.get("/memories", user="alice", mode="work")
    world.agent_http.get("/memories", user="bob", mode="work")
    old = _old_row(world.alice, "divorce", "memory.search")
    page = superuser_client.get(
        "/admin-tools/audit/", {"user": "alice@example.com", "mode": "divorce"}
    )
    assert page.status_code == 200
    shown = list(page.context["page"].object_list)
    assert {row.action for row in shown} == {"memory.list", "memory.search"}
    assert old in shown
    assert all(row.subject == subject_pseudonym(world.alice.pk) for row in shown)
    no_user = superuser_client.get("/admin-tools/audit/", {"mode": "divorce"})
    assert no_user.status_code == 422
    assert "Name a user too" in no_user.content.decode()
