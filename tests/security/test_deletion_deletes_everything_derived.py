"""Deletion deletes everything derived: every deletion route, one cascade, no canary left.

Each test seeds one user's data in every table through the live server's API (memories, a
version, messages, working memory, extracted facts, journal notes, answers with and without
session or context ids, review and knowledge candidates, graph nodes and edges), deletes it by
one route, then scans every column, a pg_dump and whatever the keys still in the database
decrypt, for the canary.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx2
import pytest
from django.db import connection
from django.utils import timezone

from memoryhub import graph
from memoryhub.audit.log import verify_chain
from memoryhub.errors import KeyDestroyedError
from memoryhub.keyring import cipher_for
from memoryhub.models import (
    AnswerRecord,
    AuditEntry,
    GraphNode,
    JournalEntry,
    LearningCandidate,
    Memory,
    Message,
    Session,
    User,
    UserKey,
)
from memoryhub.queries.export import export_user_data
from memoryhub.services.ingest import run_extraction
from memoryhub.services.users import ensure_mode

from .canary_scan import blind_index_holding, columns_holding, decryptable_holding, dump_holds

CANARY = "quokka7f3e9b"
SURVIVOR = "wombat41c2d8"  # Bob's word, and Alice's in her other mode: it must stay.
LOW = {"retrieval": 0.1, "policy": 1.0, "completeness": 0.5, "memory": 0.2}
HIGH = {"retrieval": 0.9, "policy": 1.0, "completeness": 0.9, "memory": 0.9}

pytestmark = pytest.mark.django_db(transaction=True)


@dataclass
class Seed:
    memory_id: str
    answer_ids: list[str]


def _created(response: httpx2.Response, status: int = 201) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def _answer(http, user: str, mode: str, question: str, answer: str, **fields: Any) -> str:
    body = {"user": user, "mode": mode, "question": question, "answer": answer, **fields}
    answer_id = _created(http.post("/answers", {"signals": LOW, **body}))["id"]
    graph.record_answer(answer_id=answer_id)  # What the queued graph task does.
    return answer_id


def seed_from_a_memory(http, *, user: str = "alice", mode: str = "personal") -> Seed:
    """A memory with the canary and everything built on it: an answer, its candidate, graph."""
    memory = _created(
        http.post(
            "/memories",
            {
                "user": user,
                "mode": mode,
                "kind": "fact",
                "content": f"Alice is allergic to {CANARY}",
                "payload": {"note": CANARY},
            },
        )
    )
    edited = http.patch(
        f"/memories/{memory['id']}",
        {"content": f"Alice is badly allergic to {CANARY}"},
        user=user,
        mode=mode,
    )
    assert edited.status_code == 200, edited.text
    built_on = _answer(
        http,
        user,
        mode,
        "What must I avoid?",
        f"Avoid anything with {CANARY}.",
        context_ids=[memory["id"]],
    )
    return Seed(memory_id=memory["id"], answer_ids=[built_on])


def seed_the_scope(http, embedder, *, user: str = "alice", mode: str = "personal") -> Seed:
    """The canary in every table one user's mode can reach."""
    seed = seed_from_a_memory(http, user=user, mode=mode)
    session = _created(http.post("/sessions", {"user": user, "mode": mode}))["id"]
    for role, text in [
        ("user", f"I'm allergic to {CANARY}."),
        ("assistant", f"Noted: no {CANARY} for you."),
    ]:
        _created(http.post(f"/sessions/{session}/messages", {"role": role, "content": text}))
    put = http.request("PUT", f"/sessions/{session}/working-memory", {"avoid": CANARY})
    assert put.status_code == 200, put.text
    in_session = _answer(
        http, user, mode, f"Is {CANARY} in this dish?", "I cannot tell.", session=session
    )
    _created(http.post(f"/sessions/{session}/end"), 200)
    run_extraction(session_id=session, embedder=embedder)  # What the queued extraction does.
    bare = _answer(
        http,
        user,
        mode,
        f"Where can I buy {CANARY}-free bread?",
        "At the bakery.",
        items=[{"type": "item", "name": "Bakery Soleil"}],
    )
    feedback = http.post(
        f"/answers/{bare}/feedback", {"value": "down", "comment": f"I said no {CANARY}!"}
    )
    assert feedback.status_code == 200, feedback.text
    _created(
        http.post(
            "/knowledge/candidates",
            {"user": user, "mode": mode, "statement": f"Some users avoid {CANARY}."},
        )
    )
    _created(
        http.post(
            "/journal",
            {
                "user": user,
                "mode": mode,
                "type": "alert",
                "summary": f"Warned about {CANARY} in the menu",
                "key": f"allergy-{CANARY}",
            },
        )
    )
    return Seed(seed.memory_id, [*seed.answer_ids, in_session, bare])


