"""POST /search and POST /context: hybrid recall and context assembly over the agent API."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memoryhub.actors import Actor
from memoryhub.fencing import FENCE_CLOSE
from memoryhub.services.access import flush_memory_access
from memoryhub.services.agents import create_personal_key
from memoryhub.services.preferences import block_agent
from memoryhub.services.sessions import add_message, start_session
from tests import factories


@pytest.fixture(autouse=True)
def _empty_access_buffer(db):
    flush_memory_access()
    yield
    flush_memory_access()


def test_search_returns_the_best_memories_first_with_their_scores(api, user, personal, embedder):
    factories.make_memory(user, personal, "Alice is allergic to peanuts.", embedder=embedder)
    factories.make_memory(user, personal, "Alice's locker code is QX7731.", embedder=embedder)
    body = {"user": "alice", "query": "locker QX7731", "k": 2, "min_score": None}
    response = api.post("/search", body)
    assert response.status_code == 200
    items = response.json()["results"]
    assert [item["content"] for item in items][0] == "Alice's locker code is QX7731."
    assert items[0]["score"] >= items[1]["score"]
    assert items[0]["lexical"] > 0
    assert {"cosine", "freshness", "kind", "importance"} <= set(items[0])


def test_search_filters_by_kind_and_topic(api, user, personal, embedder):
    factories.make_memory(
        user, personal, "Trip to Oslo with Ana.", kind="episode", embedder=embedder
    )
    factories.make_memory(user, personal, "Ana likes trains.", kind="preference", embedder=embedder)
    body = {"user": "alice", "query": "Ana", "kinds": ["episode"]}
    assert [i["content"] for i in api.post("/search", body).json()["results"]] == [
        "Trip to Oslo with Ana."
    ]
    body = {"user": "alice", "query": "Ana", "topics": ["trains"]}
    assert [i["content"] for i in api.post("/search", body).json()["results"]] == [
        "Ana likes trains."
    ]


def test_search_stays_in_its_mode(api, user, personal, work, embedder):
    factories.make_memory(user, work, "Alice leads the billing team.", embedder=embedder)
    assert api.post("/search", {"user": "alice", "query": "billing"}).json()["results"] == []
    work_items = api.post("/search", {"user": "alice", "mode": "work", "query": "billing"})
    assert len(work_items.json()["results"]) == 1


def test_search_leaves_out_memories_under_the_relevance_floor(api, user, personal, embedder):
    factories.make_memory(user, personal, "Alice is allergic to peanuts.", embedder=embedder)
    factories.make_memory(user, personal, "Alice plays the cello.", embedder=embedder)
    found = api.post("/search", {"user": "alice", "query": "peanut allergy"}).json()
    assert [item["content"] for item in found["results"]] == ["Alice is allergic to peanuts."]
    assert found["no_close_match"] is False
    assert all(item["score"] >= 0.25 for item in found["results"])
    unfloored = {"user": "alice", "query": "peanut allergy", "min_score": None}
    assert len(api.post("/search", unfloored).json()["results"]) == 2


def test_search_says_when_nothing_is_a_close_match(api, user, personal, work, embedder):
    factories.make_memory(user, personal, "Alice is allergic to peanuts.", embedder=embedder)
    found = api.post("/search", {"user": "alice", "query": "quantum zebra"}).json()
    assert found == {"results": [], "no_close_match": True}
    strict = {"user": "alice", "query": "peanuts", "min_score": 1.9}
    assert api.post("/search", strict).json()["no_close_match"] is True
    # The close match of another mode does not count.
    other_mode = {"user": "alice", "mode": "work", "query": "peanuts"}
    assert api.post("/search", other_mode).json()["no_close_match"] is True


def test_the_search_schema_documents_the_floor(api):
    schema = api.get("/openapi.json").json()["components"]["schemas"]
    assert "min_score" in schema["SearchIn"]["properties"]
    assert "no_close_match" in schema["SearchOut"]["required"]


@pytest.mark.parametrize(
    "body",
    [
        {"user": "alice"},
        {"user": "alice", "query": ""},
        {"user": "alice", "query": "   "},
        {"user": "alice", "query": "x", "k": 0},
        {"user": "alice", "query": "x", "k": 101},
        {"user": "alice", "query": "x", "kinds": ["gossip"]},
        {"user": "alice", "query": "x", "since": "2024-02-01T00:00:00Z", "until": "2024-01-01"},
        {"user": "alice", "query": "x\u0000"},
        {"query": "x"},
        {"user": "alice", "query": "x", "min_score": 5},
        {"user": "alice", "query": "x", "min_score": "high"},
    ],
)
def test_bad_search_input_is_422_with_the_error_shape(api, user, body):
    response = api.post("/search", body)
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_input"


def test_search_cannot_reach_another_workspaces_user_or_a_blocking_user(api, agent, user, embedder):
    stranger = factories.make_user(external_id="stranger")
    factories.make_memory(stranger, factories.mode_of(stranger), "secret", embedder=embedder)
    assert api.post("/search", {"user": "stranger", "query": "secret"}).status_code == 404
    block_agent(user=user, agent=agent, actor=Actor.for_user(user.pk))
    response = api.post("/search", {"user": "alice", "query": "anything"})
    assert (response.status_code, response.json()["code"]) == (403, "agent_blocked")


def test_a_personal_key_searches_only_its_own_user(caller, user, other_user, embedder):
    factories.make_memory(user, factories.mode_of(user), "Alice sings.", embedder=embedder)
    personal_key = caller(create_personal_key(user=user, name="cli").raw_key)
    assert (
        len(personal_key.post("/search", {"user": "alice", "query": "sing"}).json()["results"]) == 1
    )
    assert personal_key.post("/search", {"user": "bob", "query": "sing"}).status_code == 404


def test_search_and_context_need_a_key(caller, user):
    anonymous = caller(None)
    assert anonymous.post("/search", {"user": "alice", "query": "x"}).status_code == 401
    assert anonymous.post("/context", {"user": "alice", "message": "x"}).status_code == 401


def test_context_returns_ordered_blocks_with_untrusted_ones_fenced(
    api, agent, user, personal, embedder
):
    factories.make_memory(
        user, personal, "Alice flew to Lisbon in 2022.", kind="episode", embedder=embedder
    )
    response = api.post("/context", {"user": "alice", "message": "Tips for my Lisbon trip?"})
    assert response.status_code == 200
    body = response.json()
    keys = [block["key"] for block in body["blocks"]]
    assert keys[0] == "platform_rules"
    assert keys[-1] == "message"
    memories = next(block for block in body["blocks"] if block["key"] == "memories")
    assert (memories["role"], memories["trusted"], memories["layer"]) == ("user", False, 6)
    assert memories["text"].endswith(FENCE_CLOSE)
    assert len(memories["memory_ids"]) == 1
    assert body["total_tokens"] == sum(block["tokens"] for block in body["blocks"])
    assert body["budget_tokens"] == agent.token_budget
    assert body["dropped"] == []


def test_context_reports_what_a_small_budget_dropped(api, user, personal, embedder):
    factories.make_memory(
        user, personal, "Alice flew to Lisbon in 2022.", kind="episode", embedder=embedder
    )
    body = api.post("/context", {"user": "alice", "message": "Lisbon?", "budget_tokens": 10}).json()
    assert [block["key"] for block in body["blocks"]] == ["platform_rules", "message"]
    assert body["is_over_budget"] is True
    dropped = {entry["key"]: entry for entry in body["dropped"]}
    assert "date" in dropped
    assert any(entry["layer"] == 6 and entry["memory_ids"] for entry in body["dropped"])


def test_context_in_a_session_brings_the_thread(api, agent, user, personal, embedder):
    session = start_session(user=user, mode=personal, actor=Actor.system("tests"), agent=agent)
    add_message(
        session=session,
        role="user",
        content="My cat is called Miso.",
        actor=Actor.system("tests"),
        embedder=embedder,
    )
    body = api.post(
        "/context",
        {"user": "alice", "message": "What is my cat called?", "session": str(session.pk)},
    ).json()
    recent = next(block for block in body["blocks"] if block["key"] == "thread_recent")
    assert "My cat is called Miso." in recent["text"]


def test_context_cannot_use_another_users_or_an_unknown_session(
    api, agent, user, other_user, embedder
):
    theirs = start_session(
        user=other_user, mode=factories.mode_of(other_user), actor=Actor.system("t"), agent=agent
    )
    for session_id in (str(theirs.pk), str(uuid.uuid4())):
        response = api.post("/context", {"user": "alice", "message": "hi", "session": session_id})
        assert (response.status_code, response.json()["code"]) == (404, "not_found")


@pytest.mark.parametrize(
    "body",
    [
        {"user": "alice"},
        {"user": "alice", "message": ""},
        {"user": "alice", "message": "   "},
        {"user": "alice", "message": "hi", "budget_tokens": -1},
        {"user": "alice", "message": "hi", "budget_tokens": 10**9},
        {"user": "alice", "message": "hi", "session": "not-a-uuid"},
    ],
)
def test_bad_context_input_is_422(api, user, body):
    response = api.post("/context", body)
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_input"


def test_context_query_count_does_not_grow_with_memories(api, user, personal, embedder):
    factories.make_memory(user, personal, "Alice likes figs.", kind="preference", embedder=embedder)
    api.post("/context", {"user": "alice", "message": "What do I like?"})  # Warm up the key.

    def count():
        flush_memory_access()
        with CaptureQueriesContext(connection) as captured:
            api.post("/context", {"user": "alice", "message": "What do I like?"})
        return len(captured.captured_queries)

    few = count()
    for n in range(5):
        factories.make_memory(
            user, personal, f"Alice likes fruit {n}.", kind="preference", embedder=embedder
        )
    assert count() == few
