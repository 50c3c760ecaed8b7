"""`as_of` on list, search, profile and context: what an agent would have known at that time."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.services.confidence import supersede
from memoryhub.services.forget import ForgetSelector, forget
from memoryhub.services.memories import edit_memory
from memoryhub.services.preferences import set_mode_memory_off
from tests import factories


@pytest.fixture
def timeline(user, personal, embedder):
    """A fact edited at t1, a value superseded at t2, a memory learnt at t2, each a day apart."""
    t0 = timezone.now() - timedelta(days=10)
    t1, t2 = t0 + timedelta(days=3), t0 + timedelta(days=6)
    with time_machine.travel(t0, tick=False):
        home = factories.make_memory(user, personal, "Lives in Lyon", embedder=embedder)
        job = factories.make_memory(user, personal, "Works at Acme", embedder=embedder)
    with time_machine.travel(t1, tick=False):
        edit_memory(
            user=user,
            mode=personal,
            memory_id=home.pk,
            actor=Actor.for_user(user.pk),
            embedder=embedder,
            content="Lives in Paris",
        )
    with time_machine.travel(t2, tick=False):
        supersede([job])
        factories.make_memory(user, personal, "Works at Globex", embedder=embedder)
    return {"t0": t0, "t1": t1, "t2": t2, "home": home, "job": job}


def _at(moment, hours=12):
    return (moment + timedelta(hours=hours)).isoformat()


def _contents(items):
    return sorted(item["content"] for item in items)


def test_the_list_as_of_before_an_edit_shows_the_old_text_and_after_it_the_new(api, timeline):
    before = api.get("/memories", user="alice", as_of=_at(timeline["t0"])).json()["items"]
    between = api.get("/memories", user="alice", as_of=_at(timeline["t1"])).json()["items"]
    now = api.get("/memories", user="alice").json()["items"]
    assert _contents(before) == ["Lives in Lyon", "Works at Acme"]
    assert _contents(between) == ["Lives in Paris", "Works at Acme"]
    assert _contents(now) == ["Lives in Paris", "Works at Globex"]
    # The superseded value was current then, and says so.
    acme = next(item for item in between if item["content"] == "Works at Acme")
    assert acme["status"] == "active"


def test_nothing_learnt_after_as_of_is_known_then(api, timeline):
    before_anything = timeline["t0"] - timedelta(days=1)
    assert api.get("/memories", user="alice", as_of=before_anything.isoformat()).json() == {
        "items": [],
        "next_cursor": None,
    }


def test_search_as_of_returns_the_value_of_that_time(api, timeline):
    body = {"user": "alice", "query": "where does she live", "min_score": None}
    old = api.post("/search", {**body, "as_of": _at(timeline["t0"])}).json()["results"]
    new = api.post("/search", {**body, "as_of": _at(timeline["t1"])}).json()["results"]
    assert "Lives in Lyon" in _contents(old)
    assert "Lives in Paris" not in _contents(old)
    assert "Lives in Paris" in _contents(new)
    assert "Lives in Lyon" not in _contents(new)
    job = {"user": "alice", "query": "employer work company", "min_score": None}
    then = api.post("/search", {**job, "as_of": _at(timeline["t1"])}).json()["results"]
    assert "Works at Acme" in _contents(then)
    assert "Works at Globex" not in _contents(then)


def test_the_profile_and_context_as_of_show_what_was_known_then(api, timeline):
    facts = api.get("/profile", user="alice", as_of=_at(timeline["t1"])).json()["facts"]
    assert _contents(facts) == ["Lives in Paris", "Works at Acme"]
    context = api.post(
        "/context", {"user": "alice", "message": "Where do I work?", "as_of": _at(timeline["t1"])}
    ).json()
    text = "\n".join(block["text"] for block in context["blocks"])
    assert "Works at Acme" in text
    assert "Works at Globex" not in text
    assert "Lives in Lyon" not in text
    # Dated as then: the agent would not have known today's date.
    assert f"{timeline['t1'] + timedelta(hours=12):%d %B %Y}" in text


def test_a_forgotten_memory_is_never_returned_with_any_as_of(api, user, personal, timeline):
    forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(memory_ids=(timeline["home"].pk,)),
        actor=Actor.for_user(user.pk),
    )
    for moment in (timeline["t0"], timeline["t1"], timeline["t2"]):
        listed = api.get("/memories", user="alice", as_of=_at(moment)).json()["items"]
        found = api.post(
            "/search",
            {"user": "alice", "query": "lives", "min_score": None, "as_of": _at(moment)},
        ).json()["results"]
        facts = api.get("/profile", user="alice", as_of=_at(moment)).json()["facts"]
        for items in (listed, found, facts):
            assert not any("Lives" in item["content"] for item in items)


def test_a_memory_confirmed_later_was_a_candidate_then_and_is_hidden(api, user, personal, embedder):
    from memoryhub.services.confidence import confirm_memory

    t0 = timezone.now() - timedelta(days=2)
    with time_machine.travel(t0, tick=False):
        maybe = factories.make_memory(
            user,
            personal,
            "Maybe likes rock",
            kind="preference",
            status="candidate",
            confidence="candidate",
            embedder=embedder,
        )
    with time_machine.travel(t0 + timedelta(days=1), tick=False):
        confirm_memory(user=user, mode=personal, memory_id=maybe.pk, actor=Actor.for_user(user.pk))
    before = api.get("/profile", user="alice", as_of=_at(t0)).json()["preferences"]
    after = api.get("/profile", user="alice", as_of=_at(t0 + timedelta(days=1))).json()
    assert before == []
    assert _contents(after["preferences"]) == ["Maybe likes rock"]
    listed = api.get("/memories", user="alice", status="candidate", as_of=_at(t0)).json()
    assert _contents(listed["items"]) == ["Maybe likes rock"]


def test_a_future_or_malformed_as_of_is_a_422_with_a_code(api, timeline):
    future = (timezone.now() + timedelta(days=1)).isoformat()
    for response in (
        api.get("/memories", user="alice", as_of=future),
        api.get("/profile", user="alice", as_of=future),
        api.post("/search", {"user": "alice", "query": "lyon", "as_of": future}),
        api.post("/context", {"user": "alice", "message": "hi", "as_of": future}),
    ):
        assert response.status_code == 422
        assert response.json()["code"] == "invalid_as_of"
    for response in (
        api.get("/memories", user="alice", as_of="yesterday"),
        api.post("/search", {"user": "alice", "query": "lyon", "as_of": "2026-13-45"}),
    ):
        assert response.status_code == 422
        assert response.json()["code"] == "invalid_input"


def test_as_of_respects_memory_off_and_other_modes(api, user, personal, timeline):
    at = _at(timeline["t1"])
    assert api.get("/memories", user="alice", mode="work", as_of=at).json()["items"] == []
    set_mode_memory_off(user=user, mode=personal, is_off=True, actor=Actor.for_user(user.pk))
    assert api.get("/memories", user="alice", as_of=at).json()["items"] == []
    assert api.get("/profile", user="alice", as_of=at).json()["facts"] == []


def test_as_of_pages_carry_on_where_they_stopped(api, user, personal, embedder):
    t0 = timezone.now() - timedelta(days=1)
    with time_machine.travel(t0, tick=True):
        for n in range(5):
            factories.make_memory(user, personal, f"fact {n}", embedder=embedder)
    at = (t0 + timedelta(hours=1)).isoformat()
    first = api.get("/memories", user="alice", as_of=at, limit=3).json()
    second = api.get(
        "/memories", user="alice", as_of=at, limit=3, cursor=first["next_cursor"]
    ).json()
    assert len(first["items"]) == 3
    assert second["next_cursor"] is None
    assert _contents(first["items"] + second["items"]) == [f"fact {n}" for n in range(5)]


def test_confidence_gained_by_repetition_is_dated_in_history_and_as_of(api, user):
    t0 = timezone.now() - timedelta(days=3)
    fact = {"user": "alice", "kind": "fact", "content": "Plays the cello"}
    for day in range(3):
        with time_machine.travel(t0 + timedelta(days=day), tick=False):
            memory_id = api.post("/memories", fact).json()["id"]
    early = api.get("/memories", user="alice", as_of=_at(t0, hours=36)).json()["items"]
    late = api.get("/memories", user="alice", as_of=_at(t0 + timedelta(days=2))).json()["items"]
    assert [m["confidence"] for m in early] == ["medium"]
    assert [m["confidence"] for m in late] == ["high"]
    versions = api.get(f"/memories/{memory_id}/history", user="alice").json()["versions"]
    assert [(v["reason"], v["confidence"]) for v in versions] == [
        ("created", "medium"),
        ("evidence", "high"),
    ]