def seed_the_survivors(world, embedder) -> None:
    """What no deletion of Alice's personal mode may touch: Bob's data, Alice's work mode."""
    for user, mode in [("bob", "personal"), ("alice", "work")]:
        _created(
            world.agent_http.post(
                "/memories",
                {"user": user, "mode": mode, "kind": "fact", "content": f"Likes {SURVIVOR}"},
            )
        )
        _answer(world.agent_http, user, mode, f"Where is {SURVIVOR}?", "Here.", signals=HIGH)


def assert_no_canary_anywhere() -> None:
    assert columns_holding(CANARY) == []
    assert decryptable_holding(CANARY) == []
    assert blind_index_holding(CANARY) == []
    assert not dump_holds(CANARY)


def assert_survivors_kept(world) -> None:
    assert len(decryptable_holding(SURVIVOR)) >= 4  # Two memories, two answers (and more).
    for user in (world.bob, world.alice):
        assert AnswerRecord.objects.filter(user=user).exists()


@dataclass
class Browser:
    """A signed-in browser on the live server's pages: session cookie plus CSRF token."""

    base_url: str
    cookies: dict[str, str]

    def post_form(self, path: str, data: dict[str, str]) -> httpx2.Response:
        page = httpx2.get(self.base_url + path, cookies=self.cookies, timeout=60)
        assert page.status_code == 200, page.text
        cookies = {**self.cookies, **dict(page.cookies)}
        return httpx2.post(
            self.base_url + path,
            data=data,
            cookies=cookies,
            headers={"X-CSRFToken": cookies["csrftoken"]},
            timeout=120,
        )


@pytest.fixture
def alice_browser(world, client, live_server) -> Browser:
    client.force_login(world.alice)
    return Browser(live_server.url, {"sessionid": client.cookies["sessionid"].value})


# --- The scan itself finds what it looks for -----------------------------------------------


def test_the_scans_find_the_canary_while_the_data_is_there(world, embedder):
    seed_the_scope(world.agent_http, embedder)
    found = decryptable_holding(CANARY)
    tables = {hit.split(".")[0] for hit in found}
    assert {
        "memoryhub_memory",
        "memoryhub_memoryversion",
        "memoryhub_message",
        "memoryhub_session",
        "memoryhub_journalentry",
        "review_answerrecord",
        "review_learningcandidate",
        "memoryhub_graphnode",
    } <= tables
    assert blind_index_holding(CANARY) != []
    world.alice.display_name = CANARY
    world.alice.save(update_fields=["display_name"])
    assert "memoryhub_user.display_name" in columns_holding(CANARY)
    assert dump_holds(CANARY)


# --- Every deletion route ------------------------------------------------------------------


def test_forget_by_topic_over_http_leaves_no_canary(world, embedder):
    seed_the_scope(world.agent_http, embedder)
    seed_the_survivors(world, embedder)
    response = world.agent_http.post("/forget", {"user": "alice", "topic": CANARY})
    assert response.status_code == 200, response.text
    counts = response.json()["counts"]
    assert counts["answer_record"] == 3
    assert counts["learning_candidate"] >= 3  # Two captured answers and the proposed fact.
    assert counts["journal"] == 1
    assert counts["graph_node"] == 6  # A query and a response per answer; items stay.
    assert_no_canary_anywhere()
    assert_survivors_kept(world)


