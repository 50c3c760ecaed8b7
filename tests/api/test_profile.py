"""GET /profile and /open-items: what an agent reads first about a user in a mode."""

from __future__ import annotations

import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests import factories


def test_the_profile_lists_active_facts_preferences_and_procedures(api, user, personal, embedder):
    make = factories.make_memory
    make(user, personal, "Lives in Lyon", embedder=embedder)
    make(user, personal, "Allergic to peanuts", importance="critical", embedder=embedder)
    make(user, personal, "Likes jazz", kind="preference", embedder=embedder)
    make(user, personal, "Deploy with make ship", kind="procedure", embedder=embedder)
    make(
        user, personal, "Maybe likes rock", kind="preference", status="candidate", embedder=embedder
    )
    make(user, personal, "Had lunch with Sam", kind="episode", embedder=embedder)
    body = api.get("/profile", user="alice").json()
    assert [m["content"] for m in body["facts"]] == ["Allergic to peanuts", "Lives in Lyon"]
    assert [m["content"] for m in body["preferences"]] == ["Likes jazz"]
    assert [m["content"] for m in body["procedures"]] == ["Deploy with make ship"]


def test_the_profile_of_another_mode_is_separate(api, user, personal, work, embedder):
    factories.make_memory(user, work, "Works at Acme", embedder=embedder)
    assert api.get("/profile", user="alice").json()["facts"] == []
    assert api.get("/profile", user="alice", mode="work").json()["facts"][0]["content"] == (
        "Works at Acme"
    )


def test_open_items_lists_active_open_items_only(api, user, personal, embedder):
    factories.make_memory(user, personal, "Call the bank", kind="open_item", embedder=embedder)
    factories.make_memory(user, personal, "Lives in Lyon", embedder=embedder)
    items = api.get("/open-items", user="alice").json()["items"]
    assert [m["content"] for m in items] == ["Call the bank"]
    assert api.get("/open-items").status_code == 422


def test_the_profile_query_count_does_not_grow_with_memories(api, user, personal, embedder):
    factories.make_memory(user, personal, "one", embedder=embedder)
    # One frozen minute: a new rate-limit window or key stamp would add a query of its own.
    with time_machine.travel(timezone.now().replace(second=1), tick=False):
        api.get("/profile", user="alice")
        with CaptureQueriesContext(connection) as few:
            api.get("/profile", user="alice")
        for n in range(5):
            factories.make_memory(user, personal, f"fact {n}", embedder=embedder)
        with CaptureQueriesContext(connection) as many:
            api.get("/profile", user="alice")
    assert len(many.captured_queries) == len(few.captured_queries)
