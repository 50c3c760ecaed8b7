"""The same `POST /memories` body twice: the item gains evidence, no copy (issue 29)."""

from __future__ import annotations

from memoryhub.models import AuditEntry, Memory, MemoryStatus

BODY = {"user": "alice", "mode": "personal", "kind": "preference", "content": "Prefers tea."}


def _live(user):
    return Memory.objects.for_owner(user=user, mode=None).filter(
        status__in=[MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE]
    )


def test_an_exact_repeat_adds_evidence_and_climbs_the_ladder_instead_of_copying(api, user):
    first = api.post("/memories", BODY)
    assert first.status_code == 201
    assert (first.json()["evidence_count"], first.json()["confidence"]) == (1, "medium")
    second = api.post("/memories", BODY)
    assert second.status_code == 200
    assert second.json()["id"] == first.json()["id"]
    assert (second.json()["evidence_count"], second.json()["confidence"]) == (2, "medium")
    third = api.post("/memories", BODY)
    # Heard three times: trusted without the user's confirmation (the confidence ladder).
    assert (third.json()["evidence_count"], third.json()["confidence"]) == (3, "high")
    assert _live(user).count() == 1
    assert AuditEntry.objects.filter(action="memory.reinforce").count() == 2


def test_anything_different_is_a_new_memory(api, user):
    assert api.post("/memories", BODY).status_code == 201
    variants = [
        {**BODY, "content": "Prefers tea!"},
        {**BODY, "kind": "fact"},
        {**BODY, "payload": {"source_url": "chat"}},
        {**BODY, "mode": "work"},
    ]
    for body in variants:
        assert api.post("/memories", body).status_code == 201, body
    assert _live(user).count() == 5


def test_a_batch_reinforces_its_repeats_and_creates_the_rest(api, user):
    first = api.post("/memories", BODY).json()
    items = [{"kind": "fact", "content": "Has a dog."}, {k: BODY[k] for k in ("kind", "content")}]
    response = api.post("/memories/batch", {"user": "alice", "items": items})
    assert response.status_code == 201
    created, repeated = response.json()["items"]
    assert created["evidence_count"] == 1 and repeated["id"] == first["id"]
    assert repeated["evidence_count"] == 2
    assert _live(user).count() == 2


def test_a_repeat_of_another_users_memory_is_not_a_repeat(api, caller, user, workspace):
    from tests import factories

    factories.make_user(workspace=workspace, external_id="bob", email="bob@example.com")
    assert api.post("/memories", BODY).status_code == 201
    response = api.post("/memories", {**BODY, "user": "bob"})
    assert (response.status_code, response.json()["evidence_count"]) == (201, 1)


def test_unknown_fields_are_refused_with_422_not_dropped(api, user):
    for body in (
        {**BODY, "confidence": "candidate"},
        {**BODY, "status": "active"},
        {"user": "alice", "items": [{**BODY, "confidence": "high"}]},
    ):
        path = "/memories/batch" if "items" in body else "/memories"
        response = api.post(path, body)
        assert response.status_code == 422, body
        assert response.json()["code"] == "invalid_input"
        assert "confidence" in str(response.json()) or "status" in str(response.json())
    memory = api.post("/memories", BODY).json()
    patch = api.patch(f"/memories/{memory['id']}", {"confidence": "high"}, user="alice")
    assert patch.status_code == 422
    assert _live(user).count() == 1


def test_a_repeat_under_a_new_idempotency_key_adds_evidence_and_its_retry_replays(api, user):
    # The clients send a fresh key with every call: a repeat must not become a copy there either.
    first = api.post("/memories", {**BODY, "idempotency_key": "call-1"})
    again = api.post("/memories", {**BODY, "idempotency_key": "call-2"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"] and again.json()["evidence_count"] == 2
    retry = api.post("/memories", {**BODY, "idempotency_key": "call-2"})
    assert retry.status_code == 200 and retry.json()["evidence_count"] == 2  # No third piece.
    assert _live(user).count() == 1