def test_forget_by_period_over_http_leaves_no_canary(world, embedder):
    since = timezone.now() - timedelta(seconds=1)
    seed_the_scope(world.agent_http, embedder)
    seed_the_survivors(world, embedder)
    response = world.alice_http.post(
        "/forget",
        {
            "user": "alice",
            "since": since.isoformat(),
            "until": (timezone.now() + timedelta(minutes=5)).isoformat(),
        },
    )
    assert response.status_code == 200, response.text
    assert response.json()["counts"]["answer_record"] == 3
    assert_no_canary_anywhere()
    assert_survivors_kept(world)


def test_forget_by_query_takes_answers_and_journal_notes_without_ids(world, embedder):
    http = world.agent_http
    _created(
        http.post(
            "/memories",
            {"user": "alice", "kind": "fact", "content": f"Alice is allergic to {CANARY} nuts"},
        )
    )
    bare = _answer(http, "alice", "personal", f"Am I allergic to {CANARY} nuts?", "Yes, you are.")
    _created(
        http.post(
            "/journal",
            {
                "user": "alice",
                "type": "alert",
                "summary": f"Alice is allergic to {CANARY} nuts",
            },
        )
    )
    seed_the_survivors(world, embedder)
    response = http.post("/forget", {"user": "alice", "query": f"allergic to {CANARY} nuts"})
    assert response.status_code == 200, response.text
    assert not AnswerRecord.objects.filter(pk=bare).exists()
    assert not GraphNode.objects.filter(answer_id=bare).exists()
    assert not JournalEntry.objects.filter(user=world.alice).exists()
    assert decryptable_holding(CANARY) == []
    assert_survivors_kept(world)


def test_forget_by_memory_ids_takes_what_was_built_on_them(world, embedder):
    seed = seed_from_a_memory(world.agent_http)
    unrelated = _answer(world.agent_http, "alice", "personal", "What time is it?", "Noon.")
    seed_the_survivors(world, embedder)
    response = world.agent_http.post("/forget", {"user": "alice", "memory_ids": [seed.memory_id]})
    assert response.status_code == 200, response.text
    assert response.json()["counts"]["answer_record"] == 1
    assert_no_canary_anywhere()
    # Ids name memories only: an answer that was not built on them stays.
    assert AnswerRecord.objects.filter(pk=unrelated).exists()
    assert_survivors_kept(world)


def test_delete_memory_over_http_goes_through_the_cascade(world, embedder):
    seed = seed_from_a_memory(world.agent_http)
    seed_the_survivors(world, embedder)
    response = world.agent_http.delete(f"/memories/{seed.memory_id}", user="alice", mode="personal")
    assert response.status_code == 200, response.text
    assert response.json()["deleted"] == 1
    assert not AnswerRecord.objects.filter(pk__in=seed.answer_ids).exists()
    assert not LearningCandidate.objects.filter(answer_id__in=seed.answer_ids).exists()
    assert not GraphNode.objects.filter(answer_id__in=seed.answer_ids).exists()
    assert_no_canary_anywhere()
    assert_survivors_kept(world)
    again = world.agent_http.delete(f"/memories/{seed.memory_id}", user="alice", mode="personal")
    assert again.status_code == 404


def test_delete_all_of_a_mode_from_the_dashboard_leaves_no_canary(world, embedder, alice_browser):
    seed_the_scope(world.agent_http, embedder)
    seed_the_survivors(world, embedder)
    response = alice_browser.post_form(
        "/dashboard/modes/personal/delete-all/",
        {"scope": "personal", "confirmation": "delete personal"},
    )
    assert response.status_code == 302, response.text
    assert_no_canary_anywhere()
    assert_survivors_kept(world)
    personal = ensure_mode(user=world.alice, slug="personal")
    assert not AnswerRecord.objects.filter(user=world.alice, mode=personal).exists()
    assert not LearningCandidate.objects.filter(user=world.alice, mode=personal).exists()


