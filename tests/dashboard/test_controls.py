"""The user's controls: pause, retention, agents, personal keys, access log, account deletion."""

from __future__ import annotations

import html
import json

import pytest
from django.test import Client

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access, subject_pseudonym
from memoryhub.errors import MemoryPausedError
from memoryhub.models import (
    ActorType,
    AgentBlock,
    ApiKey,
    AuditEntry,
    Channel,
    Memory,
    User,
    UserKey,
)
from memoryhub.services.agents import find_active_key
from memoryhub.services.memories import NewMemory
from memoryhub.services.memories import remember as remember_item
from tests import factories


def test_pausing_memory_stops_agents_and_shows_the_banner(signed_in, user, personal, embedder):
    response = signed_in.post("/dashboard/settings/pause/", {"is_paused": "on"}, follow=True)
    assert "Memory is paused." in response.content.decode()
    user.refresh_from_db()
    assert user.is_memory_paused
    agent_actor = Actor(ActorType.AGENT, "some-agent", Channel.API)
    with pytest.raises(MemoryPausedError):
        remember_item(
            user=user,
            mode=personal,
            item=NewMemory(kind="fact", content="New fact."),
            actor=agent_actor,
            embedder=embedder,
        )


def test_resuming_memory_removes_the_banner(signed_in, user):
    signed_in.post("/dashboard/settings/pause/", {"is_paused": "on"})
    response = signed_in.post("/dashboard/settings/pause/", {}, follow=True)
    user.refresh_from_db()
    assert not user.is_memory_paused
    assert "Memory is paused." not in response.content.decode()


def test_retention_is_saved_and_can_be_cleared(signed_in, user):
    signed_in.post("/dashboard/settings/retention/", {"retention_days": "180"})
    user.refresh_from_db()
    assert user.retention_days == 180
    signed_in.post("/dashboard/settings/retention/", {"retention_days": ""})
    user.refresh_from_db()
    assert user.retention_days is None


def test_an_unknown_retention_is_refused(signed_in, user):
    response = signed_in.post(
        "/dashboard/settings/retention/", {"retention_days": "99999"}, follow=True
    )
    user.refresh_from_db()
    assert user.retention_days is None
    assert "Choose one of the offered retention periods." in response.content.decode()


def test_agents_of_the_workspace_are_listed_and_can_be_blocked(signed_in, user, workspace):
    agent, _ = factories.make_agent(workspace, "travel-bot")
    assert "travel-bot" in signed_in.get("/dashboard/agents/").content.decode()
    signed_in.post(f"/dashboard/agents/{agent.pk}/block/")
    assert AgentBlock.objects.filter(user=user, agent=agent).exists()
    assert "Unblock travel-bot" in signed_in.get("/dashboard/agents/").content.decode()
    signed_in.post(f"/dashboard/agents/{agent.pk}/unblock/")
    assert not AgentBlock.objects.filter(user=user, agent=agent).exists()


def test_an_agent_of_another_workspace_is_not_found(signed_in, user):
    stranger, _ = factories.make_agent(factories.make_workspace(), "stranger-bot")
    assert signed_in.post(f"/dashboard/agents/{stranger.pk}/block/").status_code == 404
    assert not AgentBlock.objects.filter(user=user).exists()
    assert "stranger-bot" not in signed_in.get("/dashboard/agents/").content.decode()


def test_a_new_personal_key_is_shown_once_and_only_its_hash_is_stored(reauthenticated, user, work):
    signed_in = reauthenticated
    response = signed_in.post("/dashboard/keys/", {"name": "desktop", "mode": work.pk}, follow=True)
    assert response.redirect_chain == [("/dashboard/keys/", 302)]
    body = response.content.decode()
    raw_key = body.split('id="new-key" class="secret" value="')[1].split('"')[0]
    assert raw_key.startswith("mh_")
    found = find_active_key(raw_key)
    assert found.user == user and found.mode == work
    assert raw_key not in signed_in.get("/dashboard/keys/").content.decode()
    assert "no-store" in response["Cache-Control"]


