"""Provenance cannot be forged: only the user's dashboard or personal key writes "the user said"."""

from __future__ import annotations

from memoryhub.actors import Actor
from memoryhub.models import Memory, MemoryVersion
from tests import factories


def _fact(content="Works at Acme", **fields):
    return {"user": "alice", "kind": "fact", "content": content, **fields}


def _item(content="Works at Acme", **fields):
    # A batch item carries no user: the batch names it once (an unknown field is 422).
    return {"kind": "fact", "content": content, **fields}


def _stored(world):
    return list(Memory.objects.for_owner(user=world.alice, mode=None))


def test_an_agent_key_cannot_write_source_user(world):
    single = world.agent_http.post("/memories", _fact(source="user"))
    assert single.status_code == 403
    assert single.json()["code"] == "forbidden"
    assert "source" in single.json()["detail"]
    batch = world.agent_http.post(
        "/memories/batch",
        {"user": "alice", "items": [_item(source="agent"), _item("Lives in Lyon", source="user")]},
    )
    assert batch.status_code == 403
    assert _stored(world) == []


def test_an_agent_writes_its_own_word_at_medium_confidence(world):
    for source in ("agent", "explicit"):
        response = world.agent_http.post("/memories", _fact(f"Said by {source}", source=source))
        assert response.status_code == 201
        assert (response.json()["source"], response.json()["confidence"]) == (source, "medium")


def test_the_users_personal_key_writes_the_users_own_word(world):
    response = world.alice_http.post("/memories", _fact(source="user"))
    assert response.status_code == 201
    assert (response.json()["source"], response.json()["confidence"]) == ("user", "high")


def test_an_agents_edit_of_a_user_stated_memory_is_recorded_as_the_agents(world):
    said = world.alice_http.post("/memories", _fact(source="user")).json()
    response = world.agent_http.patch(
        f"/memories/{said['id']}", {"content": "Works at Globex"}, user="alice"
    )
    assert response.status_code == 200
    assert (response.json()["source"], response.json()["confidence"]) == ("agent", "medium")
    assert world.agent_http.get(f"/memories/{said['id']}", user="alice").json()["source"] == "agent"
    stored = Memory.objects.for_owner(user=world.alice, mode=None).get(pk=said["id"])
    assert stored.agent_id == world.agent.pk
    version = MemoryVersion.objects.get(memory_id=said["id"])
    assert (version.changed_by_type, version.changed_by_id) == ("agent", str(world.agent.pk))


def test_an_agents_payload_edit_takes_provenance_but_an_importance_edit_does_not(world):
    said = world.alice_http.post("/memories", _fact(source="user")).json()
    path = f"/memories/{said['id']}"
    importance = world.agent_http.patch(path, {"importance": "high"}, user="alice")
    # Only how much it matters changed: the words are still the user's.
    assert (importance.json()["source"], importance.json()["confidence"]) == ("user", "high")
    payload = world.agent_http.patch(path, {"payload": {"since": "2020"}}, user="alice")
    assert (payload.json()["source"], payload.json()["confidence"]) == ("agent", "medium")


def test_an_agents_edit_never_raises_a_candidate(world, embedder):
    candidate = factories.make_memory(
        world.alice,
        factories.mode_of(world.alice),
        "Maybe likes jazz",
        kind="preference",
        source="extracted",
        embedder=embedder,
        actor=Actor.system("tests"),
    )
    response = world.agent_http.patch(
        f"/memories/{candidate.pk}", {"content": "Likes jazz"}, user="alice"
    )
    assert (response.json()["source"], response.json()["confidence"]) == ("agent", "candidate")


def test_the_users_own_edit_through_their_personal_key_is_theirs(world):
    written = world.agent_http.post("/memories", _fact()).json()
    response = world.alice_http.patch(
        f"/memories/{written['id']}", {"content": "Works at Initech"}, user="alice"
    )
    assert response.status_code == 200
    assert response.json()["source"] == "user"


def test_another_workspace_user_or_mode_cannot_rewrite_a_user_stated_memory(world):
    said = world.alice_http.post("/memories", _fact(source="user")).json()
    path = f"/memories/{said['id']}"
    edit = {"content": "Works at Evil Corp"}
    assert world.stranger_http.patch(path, edit, user="alice").status_code == 404
    assert world.agent_http.patch(path, edit, user="bob").status_code == 404
    assert world.agent_http.patch(path, edit, user="alice", mode="work").status_code == 404
    unchanged = world.alice_http.get(path, user="alice").json()
    assert (unchanged["content"], unchanged["source"], unchanged["confidence"]) == (
        "Works at Acme",
        "user",
        "high",
    )