def test_account_deletion_from_the_dashboard_leaves_no_canary(world, embedder, alice_browser):
    seed_the_scope(world.agent_http, embedder)
    ensure_mode(user=world.alice, slug=CANARY, create=True)
    seed_the_scope(world.agent_http, embedder, mode=CANARY)
    world.alice.display_name = f"Alice {CANARY}"
    world.alice.save(update_fields=["display_name"])
    bob_memories = list(
        Memory.objects.for_owner(user=world.bob, mode=None).values_list("pk", flat=True)
    )
    seed_the_survivors(world, embedder)
    alice_id = world.alice.pk
    response = alice_browser.post_form(
        "/dashboard/account/delete/", {"password": "correct horse battery staple"}
    )
    assert response.status_code == 302, response.text
    assert not User.objects.filter(pk=alice_id).exists()
    assert not UserKey.objects.filter(user_id=alice_id).exists()
    assert not Session.objects.filter(user_id=alice_id).exists()
    assert not Message.objects.filter(session__user_id=alice_id).exists()
    assert not GraphNode.objects.filter(user_id=alice_id).exists()
    assert_no_canary_anywhere()
    assert Memory.objects.for_owner(user=world.bob, mode=None).filter(
        pk__in=bob_memories
    ).count() == len(bob_memories)
    assert len(decryptable_holding(SURVIVOR)) >= 2  # Bob's memory and answer.
    assert verify_chain().is_intact
    assert AuditEntry.objects.filter(action="account.delete").count() == 1


# --- The export holds what deletion takes -----------------------------------------------


def test_the_export_includes_answers_and_candidates(world, embedder, system_actor):
    seed = seed_the_scope(world.agent_http, embedder)
    document = export_user_data(user=world.alice, actor=system_actor)
    personal = next(mode for mode in document["modes"] if mode["slug"] == "personal")
    assert sorted(a["id"] for a in personal["answers"]) == sorted(seed.answer_ids)
    bare = next(a for a in personal["answers"] if a["items"])
    assert bare["feedback"] == "down"
    assert CANARY in bare["question"] and CANARY in bare["feedback_comment"]
    kinds = sorted(c["kind"] for c in personal["review_candidates"])
    assert kinds.count("fact") == 1 and kinds.count("answer") >= 2
    assert all(
        CANARY in (c["answer"] + (c["question"] or "")) for c in personal["review_candidates"]
    )
    work = next(mode for mode in document["modes"] if mode["slug"] == "work")
    assert work["answers"] == [] and work["review_candidates"] == []


# --- Keys: one atomic step, never a fresh key for old data -----------------------------------


@pytest.fixture
def journal_deletes_fail():
    """PostgreSQL refuses to delete journal notes (as a full disk or a lost lock would fail)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION sec2_refuse() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER sec2_refuse BEFORE DELETE ON memoryhub_journalentry "
            "FOR EACH ROW EXECUTE FUNCTION sec2_refuse()"
        )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER sec2_refuse ON memoryhub_journalentry")
            cursor.execute("DROP FUNCTION sec2_refuse()")


def test_account_deletion_is_one_atomic_step(world, embedder, alice_browser, journal_deletes_fail):
    seed = seed_the_scope(world.agent_http, embedder)
    response = alice_browser.post_form(
        "/dashboard/account/delete/", {"password": "correct horse battery staple"}
    )
    assert response.status_code == 500
    # Deleting failed halfway: nothing is gone, the key least of all.
    assert UserKey.objects.filter(user=world.alice).exists()
    assert User.objects.filter(pk=world.alice.pk).exists()
    memory = world.agent_http.get(f"/memories/{seed.memory_id}", user="alice")
    assert memory.status_code == 200
    assert CANARY in memory.json()["content"]


def test_a_missing_key_for_existing_data_is_an_error_never_a_fresh_key(world):
    seed_from_a_memory(world.agent_http)
    UserKey.objects.filter(user=world.alice).delete()  # Lost out of band (a bad restore).
    with pytest.raises(KeyDestroyedError):
        cipher_for(world.alice)
    assert not UserKey.objects.filter(user=world.alice).exists()
    response = world.agent_http.get("/memories", user="alice")
    assert response.status_code == 500
    assert response.json()["code"] == "key_destroyed"
    write = world.agent_http.post(
        "/memories", {"user": "alice", "kind": "fact", "content": "written under a fresh key?"}
    )
    assert write.status_code == 500
    assert not UserKey.objects.filter(user=world.alice).exists()
    # A user with no data yet still gets a key on first use.
    assert cipher_for(world.bob).user_id == world.bob.pk
