"""GET /memories/{id}/history: every version of a memory, oldest first, with who and why."""

from __future__ import annotations

from datetime import timedelta

import time_machine
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.models import AuditEntry, Memory
from memoryhub.services.agents import create_personal_key
from memoryhub.services.confidence import confirm_memory
from memoryhub.services.forget import ForgetSelector, forget
from memoryhub.services.preferences import block_agent, set_mode_memory_off
from tests import factories


def _history(api, memory_id, **params):
    return api.get(f"/memories/{memory_id}/history", user="alice", **params)


def test_the_history_lists_every_version_in_order_with_actor_and_reason(
    api, agent, user, personal, embedder
):
    start = timezone.now() - timedelta(days=3)
    with time_machine.travel(start, tick=False):
        created = api.post(
            "/memories", {"user": "alice", "kind": "fact", "content": "Lives in Lyon"}
        )
    memory_id = created.json()["id"]
    with time_machine.travel(start + timedelta(days=1), tick=False):
        api.patch(f"/memories/{memory_id}", {"content": "Lives in Paris"}, user="alice")
    with time_machine.travel(start + timedelta(days=2), tick=False):
        confirm_memory(user=user, mode=personal, memory_id=memory_id, actor=Actor.for_user(user.pk))

    response = _history(api, memory_id)

    assert response.status_code == 200
    body = response.json()
    assert body["memory_id"] == memory_id
    versions = body["versions"]
    assert [v["content"] for v in versions] == ["Lives in Lyon", "Lives in Paris", "Lives in Paris"]
    assert [v["version"] for v in versions] == [1, 2, 3]
    assert [v["reason"] for v in versions] == ["created", "edit", "confirm"]
    assert [v["changed_by_type"] for v in versions] == ["agent", "agent", "user"]
    assert versions[0]["changed_by_id"] == str(agent.pk)
    assert versions[2]["changed_by_id"] == str(user.pk)
    assert [v["confidence"] for v in versions] == ["medium", "medium", "high"]
    assert [v["kind"] for v in versions] == ["fact", "fact", "fact"]
    # Each version ends when the next begins; the current one has no end.
    assert versions[0]["valid_to"] == versions[1]["valid_from"]
    assert versions[1]["valid_to"] == versions[2]["valid_from"]
    assert versions[2]["valid_to"] is None
    assert versions[0]["valid_from"] < versions[1]["valid_from"] < versions[2]["valid_from"]


def test_reading_a_history_is_audited(api, user, personal, embedder):
    memory = factories.make_memory(user, personal, "Lives in Lyon", embedder=embedder)
    assert _history(api, memory.pk).status_code == 200
    entry = AuditEntry.objects.filter(action="memory.history").latest("created_at")
    assert str(memory.pk) in [str(i) for i in entry.object_ids]


def test_a_superseded_memory_keeps_its_history_and_links_to_what_replaced_it(
    api, user, personal, embedder
):
    from memoryhub.services.confidence import supersede

    old = factories.make_memory(user, personal, "Works at Acme", embedder=embedder)
    new = factories.make_memory(user, personal, "Works at Globex", embedder=embedder)
    supersede([old])
    Memory.all_owners.filter(pk=new.pk).update(supersedes=old)

    body = _history(api, old.pk).json()
    assert body["status"] == "superseded"
    assert body["superseded_by"] == [str(new.pk)]
    assert body["versions"][-1]["valid_to"] is not None
    assert _history(api, new.pk).json()["supersedes"] == str(old.pk)


def test_no_history_of_another_users_or_another_modes_memory(
    api, user, other_user, personal, work, embedder
):
    theirs = factories.make_memory(
        other_user, factories.mode_of(other_user), "Bob's secret", embedder=embedder
    )
    at_work = factories.make_memory(user, work, "Works at Acme", embedder=embedder)
    assert _history(api, theirs.pk).status_code == 404
    response = _history(api, at_work.pk)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert _history(api, at_work.pk, mode="work").status_code == 200


def test_a_forgotten_memory_has_no_history(api, user, personal, embedder):
    memory = factories.make_memory(user, personal, "Lives in Lyon", embedder=embedder)
    forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(memory_ids=(memory.pk,)),
        actor=Actor.for_user(user.pk),
    )
    assert _history(api, memory.pk).status_code == 404


def test_candidates_memory_off_and_blocks_hide_the_history_from_agents(
    api, client, agent, user, personal, embedder
):
    candidate = factories.make_memory(
        user,
        personal,
        "Maybe likes rock",
        status="candidate",
        confidence="candidate",
        embedder=embedder,
    )
    assert _history(api, candidate.pk).status_code == 404
    # The user's own personal key is software too: the same rule.
    memory = factories.make_memory(user, personal, "Lives in Lyon", embedder=embedder)
    set_mode_memory_off(user=user, mode=personal, is_off=True, actor=Actor.for_user(user.pk))
    assert _history(api, memory.pk).status_code == 404
    set_mode_memory_off(user=user, mode=personal, is_off=False, actor=Actor.for_user(user.pk))
    assert _history(api, memory.pk).status_code == 200
    block_agent(user=user, agent=agent, actor=Actor.for_user(user.pk))
    response = _history(api, memory.pk)
    assert response.status_code == 403
    assert response.json()["code"] == "agent_blocked"


def test_a_personal_key_reads_its_owners_history_and_a_bad_id_is_a_json_error(
    caller, user, personal, embedder
):
    memory = factories.make_memory(user, personal, "Lives in Lyon", embedder=embedder)
    personal_key = caller(create_personal_key(user=user, name="cli").raw_key)
    body = personal_key.get(f"/memories/{memory.pk}/history").json()
    assert [v["content"] for v in body["versions"]] == ["Lives in Lyon"]
    assert body["versions"][0]["changed_by_type"] == "system"
    bad = personal_key.get("/memories/not-a-uuid/history")
    assert bad.status_code == 422
    assert bad.json()["code"] == "invalid_input"
    assert caller(None).get(f"/memories/{memory.pk}/history").status_code == 401


def test_the_dashboards_previous_contents_leave_out_versions_that_kept_the_words(
    api, user, personal, embedder
):
    from memoryhub.queries.memories import list_versions

    memory = factories.make_memory(user, personal, "Lives in Lyon", embedder=embedder)
    confirm_memory(user=user, mode=personal, memory_id=memory.pk, actor=Actor.for_user(user.pk))
    me = Actor.for_user(user.pk)
    assert list_versions(user=user, mode=personal, memory_id=memory.pk, actor=me) == []
    versions = _history(api, memory.pk).json()["versions"]
    assert [(v["content"], v["confidence"]) for v in versions] == [
        ("Lives in Lyon", "medium"),
        ("Lives in Lyon", "high"),
    ]
