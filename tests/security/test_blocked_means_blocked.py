"""Blocked means blocked: every route refuses a blocked agent, and user references never shadow."""

from __future__ import annotations

import uuid

import httpx2

from memoryhub.actors import Actor
from memoryhub.services.preferences import block_agent
from tests import factories

from .conftest import API

# Routes that name no user: the workspace graph's insights are workspace-wide, not one user's.
NAMES_NO_USER = {
    ("GET", "/graph/insights"),
    # The workspace's webhooks (issue 31): no user's memory, so no user's block applies.
    ("GET", "/webhooks"),
    ("POST", "/webhooks"),
    ("POST", "/webhooks/{webhook_id}/rotate"),
    ("POST", "/webhooks/{webhook_id}/disable"),
    ("POST", "/webhooks/{webhook_id}/enable"),
    ("GET", "/webhooks/{webhook_id}/deliveries"),
    ("POST", "/webhooks/deliveries/{delivery_id}/replay"),
    # The review queue: reviewer keys only (an agent's key is 403 `forbidden` there).
    ("GET", "/review/candidates"),
    ("GET", "/review/candidates/{candidate_id}"),
    ("POST", "/review/candidates/{candidate_id}/approve"),
    ("POST", "/review/candidates/{candidate_id}/reject"),
    ("POST", "/review/candidates/{candidate_id}/answer-for-user"),
    ("POST", "/review/candidates/{candidate_id}/needs-user"),
    # A multipart upload, which this JSON harness cannot send: a blocked agent's real upload is
    # refused in tests/api/test_imports_api.py (test_a_blocked_agent_cannot_import).
    ("POST", "/imports"),
}


# The block is checked before the import is looked up: even a made-up id gets 403.
NO_SUCH_IMPORT = "00000000-0000-4000-8000-000000000001"


def _requests_for_alice(ids):
    """One valid request per (method, path) of the API, each naming alice or one of her things."""
    alice = {"user": "alice", "mode": "personal"}
    signals = {"retrieval": 0.9, "policy": 0.9, "completeness": 0.9, "memory": 0.9}
    return {
        ("POST", "/users"): ("/users", {}, {"external_id": "alice"}),
        ("GET", "/users/{external_id}"): ("/users/alice", {}, None),
        ("POST", "/users/{external_id}/link"): (
            "/users/alice/link",
            {},
            {"email": "a@example.com"},
        ),
        ("POST", "/memories"): ("/memories", {}, {**alice, "kind": "fact", "content": "x"}),
        ("GET", "/memories"): ("/memories", alice, None),
        ("POST", "/memories/batch"): (
            "/memories/batch",
            {},
            {**alice, "items": [{"kind": "fact", "content": "x"}]},
        ),
        ("GET", "/memories/{memory_id}"): (f"/memories/{ids['memory']}", alice, None),
        ("PATCH", "/memories/{memory_id}"): (f"/memories/{ids['memory']}", alice, {"content": "x"}),
        ("DELETE", "/memories/{memory_id}"): (f"/memories/{ids['memory']}", alice, None),
        ("POST", "/forget"): ("/forget", {}, {**alice, "memory_ids": [ids["memory"]]}),
        ("GET", "/forget/tasks/{task_id}"): (
            "/forget/tasks/00000000-0000-4000-8000-000000000000",
            alice,
            None,
        ),
        ("POST", "/journal"): ("/journal", {}, {**alice, "summary": "x", "type": "alert"}),
        ("GET", "/journal"): ("/journal", alice, None),
        ("POST", "/journal/{entry_id}/resolve"): (f"/journal/{ids['entry']}/resolve", alice, None),
        ("GET", "/memories/{memory_id}/history"): (
            f"/memories/{ids['memory']}/history",
            alice,
            None,
        ),
        ("GET", "/export"): ("/export", alice, None),
        ("GET", "/profile"): ("/profile", alice, None),
        ("GET", "/open-items"): ("/open-items", alice, None),
        ("POST", "/sessions"): ("/sessions", {}, alice),
        ("POST", "/sessions/{session_id}/messages"): (
            f"/sessions/{ids['session']}/messages",
            {},
            {"role": "user", "content": "hello"},
        ),
        ("POST", "/sessions/{session_id}/end"): (f"/sessions/{ids['session']}/end", {}, {}),
        ("PUT", "/sessions/{session_id}/working-memory"): (
            f"/sessions/{ids['session']}/working-memory",
            {},
            {"notes": "x"},
        ),
        ("GET", "/sessions/{session_id}/working-memory"): (
            f"/sessions/{ids['session']}/working-memory",
            {},
            None,
        ),
        ("POST", "/search"): ("/search", {}, {**alice, "query": "anything"}),
        ("POST", "/context"): ("/context", {}, {**alice, "message": "anything"}),
        ("POST", "/answers"): (
            "/answers",
            {},
            {**alice, "question": "q", "answer": "a", "signals": signals},
        ),
        ("POST", "/answers/{answer_id}/feedback"): (
            f"/answers/{ids['answer']}/feedback",
            {},
            {"value": "down"},
        ),
        ("POST", "/knowledge/candidates"): (
            "/knowledge/candidates",
            {},
            {**alice, "statement": "x"},
        ),
        ("GET", "/imports/{import_id}"): (f"/imports/{NO_SUCH_IMPORT}", alice, None),
        ("POST", "/imports/{import_id}/keep"): (f"/imports/{NO_SUCH_IMPORT}/keep", {}, alice),
        ("POST", "/imports/{import_id}/discard"): (
            f"/imports/{NO_SUCH_IMPORT}/discard",
            {},
            alice,
        ),
    }