def test_reloading_the_keys_page_makes_no_second_key(reauthenticated, user):
    signed_in = reauthenticated
    signed_in.post("/dashboard/keys/", {"name": "desktop"}, follow=True)
    signed_in.get("/dashboard/keys/")
    signed_in.get("/dashboard/keys/")
    assert ApiKey.objects.filter(user=user).count() == 1


def test_the_keys_page_says_how_to_use_a_new_key(reauthenticated):
    signed_in = reauthenticated
    body = signed_in.post("/dashboard/keys/", {"name": "desktop"}, follow=True).content.decode()
    raw_key = body.split('id="new-key" class="secret" value="')[1].split('"')[0]
    page = html.unescape(body)
    assert "http://testserver/api/v1" in page and 'href="http://testserver/api/v1/docs"' in page
    assert f"curl -H 'Authorization: Bearer {raw_key}' http://testserver/api/v1/users/me" in page
    http_config = page.split('id="usage-mcp-http" class="snippet" rows="10" readonly>')[1]
    http_config = json.loads(http_config.split("</textarea>")[0])
    assert http_config["mcpServers"]["memoryhub"] == {
        "type": "http",
        "url": "http://testserver/mcp",
        "headers": {"Authorization": f"Bearer {raw_key}"},
    }
    stdio_config = page.split('id="usage-mcp-stdio" class="snippet" rows="10" readonly>')[1]
    stdio = json.loads(stdio_config.split("</textarea>")[0])["mcpServers"]["memoryhub"]
    assert stdio["args"][-3:] == ["mcp_server", "--key", raw_key]
    assert stdio["args"][0].endswith("manage.py")
    # Once shown, the key is gone from the page; the box keeps a placeholder.
    later = html.unescape(signed_in.get("/dashboard/keys/").content.decode())
    assert raw_key not in later and "Bearer mh_your_key" in later


def test_a_key_cannot_be_bound_to_another_users_mode(reauthenticated, other_user):
    signed_in = reauthenticated
    theirs = other_user.modes.get(slug="work")
    response = signed_in.post("/dashboard/keys/", {"name": "sneaky", "mode": theirs.pk})
    assert response.status_code == 422
    assert not ApiKey.objects.filter(name="sneaky").exists()


def test_revoking_a_key_stops_it(reauthenticated):
    signed_in = reauthenticated
    body = signed_in.post("/dashboard/keys/", {"name": "desktop"}, follow=True).content.decode()
    raw_key = body.split('id="new-key" class="secret" value="')[1].split('"')[0]
    key = find_active_key(raw_key)
    signed_in.post(f"/dashboard/keys/{key.pk}/revoke/")
    assert find_active_key(raw_key) is None


def test_another_users_key_cannot_be_revoked(signed_in, other_user):
    from memoryhub.services.agents import create_personal_key

    issued = create_personal_key(user=other_user, name="bob's")
    assert signed_in.post(f"/dashboard/keys/{issued.api_key.pk}/revoke/").status_code == 404
    assert find_active_key(issued.raw_key) is not None


def test_the_access_log_shows_the_users_own_entries_only(signed_in, user, other_user):
    record_access(
        actor=Actor(ActorType.AGENT, "a1", Channel.API, label="travel-bot"),
        subject_user_id=user.pk,
        action=AuditAction.MEMORY_LIST,
        mode="personal",
    )
    record_access(
        actor=Actor(ActorType.REVIEWER, "r1", Channel.UI, label="Rita"),
        subject_user_id=other_user.pk,
        action=AuditAction.MEMORY_READ,
    )
    page = signed_in.get("/dashboard/access/").content.decode()
    assert "Agent “travel-bot”" in page and "listed memories" in page
    assert "Rita" not in page


