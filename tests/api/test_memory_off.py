"""Memory off in one mode, through the API: agents get nothing of it and save nothing in it."""

from __future__ import annotations

import pytest

from memoryhub.actors import Actor
from memoryhub.models import Memory, Session
from memoryhub.services.ingest import run_extraction
from memoryhub.services.preferences import set_mode_memory_off
from memoryhub.services.sessions import add_message, end_session, start_session
from tests import factories


@pytest.fixture
def work_off(user, work, personal, embedder):
    factories.make_memory(user, work, "Alice leads the billing team.", embedder=embedder)
    factories.make_memory(user, personal, "Alice sings in a choir.", embedder=embedder)
    return set_mode_memory_off(user=user, mode=work, is_off=True, actor=Actor.for_user(user.pk))


def test_writes_to_a_mode_with_memory_off_are_409(api, user, work_off):
    body = {"user": "alice", "mode": "work", "kind": "fact", "content": "Alice moved teams."}
    response = api.post("/memories", body)
    assert (response.status_code, response.json()["code"]) == (409, "memory_off")
    batch = {"user": "alice", "mode": "work", "items": [{"kind": "fact", "content": "x"}]}
    assert api.post("/memories/batch", batch).status_code == 409
    journal = {"user": "alice", "mode": "work", "type": "alert", "summary": "Told her."}
    assert api.post("/journal", journal).json()["code"] == "memory_off"
    assert Memory.objects.for_owner(user=user, mode=work_off).count() == 1


def test_the_other_mode_still_remembers(api, user, personal, work_off):
    body = {"user": "alice", "mode": "personal", "kind": "fact", "content": "Alice plays chess."}
    assert api.post("/memories", body).status_code == 201


def test_a_conversation_in_a_mode_with_memory_off_keeps_no_message(api, user, work_off):
    session = api.post("/sessions", {"user": "alice", "mode": "work"}).json()
    added = api.post(f"/sessions/{session['id']}/messages", {"role": "user", "content": "Hi."})
    assert (added.status_code, added.json()["code"]) == (409, "memory_off")
    notes = api.client.put(
        f"/api/v1/sessions/{session['id']}/working-memory",
        '{"step": 1}',
        content_type="application/json",
        headers={"Authorization": f"Bearer {api.key}"},
    )
    assert notes.status_code == 409
    assert not Session.objects.get(pk=session["id"]).messages.exists()


def test_search_and_context_use_nothing_of_a_mode_with_memory_off(api, user, work_off):
    found = api.post("/search", {"user": "alice", "mode": "work", "query": "billing team"}).json()
    assert found == {"results": [], "no_close_match": True}
    context = api.post("/context", {"user": "alice", "mode": "work", "message": "billing?"}).json()
    assert all(block["memory_ids"] == [] for block in context["blocks"])
    assert "billing team" not in str(context)
    assert {b["key"] for b in context["blocks"]} >= {"platform_rules", "date", "message"}


def test_the_other_mode_is_still_used(api, user, work_off):
    found = api.post("/search", {"user": "alice", "query": "choir"}).json()
    assert [item["content"] for item in found["results"]] == ["Alice sings in a choir."]


def test_turning_memory_on_again_restores_use_and_saving(api, user, work_off):
    set_mode_memory_off(user=user, mode=work_off, is_off=False, actor=Actor.for_user(user.pk))
    found = api.post("/search", {"user": "alice", "mode": "work", "query": "billing team"}).json()
    assert len(found["results"]) == 1
    body = {"user": "alice", "mode": "work", "kind": "fact", "content": "Alice moved teams."}
    assert api.post("/memories", body).status_code == 201


def test_a_session_ended_in_a_mode_with_memory_off_is_not_extracted(user, work, embedder):
    actor = Actor.system("tests")
    session = start_session(user=user, mode=work, actor=actor)
    add_message(
        session=session,
        role="user",
        content="I work with Marc every day.",
        actor=actor,
        embedder=embedder,
    )
    set_mode_memory_off(user=user, mode=work, is_off=True, actor=Actor.for_user(user.pk))
    end_session(session=session, actor=actor)
    assert run_extraction(session_id=session.pk, embedder=embedder) is None
    session.refresh_from_db()
    assert session.extraction_status == Session.ExtractionStatus.SKIPPED
    assert not Memory.objects.for_owner(user=user, mode=work).exists()


def test_agents_read_nothing_of_a_mode_with_memory_off(api, user, work, work_off):
    hidden = Memory.objects.for_owner(user=user, mode=work).get()
    assert api.get("/memories", user="alice", mode="work").json()["items"] == []
    profile = api.get("/profile", user="alice", mode="work").json()
    assert profile["facts"] == profile["preferences"] == profile["procedures"] == []
    assert api.get("/open-items", user="alice", mode="work").json()["items"] == []
    one = api.get(f"/memories/{hidden.pk}", user="alice", mode="work")
    assert one.status_code == 404
    # The other mode reads as before.
    assert len(api.get("/memories", user="alice", mode="personal").json()["items"]) == 1
