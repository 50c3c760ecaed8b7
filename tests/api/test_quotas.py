"""Quotas through the API: 429 JSON `quota_exceeded` naming the quota, nothing stored."""

from __future__ import annotations

from memoryhub.models import Memory
from memoryhub.usage import user_usage


def _remember(api, content, user="alice"):
    body = {"user": user, "mode": "personal", "kind": "fact", "content": content}
    return api.post("/memories", body)


def test_a_remember_past_the_quota_is_429_quota_exceeded_and_stores_nothing(api, user, settings):
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER = 1
    assert _remember(api, "Likes tea").status_code == 201

    response = _remember(api, "Likes coffee")

    assert response.status_code == 429
    body = response.json()
    assert body["code"] == "quota_exceeded"
    assert "MEMORYHUB_QUOTA_MEMORIES_PER_USER" in body["detail"]
    assert Memory.objects.for_owner(user=user, mode=None).count() == 1


def test_a_batch_past_the_byte_quota_is_429_and_stored_whole_or_not_at_all(api, user, settings):
    settings.MEMORYHUB_QUOTA_BYTES_PER_USER = 200
    items = [{"kind": "fact", "content": f"Fact number {n} about the user."} for n in range(5)]

    response = api.post("/memories/batch", {"user": "alice", "items": items})

    assert response.status_code == 429
    assert "MEMORYHUB_QUOTA_BYTES_PER_USER" in response.json()["detail"]
    assert user_usage(user.pk).memories == 0


def test_the_workspace_quota_detail_names_no_other_user(api, user, other_user, settings):
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_WORKSPACE = 1
    assert _remember(api, "Bob likes chess", user="bob").status_code == 201

    response = _remember(api, "Alice likes tea")

    assert response.status_code == 429
    detail = response.json()["detail"]
    assert "MEMORYHUB_QUOTA_MEMORIES_PER_WORKSPACE" in detail
    assert "bob" not in detail.lower() and "chess" not in detail


def test_answers_past_the_daily_quota_are_429(api, user, settings):
    settings.MEMORYHUB_QUOTA_ANSWERS_PER_USER_PER_DAY = 1
    body = {
        "user": "alice",
        "question": "What do I like?",
        "answer": "Tea.",
        "signals": {"retrieval": 1.0, "policy": 1.0, "completeness": 1.0, "memory": 1.0},
    }
    assert api.post("/answers", body).status_code == 201

    response = api.post("/answers", body)

    assert response.status_code == 429
    assert response.json()["code"] == "quota_exceeded"


def test_knowledge_candidates_past_the_daily_quota_are_429(api, user, settings):
    settings.MEMORYHUB_QUOTA_CANDIDATES_PER_WORKSPACE_PER_DAY = 1
    body = {"user": "alice", "statement": "Refunds take five days."}
    assert api.post("/knowledge/candidates", body).status_code == 201

    response = api.post("/knowledge/candidates", body)

    assert response.status_code == 429
    assert "CANDIDATES_PER_WORKSPACE_PER_DAY" in response.json()["detail"]
