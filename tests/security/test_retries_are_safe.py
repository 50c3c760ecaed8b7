"""Retries are safe: a retried write returns the first one, and racing writes keep one current fact."""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from django.utils import timezone

from memoryhub.celery import app
from memoryhub.models import IdempotentWrite, Memory, MemoryKind, MemoryStatus
from memoryhub.services import idempotency
from memoryhub.services.agents import rotate_agent_key
from tests import factories

# Single-valued slots and a "remember that" sentence filling each (applied as the message comes).
SLOT_SENTENCES = {
    "employer": ("Remember that I work at {}.", ["Acme", "Globex"]),
    "location": ("Remember that I live in {}.", ["Lyon", "Porto"]),
    "name": ("Remember that my name is {}.", ["Dana", "Robin"]),
    "timezone": ("Remember that my timezone is {}.", ["CET", "PST"]),
}


def _race(calls):
    """Run the calls at the same moment on two threads; return their results in order."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        barrier.wait(timeout=60)
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def _current_facts(user, mode):
    return list(
        Memory.objects.for_owner(user=user, mode=mode)
        .filter(kind=MemoryKind.FACT, status=MemoryStatus.ACTIVE, valid_to__isnull=True)
        .values_list("slot_hash", flat=True)
    )


def test_two_concurrent_writes_to_an_empty_slot_leave_one_current_fact(world):
    carol = factories.make_user(workspace=world.workspace, external_id="carol")
    http = world.agent_http
    for user in (world.alice, world.bob, carol):
        for sentence, values in SLOT_SENTENCES.values():
            sessions = [http.post("/sessions", {"user": user.external_id}).json() for _ in values]

            def say(session, value, sentence=sentence):
                body = {"role": "user", "content": sentence.format(value)}
                return lambda: http.post(f"/sessions/{session['id']}/messages", body)

            responses = _race([say(s, v) for s, v in zip(sessions, values, strict=True)])
            assert [r.status_code for r in responses] == [201, 201]
            assert all(r.json()["applied_memory_ids"] for r in responses)
        slots = _current_facts(user, factories.mode_of(user))
        # One current value per slot: the later write superseded the earlier (or holds it as
        # a conflict for the user to settle), never two current values side by side.
        assert sorted(slots) == sorted(set(slots))
        assert len(slots) == len(SLOT_SENTENCES)


def test_concurrent_writes_to_the_same_slot_of_two_modes_each_stay_current(world):
    http = world.agent_http
    sessions = [
        http.post("/sessions", {"user": "alice", "mode": m}).json() for m in ("personal", "work")
    ]

    def say(session, value):
        body = {"role": "user", "content": f"Remember that I work at {value}."}
        return lambda: http.post(f"/sessions/{session['id']}/messages", body)

    _race([say(sessions[0], "Acme"), say(sessions[1], "Globex")])
    for mode in ("personal", "work"):
        facts = http.get("/profile", user="alice", mode=mode).json()["facts"]
        assert len(facts) == 1


def _remember(http, key="k-1", **fields):
    body = {"user": "alice", "kind": "fact", "content": "Works at Acme", "idempotency_key": key}
    return http.post("/memories", {**body, **fields})


def _count(user):
    return Memory.objects.for_owner(user=user, mode=None).count()


def test_a_retry_with_the_same_idempotency_key_returns_the_first_write(world):
    first = _remember(world.agent_http)
    retry = _remember(world.agent_http)
    assert (first.status_code, retry.status_code) == (201, 200)
    assert retry.json() == first.json()
    # The user named by UUID instead of external id is the same request.
    by_uuid = _remember(world.agent_http, user=str(world.alice.pk))
    assert (by_uuid.status_code, by_uuid.json()["id"]) == (200, first.json()["id"])
    assert _count(world.alice) == 1


def test_a_retried_batch_returns_the_first_batch(world):
    body = {
        "user": "alice",
        "idempotency_key": "batch-1",
        "items": [
            {"kind": "fact", "content": "Has a dog named Rex"},
            {"kind": "preference", "content": "Likes jazz"},
        ],
    }
    first = world.agent_http.post("/memories/batch", body)
    retry = world.agent_http.post("/memories/batch", body)
    assert (first.status_code, retry.status_code) == (201, 200)
    assert [m["id"] for m in retry.json()["items"]] == [m["id"] for m in first.json()["items"]]
    assert _count(world.alice) == 2


def test_without_an_idempotency_key_a_repeat_adds_evidence_not_a_copy(world):
    body = {"user": "alice", "kind": "fact", "content": "Works at Acme"}
    replies = [world.agent_http.post("/memories", body) for _ in range(2)]
    assert [reply.status_code for reply in replies] == [201, 200]
    assert replies[1].json()["evidence_count"] == 2
    assert _count(world.alice) == 1
    other = world.agent_http.post("/memories", {**body, "content": "Works at Hexa"})
    assert other.status_code == 201 and _count(world.alice) == 2


def test_the_same_key_with_another_request_is_422_and_writes_nothing(world):
    http = world.agent_http
    assert _remember(http).status_code == 201
    batch = {"user": "alice", "idempotency_key": "k-1", "items": [{"kind": "fact", "content": "x"}]}
    refused = [
        _remember(http, content="Works at Globex"),  # Another body.
        _remember(http, importance="high"),
        _remember(http, user="bob"),  # Another user.
        _remember(http, mode="work"),  # Another mode.
        http.post("/memories/batch", batch),  # A batch under a single write's key.
    ]
    for response in refused:
        assert response.status_code == 422, response.text
        assert response.json()["code"] == "idempotency_key_reused"
        assert "Acme" not in response.text
    assert _count(world.alice) == 1
    assert _count(world.bob) == 0


def test_another_agent_key_owner_or_workspace_has_its_own_idempotency_keys(world):
    first = _remember(world.agent_http).json()
    # Other words each time: the same words would add evidence to the first (issue 29).
    for number, http in enumerate((world.other_agent_http, world.alice_http)):
        response = _remember(http, content=f"Works at Acme, said again ({number})")
        assert response.status_code == 201
        assert response.json()["id"] != first["id"]
    stranger = _remember(world.stranger_http)
    assert (stranger.status_code, stranger.json()["code"]) == (404, "not_found")
    assert _count(world.alice) == 3


def test_an_agents_rotated_key_keeps_its_idempotency_keys(world):
    first = _remember(world.agent_http).json()
    world.agent_http.key = rotate_agent_key(agent=world.agent).raw_key
    retry = _remember(world.agent_http)
    assert (retry.status_code, retry.json()["id"]) == (200, first["id"])


def test_a_retry_never_brings_back_what_was_forgotten(world):
    first = _remember(world.agent_http).json()
    world.alice_http.post("/forget", {"user": "alice", "memory_ids": [first["id"]]})
    retry = _remember(world.agent_http)
    assert (retry.status_code, retry.json()["code"]) == (409, "conflict")
    assert _count(world.alice) == 0


def test_an_idempotency_key_on_a_batch_item_is_422(world):
    item = {"kind": "fact", "content": "x", "idempotency_key": "k"}
    response = world.agent_http.post("/memories/batch", {"user": "alice", "items": [item]})
    assert (response.status_code, response.json()["code"]) == (422, "invalid_input")
    assert "batch" in response.json()["detail"]


def test_concurrent_retries_with_one_key_write_once(world):
    for round_number in range(4):
        key = f"race-{round_number}"
        content = f"Works at Acme, round {round_number}"  # Not a repeat of the last round.
        responses = _race(
            [lambda key=key, content=content: _remember(world.agent_http, key=key, content=content)]
            * 2
        )
        assert sorted(r.status_code for r in responses) == [200, 201]
        assert responses[0].json()["id"] == responses[1].json()["id"]
    assert _count(world.alice) == 4


def _age(key, hours):
    """Date the record of the write sent with this key this many hours back."""
    digest = hashlib.sha256(key.encode()).hexdigest()
    moved = IdempotentWrite.objects.filter(key_digest=digest).update(
        created_at=timezone.now() - timedelta(hours=hours)
    )
    assert moved == 1


def test_a_key_replays_for_the_window_and_is_a_new_write_once_swept(world, settings):
    settings.MEMORYHUB_IDEMPOTENCY_KEEP_HOURS = 24
    old = _remember(world.agent_http, key="old").json()
    recent = _remember(world.agent_http, key="recent", content="Works at Hexa").json()
    _age("old", hours=25)
    _age("recent", hours=23)
    assert idempotency.sweep_idempotency_keys() == 1
    assert idempotency.sweep_idempotency_keys() == 0
    retry_recent = _remember(world.agent_http, key="recent", content="Works at Hexa")
    assert (retry_recent.status_code, retry_recent.json()["id"]) == (200, recent["id"])
    assert retry_recent.json()["evidence_count"] == 1  # Replayed: nothing written.
    retry_old = _remember(world.agent_http, key="old")
    # A new write, not a replay: the same words as a current memory add evidence to it.
    assert (retry_old.json()["id"], retry_old.json()["evidence_count"]) == (old["id"], 2)
    assert _count(world.alice) == 2


def test_the_sweep_deletes_in_batches_until_none_is_left(world, settings, monkeypatch):
    settings.MEMORYHUB_IDEMPOTENCY_KEEP_HOURS = 1
    monkeypatch.setattr(idempotency, "SWEEP_BATCH", 2)
    for number in range(5):
        _remember(world.agent_http, key=f"k-{number}", content=f"Fact {number}")
        _age(f"k-{number}", hours=2)
    _remember(world.agent_http, key="fresh", content="Fresh fact")
    assert idempotency.sweep_idempotency_keys() == 5
    assert IdempotentWrite.objects.count() == 1
    assert _count(world.alice) == 6  # The memories stay: only the replay records go.


def test_the_idempotency_sweep_is_scheduled_hourly_as_a_registered_task(settings):
    app.loader.import_default_modules()
    entry = settings.CELERY_BEAT_SCHEDULE["sweep-idempotency-keys"]
    assert (entry["task"], entry["schedule"]) == ("memoryhub.sweep_idempotency_keys", 3600.0)
    assert entry["task"] in app.tasks
