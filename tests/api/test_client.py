"""memoryhub.client against a live server: the README's agent loop, and errors as ApiError."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memoryhub.client import ApiError, MemoryHubClient
from tests import factories


@pytest.fixture
def hub(live_server, transactional_db):
    workspace = factories.make_workspace()
    _, key = factories.make_agent(workspace, "assistant")
    return MemoryHubClient(live_server.url, key)


def test_an_agent_loop_remembers_talks_and_gets_context(hub, embedder):
    user = hub.create_user("u-1", display_name="Dana")
    assert user["external_id"] == "u-1"
    peanuts = hub.remember("u-1", "Dana is allergic to peanuts", kind="fact", importance="high")
    hub.remember_many("u-1", [{"kind": "preference", "content": "Dana likes green tea"}])
    assert peanuts.confidence == "medium"
    assert [m.content for m in hub.list_memories("u-1").items] == [
        "Dana likes green tea",
        "Dana is allergic to peanuts",
    ]
    results = hub.search("u-1", "what food is dangerous for Dana?", k=1)
    assert [r.id for r in results] == [peanuts.id]
    assert [m.content for m in hub.profile("u-1")["facts"]] == ["Dana is allergic to peanuts"]
    session_id = hub.start_session("u-1")
    hub.add_message(session_id, "user", "Can you suggest a snack?")
    context = hub.context("u-1", "Can you suggest a snack?", session=session_id)
    assert "peanuts" in context.text
    assert peanuts.id in context.memory_ids
    hub.end_session(session_id)
    note = hub.note("u-1", "Suggested rice crackers", type="recommendation", key="snack")
    assert [e["id"] for e in hub.journal("u-1", is_unresolved_only=True)] == [note["id"]]
    receipt = hub.forget("u-1", memory_ids=[peanuts.id])
    assert receipt.forgotten == 1
    assert [m.content for m in hub.list_memories("u-1").items] == ["Dana likes green tea"]


def test_error_answers_become_api_errors(hub, live_server):
    with pytest.raises(ApiError) as not_found:
        hub.profile("nobody")
    assert (not_found.value.status, not_found.value.code) == (404, "not_found")
    with pytest.raises(ApiError) as bad_kind:
        hub.remember("nobody", "x", kind="wish")
    assert (bad_kind.value.status, bad_kind.value.code) == (422, "invalid_input")
    with pytest.raises(ApiError) as unauthenticated:
        MemoryHubClient(live_server.url, "mh_wrong").profile("nobody")
    assert unauthenticated.value.status == 401


def test_remember_with_an_idempotency_key_returns_the_first_write_on_a_retry(hub):
    hub.create_user("u-1")
    first = hub.remember("u-1", "Dana lives in Lyon", idempotency_key="write-1")
    retry = hub.remember("u-1", "Dana lives in Lyon", idempotency_key="write-1")
    assert retry.id == first.id
    batch = hub.remember_many(
        "u-1", [{"kind": "preference", "content": "Dana likes tea"}], idempotency_key="write-2"
    )
    batch_retry = hub.remember_many(
        "u-1", [{"kind": "preference", "content": "Dana likes tea"}], idempotency_key="write-2"
    )
    assert [m.id for m in batch_retry] == [m.id for m in batch]
    assert len(hub.list_memories("u-1").items) == 2
    with pytest.raises(ApiError) as reused:
        hub.remember("u-1", "Dana lives in Porto", idempotency_key="write-1")
    assert (reused.value.status, reused.value.code) == (422, "idempotency_key_reused")


def test_create_user_link_returns_a_one_time_dashboard_link(hub, live_server):
    hub.create_user("u-1")
    link = hub.create_user_link("u-1", email="dana@example.com")
    assert link.url.startswith(f"{live_server.url}/dashboard/link/")
    assert timedelta(hours=23) < link.expires_at - timezone.now() <= timedelta(hours=24)
    assert hub.create_user_link("u-1", email="dana@example.com").url != link.url
    with pytest.raises(ApiError) as unknown:
        hub.create_user_link("nobody", email="dana@example.com")
    assert (unknown.value.status, unknown.value.code) == (404, "not_found")


def test_a_large_forget_by_query_comes_back_as_a_task_with_its_receipt(hub, settings):
    settings.MEMORYHUB_FORGET_IN_BACKGROUND_ABOVE = 1
    hub.create_user("u-9")
    hub.remember("u-9", "Dana is allergic to peanuts", kind="fact")
    hub.remember("u-9", "Dana has a peanut allergy", kind="fact")

    receipt = hub.forget("u-9", query="peanut allergy")

    assert receipt.task_id is not None and receipt.forgotten == 0
    assert hub.forget_task("u-9", receipt.task_id)["status"] == "queued"
    with pytest.raises(ApiError) as missing:
        hub.forget_task("u-9", receipt.task_id, mode="work")
    assert missing.value.status == 404
