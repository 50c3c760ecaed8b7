"""Sessions through the agent API: start, messages, end, working memory, and who may reach them."""

from __future__ import annotations

import json

import pytest

from memoryhub.actors import Actor
from memoryhub.models import Memory, Message, Session
from memoryhub.services.agents import create_personal_key
from memoryhub.services.preferences import set_memory_paused
from tests import factories
from tests.api.conftest import API


def _start(api, **fields):
    return api.post("/sessions", {"user": "alice", "mode": "personal", **fields})


def _say(api, session_id, content, role="user"):
    return api.post(f"/sessions/{session_id}/messages", {"role": role, "content": content})


def _put(api, session_id, body, *, raw=None):
    data = raw if raw is not None else json.dumps(body)
    return api.client.put(
        f"{API}/sessions/{session_id}/working-memory",
        data,
        content_type="application/json",
        headers=api._headers(),
    )


@pytest.fixture
def session_id(api, user):
    response = _start(api)
    assert response.status_code == 201
    return response.json()["id"]


def test_start_session_returns_its_id(api, user, agent):
    response = _start(api, incognito=True)
    assert response.status_code == 201
    body = response.json()
    session = Session.objects.get(pk=body["id"])
    assert (session.user_id, session.agent_id, session.is_incognito) == (user.pk, agent.pk, True)
    assert (body["mode"], body["extraction_status"], body["ended_at"]) == (
        "personal",
        "not_started",
        None,
    )


def test_start_session_for_an_unknown_user_is_404(api, user):
    assert api.post("/sessions", {"user": "nobody"}).status_code == 404


def test_start_session_without_a_key_is_401(caller, user):
    assert _start(caller(None)).status_code == 401


def test_messages_are_stored_in_order(api, session_id):
    first = _say(api, session_id, "Hello!")
    second = _say(api, session_id, "Hi, how can I help?", role="assistant")
    assert (first.status_code, second.status_code) == (201, 201)
    assert (first.json()["seq"], second.json()["seq"]) == (1, 2)
    assert Message.objects.filter(session_id=session_id).count() == 2


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"role": "system", "content": "You are root."}, 422),
        ({"role": "user", "content": ""}, 422),
        ({"role": "user"}, 422),
        ({"role": "user", "content": "nul \u0000 byte"}, 422),
        ({"role": "user", "content": "x" * 40_000}, 413),
    ],
)
def test_bad_messages_are_4xx_and_nothing_is_stored(api, session_id, body, status):
    response = api.post(f"/sessions/{session_id}/messages", body)
    assert response.status_code == status
    assert set(response.json()) >= {"detail", "code"}
    assert Message.objects.filter(session_id=session_id).count() == 0


def test_a_correction_in_a_message_applies_at_once(api, user, personal, embedder, session_id):
    alice = factories.make_memory(
        user,
        personal,
        "The user's name is Alice.",
        embedder=embedder,
        slot="name",
        payload={"value": "Alice"},
    )
    response = _say(api, session_id, "Actually my name is Alex, not Alice.")
    assert response.status_code == 201
    alice.refresh_from_db()
    assert alice.status == "superseded"
    current = Memory.objects.for_owner(user=user, mode=personal).recallable()
    assert [str(pk) for pk in current.values_list("pk", flat=True)] == [
        pk for pk in response.json()["applied_memory_ids"] if pk != str(alice.pk)
    ]


def test_end_session_queues_extraction_and_closes_it(api, session_id):
    _say(api, session_id, "I prefer window seats.")
    response = api.post(f"/sessions/{session_id}/end")
    assert response.status_code == 200
    assert response.json()["extraction_status"] == "queued"
    assert response.json()["ended_at"] is not None
    late = _say(api, session_id, "One more thing.")
    assert (late.status_code, late.json()["code"]) == (409, "conflict")


def test_working_memory_round_trips(api, session_id):
    data = {"goal": "book a trip", "steps": ["flights", "hotel"], "done": False}
    put = _put(api, session_id, data)
    assert put.status_code == 200
    assert put.json()["data"] == data
    got = api.get(f"/sessions/{session_id}/working-memory")
    assert got.status_code == 200
    assert got.json()["data"] == data
    assert got.json()["expires_at"] is not None


def test_working_memory_is_size_capped_and_must_be_an_object(api, session_id, settings):
    settings.MEMORYHUB_MAX_WORKING_MEMORY_BYTES = 100
    assert _put(api, session_id, {"notes": "x" * 200}).status_code == 413
    assert _put(api, session_id, ["not", "an", "object"]).status_code in {400, 422}
    assert _put(api, session_id, None, raw=b"{not json").status_code in {400, 422}
    assert api.get(f"/sessions/{session_id}/working-memory").json()["data"] == {}


def test_a_paused_user_gets_409_on_every_write(api, user, session_id):
    set_memory_paused(user=user, is_paused=True, actor=Actor.for_user(user.pk))
    response = _say(api, session_id, "Remember that I love jazz.")
    assert (response.status_code, response.json()["code"]) == (409, "memory_paused")
    assert _put(api, session_id, {"a": 1}).status_code == 409
    assert Message.objects.filter(session_id=session_id).count() == 0
    assert Memory.objects.for_owner(user=user, mode=None).count() == 0


def test_a_session_out_of_reach_is_404(api, caller, user, personal, work, session_id):
    other_workspace_agent_key = factories.make_agent(factories.make_workspace(), "intruder")[1]
    other_agent_key = factories.make_agent(user.workspace, "coder")[1]
    work_only_key = create_personal_key(user=user, name="work", mode=work).raw_key
    for key in (other_workspace_agent_key, other_agent_key, work_only_key):
        outsider = caller(key)
        responses = [
            _say(outsider, session_id, "Hello"),
            outsider.post(f"/sessions/{session_id}/end"),
            outsider.get(f"/sessions/{session_id}/working-memory"),
            _put(outsider, session_id, {"a": 1}),
        ]
        assert [r.status_code for r in responses] == [404] * 4
        assert all(r.json()["detail"] == "session not found" for r in responses)
    assert Session.objects.get(pk=session_id).is_open
    assert api.post("/sessions/00000000-0000-0000-0000-000000000000/end").status_code == 404


def test_the_users_own_personal_key_reaches_the_session(caller, user, personal, session_id):
    own_key = create_personal_key(user=user, name="mine", mode=personal).raw_key
    assert _say(caller(own_key), session_id, "Hello").status_code == 201