def test_the_access_log_can_hide_the_users_own_views(signed_in, user):
    signed_in.get("/dashboard/")  # Writes a "viewed memories in the dashboard" row by the user.
    record_access(
        actor=Actor(ActorType.AGENT, "a1", Channel.API, label="travel-bot"),
        subject_user_id=user.pk,
        action=AuditAction.MEMORY_LIST,
    )
    others = signed_in.get("/dashboard/access/").content.decode()
    everything = signed_in.get("/dashboard/access/?mine=on").content.decode()
    assert "viewed memories in the dashboard" in everything
    assert "viewed memories in the dashboard" not in others and "travel-bot" in others


def test_the_access_log_is_paginated(signed_in, user):
    actor = Actor(ActorType.AGENT, "a1", Channel.API, label="travel-bot")
    for _ in range(55):
        record_access(actor=actor, subject_user_id=user.pk, action=AuditAction.MEMORY_LIST)
    first = signed_in.get("/dashboard/access/").content.decode()
    second = signed_in.get("/dashboard/access/?page=2").content.decode()
    assert first.count('class="actor-agent"') == 50
    assert second.count('class="actor-agent"') == 5


def test_a_wrong_password_does_not_delete_the_account(signed_in, user):
    response = signed_in.post("/dashboard/account/delete/", {"password": "nope"})
    assert response.status_code == 422
    assert "That is not your password." in response.content.decode()
    assert User.objects.filter(pk=user.pk).exists()


def test_deleting_the_account_erases_everything_and_logs_out(signed_in, user, remember):
    remember("Lives in Lyon.")
    user_id = user.pk
    response = signed_in.post(
        "/dashboard/account/delete/", {"password": "correct horse battery staple"}, follow=True
    )
    assert "are erased" in response.content.decode()
    assert not User.objects.filter(pk=user_id).exists()
    assert not UserKey.objects.filter(user_id=user_id).exists()
    assert not Memory.objects.for_owner(user=user_id, mode=None).exists()
    assert AuditEntry.objects.filter(
        subject=subject_pseudonym(user_id), action="account.delete"
    ).exists()
    assert signed_in.get("/dashboard/").status_code == 302


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/dashboard/settings/pause/", {"is_paused": "on"}),
        ("/dashboard/settings/retention/", {"retention_days": "30"}),
        ("/dashboard/keys/", {"name": "desktop"}),
        ("/dashboard/account/delete/", {"password": "correct horse battery staple"}),
        ("/dashboard/modes/", {"name": "Side project"}),
    ],
)
def test_control_posts_refuse_a_missing_csrf_token(user, path, data):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(path, data).status_code == 403
    user.refresh_from_db()
    assert not user.is_memory_paused and user.retention_days is None
    assert not ApiKey.objects.filter(user=user).exists()
    assert user.modes.count() == 2


def test_block_and_revoke_refuse_a_missing_csrf_token(user, workspace):
    agent, _ = factories.make_agent(workspace, "travel-bot")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(f"/dashboard/agents/{agent.pk}/block/").status_code == 403
    assert not AgentBlock.objects.filter(user=user).exists()


def test_a_custom_mode_can_be_added_and_switched_to(signed_in, user):
    response = signed_in.post("/dashboard/modes/", {"name": "Side project"}, follow=True)
    assert user.modes.filter(slug="side-project").exists()
    assert 'aria-current="page">Side project' in response.content.decode()


@pytest.mark.parametrize(
    "path",
    [
        "/dashboard/settings/",
        "/dashboard/agents/",
        "/dashboard/keys/",
        "/dashboard/access/",
        "/dashboard/account/delete/",
        "/dashboard/export/",
        "/dashboard/receipt/",
        "/dashboard/modes/personal/forget/",
        "/dashboard/modes/personal/delete-all/",
        "/dashboard/modes/personal/search/?q=x",
    ],
)
def test_every_page_needs_a_signed_in_user(client, db, path):
    response = client.get(path)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_settings_page_links_every_control(signed_in):
    page = signed_in.get("/dashboard/settings/").content.decode()
    for path in [
        "/dashboard/agents/",
        "/dashboard/keys/",
        "/dashboard/access/",
        "/dashboard/export/",
        "/dashboard/account/delete/",
        "/accounts/2fa/",
    ]:
        assert path in page