def _alices_things(world):
    """A memory, session, journal entry and answer of alice's, made by the agent before the block."""
    http = world.agent_http
    memory = http.post("/memories", {"user": "alice", "kind": "fact", "content": "Works at Acme"})
    session = http.post("/sessions", {"user": "alice"})
    entry = http.post("/journal", {"user": "alice", "summary": "Said hi", "type": "action"})
    signals = {"retrieval": 0.1, "policy": 0.1, "completeness": 0.1, "memory": 0.1}
    answer = http.post(
        "/answers", {"user": "alice", "question": "q", "answer": "a", "signals": signals}
    )
    for response in (memory, session, entry, answer):
        assert response.status_code in {200, 201}, response.text
    return {
        "memory": memory.json()["id"],
        "session": session.json()["id"],
        "entry": entry.json()["id"],
        "answer": answer.json()["id"],
    }


def _schema_operations(base_url):
    schema = httpx2.get(f"{base_url}{API}/openapi.json").json()
    return {
        (method.upper(), path.removeprefix(API))
        for path, operations in schema["paths"].items()
        for method in operations
    }


def test_a_blocked_agent_gets_403_on_every_route_of_the_schema(world, live_server):
    ids = _alices_things(world)
    block_agent(user=world.alice, agent=world.agent, actor=Actor.for_user(world.alice.pk))
    requests = _requests_for_alice(ids)
    # Every operation the API documents is tried: a new route fails here until it is listed.
    assert _schema_operations(live_server.url) - NAMES_NO_USER == set(requests)
    answers = {}
    for (method, _), (path, params, body) in sorted(requests.items()):
        response = world.agent_http.request(method, path, body, **params)
        answers[f"{method} {path}"] = (response.status_code, response.json().get("code"))
        assert "alice@example.com" not in response.text
        assert "Acme" not in response.text
    assert answers == dict.fromkeys(answers, (403, "agent_blocked"))


def test_a_block_stops_only_that_agent_for_only_that_user(world):
    memory = world.agent_http.post("/memories", {"user": "alice", "kind": "fact", "content": "x"})
    block_agent(user=world.alice, agent=world.agent, actor=Actor.for_user(world.alice.pk))
    path = f"/memories/{memory.json()['id']}"
    assert world.agent_http.get(path, user="alice").status_code == 403
    assert world.other_agent_http.get(path, user="alice").status_code == 200
    assert world.agent_http.get("/profile", user="bob").status_code == 200
    assert world.alice_http.get(path, user="alice").status_code == 200


def test_post_users_of_a_blocking_user_is_403_without_their_email_or_modes(world):
    block_agent(user=world.alice, agent=world.agent, actor=Actor.for_user(world.alice.pk))
    response = world.agent_http.post("/users", {"external_id": "alice"})
    assert response.status_code == 403
    assert set(response.json()) == {"detail", "code"}
    assert response.json()["code"] == "agent_blocked"
    assert world.other_agent_http.post("/users", {"external_id": "alice"}).status_code == 200


def test_an_external_id_shaped_like_a_uuid_cannot_shadow_another_user(world):
    alice_id = str(world.alice.pk)
    # A row left from before the rule: its external id spells alice's UUID.
    shadow = factories.make_user(workspace=world.workspace, external_id=alice_id)
    for _ in range(3):
        response = world.agent_http.get(f"/users/{alice_id}")
        assert (response.status_code, response.json()["id"]) == (200, alice_id)
    assert world.agent_http.get(f"/users/{shadow.pk}").json()["external_id"] == alice_id


def test_an_agent_cannot_create_a_user_whose_external_id_is_another_users_uuid(world):
    response = world.agent_http.post("/users", {"external_id": str(world.bob.pk)})
    assert (response.status_code, response.json()["code"]) == (409, "conflict")
    assert "bob@example.com" not in response.text
    assert world.agent_http.get(f"/users/{world.bob.pk}").json()["id"] == str(world.bob.pk)


def test_an_external_id_shaped_like_a_uuid_of_nobody_works_as_an_external_id(world):
    external_id = str(uuid.uuid4())
    created = world.agent_http.post("/users", {"external_id": external_id})
    assert created.status_code == 201
    fetched = world.agent_http.get(f"/users/{external_id}")
    assert (fetched.status_code, fetched.json()["id"]) == (200, created.json()["id"])
    assert world.agent_http.post("/users", {"external_id": external_id}).status_code == 200


def test_a_uuid_of_another_workspaces_user_names_nobody_of_this_one(world):
    stranger = factories.make_user(workspace=factories.make_workspace(), external_id="carol")
    response = world.agent_http.get(f"/users/{stranger.pk}")
    assert response.json() == {"detail": "user not found", "code": "not_found"}
    # Nor can an agent reach them by giving one of its own users the stranger's UUID.
    assert world.agent_http.post("/users", {"external_id": str(stranger.pk)}).status_code == 201
    fetched = world.agent_http.get(f"/users/{stranger.pk}").json()
    assert (fetched["external_id"], fetched["display_name"]) == (str(stranger.pk), "")
    assert fetched["id"] != str(stranger.pk)
