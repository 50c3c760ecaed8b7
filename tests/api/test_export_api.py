"""GET /export: the dashboard's export file through the API, for personal keys and allowed agents."""

from __future__ import annotations

import json

import time_machine

from memoryhub.actors import Actor
from memoryhub.audit.log import subject_pseudonym
from memoryhub.models import AgentPermission, AuditEntry
from memoryhub.services.agents import create_personal_key
from memoryhub.services.preferences import (
    block_agent,
    set_agent_permission,
    set_memory_paused,
    set_mode_memory_off,
)
from tests import factories

FROZEN = "2026-06-01 12:00:00+00:00"


def _allow(user, agent, is_allowed=True):
    set_agent_permission(
        user=user,
        agent=agent,
        permission=AgentPermission.EXPORT,
        is_allowed=is_allowed,
        actor=Actor.for_user(user.pk),
    )


def _body(response):
    assert response.status_code == 200, response.content
    assert response.streaming
    assert response["Content-Type"].startswith("application/json")
    assert "no-store" in response["Cache-Control"]
    return b"".join(response.streaming_content)


def test_a_personal_key_streams_the_same_file_as_the_dashboard(
    client, caller, user, personal, work, other_user, embedder
):
    factories.make_memory(user, personal, "Lives in Lyon", embedder=embedder)
    factories.make_memory(user, work, "Works at Acme", embedder=embedder)
    factories.make_memory(other_user, factories.mode_of(other_user), "Bob's secret")
    key = caller(create_personal_key(user=user, name="cli").raw_key)
    with time_machine.travel(FROZEN, tick=False):
        through_api = _body(key.get("/export"))
        client.force_login(user)
        through_dashboard = b"".join(client.get("/dashboard/export/").streaming_content)
    assert through_api == through_dashboard
    document = json.loads(through_api)
    assert document["format"] == "memoryhub-export/1"
    assert b"Bob's secret" not in through_api
    exports = AuditEntry.objects.filter(
        subject=subject_pseudonym(user.pk), action="account.export"
    ).values_list("actor_type", flat=True)
    assert sorted(exports) == ["agent", "user"]


def test_an_agent_may_export_only_once_the_user_allowed_it(api, agent, user, personal, embedder):
    factories.make_memory(user, personal, "Lives in Lyon", embedder=embedder)
    refused = api.get("/export", user="alice")
    assert refused.status_code == 403
    assert refused.json()["code"] == "export_not_allowed"
    assert AuditEntry.objects.filter(action="export.refused").count() == 1

    _allow(user, agent)
    document = json.loads(_body(api.get("/export", user="alice")))
    memories = document["modes"][0]["memories"]
    assert [m["content"] for m in memories] == ["Lives in Lyon"]

    _allow(user, agent, is_allowed=False)
    assert api.get("/export", user="alice").status_code == 403


def test_an_agent_export_leaves_out_modes_with_memory_off_and_works_while_paused(
    api, agent, user, personal, work, embedder
):
    factories.make_memory(user, personal, "Lives in Lyon", embedder=embedder)
    factories.make_memory(user, work, "Works at Acme", embedder=embedder)
    _allow(user, agent)
    me = Actor.for_user(user.pk)
    set_mode_memory_off(user=user, mode=work, is_off=True, actor=me)
    set_memory_paused(user=user, is_paused=True, actor=me)  # Pause stops writes, not reads.
    body = _body(api.get("/export", user="alice"))
    assert [mode["slug"] for mode in json.loads(body)["modes"]] == ["personal"]
    assert b"Works at Acme" not in body


def test_a_blocked_agent_cannot_export_even_if_allowed(api, agent, user, personal):
    _allow(user, agent)
    block_agent(user=user, agent=agent, actor=Actor.for_user(user.pk))
    response = api.get("/export", user="alice")
    assert response.status_code == 403
    assert response.json()["code"] == "agent_blocked"


def test_an_agent_cannot_export_another_workspaces_user(api, agent, user):
    _allow(user, agent)
    stranger = factories.make_user(external_id="carol")
    response = api.get("/export", user="carol")
    assert response.status_code == 404
    assert stranger.pk


def test_a_mode_bound_personal_key_exports_its_mode_only(caller, user, personal, work, embedder):
    factories.make_memory(user, personal, "Lives in Lyon", embedder=embedder)
    factories.make_memory(user, work, "Works at Acme", embedder=embedder)
    key = caller(create_personal_key(user=user, name="work only", mode=work).raw_key)
    body = _body(key.get("/export", mode="work"))
    assert [mode["slug"] for mode in json.loads(body)["modes"]] == ["work"]
    assert key.get("/export").status_code == 404


def test_the_dashboard_turns_may_export_on_and_off(client, agent, user):
    client.force_login(user)
    page = client.get("/dashboard/agents/").content.decode()
    assert "Let assistant export" in page
    client.post(f"/dashboard/agents/{agent.pk}/export/", {"allow": "on"})
    assert "may export all your data" in client.get("/dashboard/agents/").content.decode()
    assert AuditEntry.objects.filter(action="agent.allow").count() == 1
    client.post(f"/dashboard/agents/{agent.pk}/export/", {"allow": "off"})
    assert "Let assistant export" in client.get("/dashboard/agents/").content.decode()
    assert AuditEntry.objects.filter(action="agent.disallow").count() == 1
