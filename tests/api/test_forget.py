"""POST /forget: memories are gone from every read path at once."""

from __future__ import annotations

from memoryhub.models import AuditEntry, Memory
from tests import factories


def test_forget_by_ids_removes_them_from_every_read(api, user, personal, embedder):
    keep = factories.make_memory(user, personal, "Likes hiking", embedder=embedder)
    gone = factories.make_memory(user, personal, "Lives at 12 Rue Vieille", embedder=embedder)
    response = api.post("/forget", {"user": "alice", "memory_ids": [str(gone.pk)]})
    assert response.status_code == 200
    body = response.json()
    assert body["forgotten"] == 1
    assert body["memory_ids"] == [str(gone.pk)]
    assert body["counts"] == {"fact": 1}
    assert api.get(f"/memories/{gone.pk}", user="alice").status_code == 404
    assert [m["id"] for m in api.get("/memories", user="alice").json()["items"]] == [str(keep.pk)]
    assert [m["id"] for m in api.get("/profile", user="alice").json()["facts"]] == [str(keep.pk)]
    assert AuditEntry.objects.filter(action="memory.forget", channel="api").exists()


def test_forget_by_topic_leaves_other_topics(api, user, personal, embedder):
    factories.make_memory(user, personal, "Allergic to peanuts", embedder=embedder)
    factories.make_memory(user, personal, "Plays the piano", embedder=embedder)
    response = api.post("/forget", {"user": "alice", "topic": "peanuts"})
    assert response.json()["forgotten"] == 1
    remaining = [m["content"] for m in api.get("/memories", user="alice").json()["items"]]
    assert remaining == ["Plays the piano"]


def test_forget_only_reaches_its_own_user_and_mode(api, user, other_user, work, embedder):
    at_work = factories.make_memory(user, work, "Works at Acme", embedder=embedder)
    bobs = factories.make_memory(
        other_user, factories.mode_of(other_user), "Bob", embedder=embedder
    )
    ids = [str(at_work.pk), str(bobs.pk)]
    assert api.post("/forget", {"user": "alice", "memory_ids": ids}).json()["forgotten"] == 0
    assert Memory.objects.for_owner(user=user, mode=work).count() == 1
    assert Memory.objects.for_owner(user=other_user, mode=None).count() == 1


def test_forget_needs_a_selector_and_valid_criteria(api, user):
    assert api.post("/forget", {"user": "alice"}).status_code == 422
    assert api.post("/forget", {"user": "alice", "memory_ids": ["nope"]}).status_code == 422
    period = {"since": "2025-02-01T00:00:00Z", "until": "2025-01-01T00:00:00Z"}
    assert api.post("/forget", {"user": "alice", **period}).status_code == 422
    assert api.post("/forget", {"user": "alice", "topic": "  "}).status_code == 422
