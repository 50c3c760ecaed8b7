"""The agent's journal: record, deduplicate by key, resolve, list unresolved since a date."""

from __future__ import annotations

from datetime import timedelta

import time_machine
from django.utils import timezone

from memoryhub.models import AuditEntry, JournalEntry
from memoryhub.services.agents import create_personal_key
from tests import factories


def _note(api, summary="Reminded about the dentist", **fields):
    body = {"user": "alice", "mode": "personal", "summary": summary, "type": "alert"}
    return api.post("/journal", {**body, **fields})


def test_a_journal_entry_is_recorded_encrypted_and_audited(api, user):
    response = _note(api, key="dentist-2025-03")
    assert response.status_code == 201
    body = response.json()
    assert body["summary"] == "Reminded about the dentist"
    assert body["type"] == "alert"
    assert body["key"] == "dentist-2025-03"
    assert body["resolved_at"] is None
    stored = JournalEntry.objects.get(pk=body["id"])
    assert b"dentist" not in bytes(stored.summary_ciphertext)
    assert AuditEntry.objects.filter(action="journal.create", object_ids=[body["id"]]).exists()


def test_the_same_unresolved_key_is_not_written_twice(api, user):
    first = _note(api, key="dentist")
    again = _note(api, "Reminded about the dentist, again", key="dentist")
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert JournalEntry.objects.count() == 1


def test_the_list_shows_unresolved_entries_since_a_date_one_per_key(api, user):
    now = timezone.now()
    with time_machine.travel(now - timedelta(days=10), tick=False):
        _note(api, "old news", key="old")
    first = _note(api, "Suggested a walk", type="recommendation", key="walk").json()
    api.post(f"/journal/{first['id']}/resolve", user="alice")
    second = _note(api, "Suggested a walk again", type="recommendation", key="walk").json()
    _note(api, "Booked a table", type="action")
    since = (now - timedelta(days=7)).isoformat()
    unresolved = api.get("/journal", user="alice", since=since, unresolved="true").json()["items"]
    assert [e["summary"] for e in unresolved] == ["Booked a table", "Suggested a walk again"]
    everything = api.get("/journal", user="alice").json()["items"]
    assert [e["id"] for e in everything if e["key"] == "walk"] == [second["id"]]
    assert len(everything) == 3


def test_resolving_marks_the_entry_and_another_agents_entry_is_404(api, workspace, user, caller):
    entry = _note(api, key="k").json()
    resolved = api.post(f"/journal/{entry['id']}/resolve", user="alice")
    assert resolved.status_code == 200
    assert resolved.json()["resolved_at"] is not None
    _, other_key = factories.make_agent(workspace, "other agent")
    other = caller(other_key)
    assert other.post(f"/journal/{entry['id']}/resolve", user="alice").status_code == 404
    assert other.get("/journal", user="alice").json()["items"] == []
    assert api.post(f"/journal/{entry['id']}/resolve", user="bob").status_code == 404
    assert api.post(f"/journal/{entry['id']}/resolve", user="alice", mode="work").status_code == 404


def test_journal_bad_input_is_4xx(api, user, caller, settings):
    assert _note(api, type="gossip").status_code == 422
    assert _note(api, "").status_code == 422
    assert _note(api, "   ").status_code == 422
    settings.MEMORYHUB_MAX_CONTENT_BYTES = 10
    assert _note(api, "x" * 11).status_code == 413
    assert api.get("/journal", user="alice", since="last week").status_code == 422
    personal_key = create_personal_key(user=user, name="cli").raw_key
    assert _note(caller(personal_key)).status_code == 403


def test_a_paused_user_gets_no_new_journal_entries(api, user):
    user.is_memory_paused = True
    user.save(update_fields=["is_memory_paused"])
    assert _note(api).status_code == 409
