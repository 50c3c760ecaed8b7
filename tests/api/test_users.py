"""POST /users, GET /users/{external_id} and POST /users/{external_id}/link: an agent's users."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.models import AuditEntry, User, UserLink
from memoryhub.services.agents import create_personal_key
from memoryhub.services.preferences import block_agent
from memoryhub.services.user_links import LINK_LIFETIME
from tests import factories

LINK = {"email": "dana@example.com"}


def test_creating_a_user_returns_201_then_200_with_the_same_user(api, workspace):
    created = api.post("/users", {"external_id": "u-42", "display_name": "Dana"})
    assert created.status_code == 201
    assert created.json()["external_id"] == "u-42"
    assert created.json()["display_name"] == "Dana"
    assert (created.json()["email"], created.json()["has_login"]) == (None, False)
    assert sorted(created.json()["modes"]) == ["personal", "work"]
    again = api.post("/users", {"external_id": "u-42"})
    assert again.status_code == 200
    assert again.json()["id"] == created.json()["id"]
    user = User.objects.get(pk=created.json()["id"])
    assert user.workspace == workspace
    assert user.email is None and not user.has_usable_password()  # Nobody can sign in as them.
    assert AuditEntry.objects.filter(action="user.create").count() == 1


def test_an_email_from_an_agent_is_refused_with_a_clear_message(api, user):
    for body in (
        {"external_id": "u-7", "email": "dana@example.com"},
        {"external_id": "alice", "email": "dana@example.com"},  # An existing user too.
        {"external_id": "u-7", "email": "not-an-email"},
    ):
        response = api.post("/users", body)
        assert response.status_code == 422
        assert response.json()["code"] == "invalid_input"
        assert "agents do not set a user's login" in response.json()["detail"]
        assert "/link" in response.json()["detail"]
    assert not User.objects.filter(external_id="u-7").exists()


def test_get_user_by_external_id(api, user):
    response = api.get("/users/alice")
    assert response.status_code == 200
    assert response.json()["id"] == str(user.pk)
    assert response.json()["has_login"] is True
    assert api.get("/users/nobody").status_code == 404


def test_only_the_persons_own_key_sees_their_login_email(api, user, caller):
    # The login belongs to the person: agents see that there is one (has_login), not which.
    for response in (api.get("/users/alice"), api.post("/users", {"external_id": "alice"})):
        assert response.status_code == 200
        assert (response.json()["email"], response.json()["has_login"]) == (None, True)
        assert "alice@example.com" not in response.text
    own = caller(create_personal_key(user=user, name="cli").raw_key).get("/users/alice")
    assert (own.status_code, own.json()["email"]) == (200, "alice@example.com")


def test_the_same_external_id_in_another_workspace_is_another_user(api, workspace):
    factories.make_user(workspace=factories.make_workspace(), external_id="shared-id")
    response = api.post("/users", {"external_id": "shared-id"})
    assert response.status_code == 201
    assert User.objects.filter(external_id="shared-id").count() == 2


def test_user_creation_rejects_bad_input(api, user, caller):
    assert api.post("/users", {}).status_code == 422
    assert api.post("/users", {"external_id": "   "}).status_code == 422
    assert api.post("/users", {"external_id": "a\u0000b"}).status_code == 422
    shadow = api.post("/users", {"external_id": str(user.pk)})
    assert (shadow.status_code, shadow.json()["code"]) == (409, "conflict")
    personal_key = create_personal_key(user=user, name="cli").raw_key
    assert caller(personal_key).post("/users", {"external_id": "z"}).status_code == 403


def test_a_link_is_issued_for_an_agent_created_user_and_stored_hashed(api, agent):
    api.post("/users", {"external_id": "u-1"})
    response = api.post("/users/u-1/link", LINK)
    assert response.status_code == 201
    url = response.json()["url"]
    token = url.rstrip("/").rsplit("/", 1)[1]
    assert url == f"http://testserver/dashboard/link/{token}/"
    link = UserLink.objects.get()
    assert token not in link.token_digest and len(token) >= 40
    assert link.agent == agent and link.user.external_id == "u-1"
    assert link.email == "dana@example.com"
    assert link.expires_at - link.created_at == LINK_LIFETIME
    assert AuditEntry.objects.filter(action="user.link_issue").count() == 1


def test_a_new_link_replaces_the_unused_one(api):
    api.post("/users", {"external_id": "u-1"})
    first = api.post("/users/u-1/link", LINK).json()["url"]
    second = api.post("/users/u-1/link", LINK).json()["url"]
    assert first != second
    assert UserLink.objects.count() == 1


def test_a_link_is_refused_for_users_with_a_login_other_workspaces_and_personal_keys(
    api, user, caller
):
    has_login = api.post("/users/alice/link", LINK)
    assert (has_login.status_code, has_login.json()["code"]) == (409, "conflict")
    assert "already has a login" in has_login.json()["detail"]
    elsewhere = factories.make_workspace()
    factories.make_user(workspace=elsewhere, external_id="carol", password=None)
    assert api.post("/users/carol/link", LINK).status_code == 404
    personal_key = create_personal_key(user=user, name="cli").raw_key
    assert caller(personal_key).post("/users/alice/link", LINK).status_code == 403
    assert not UserLink.objects.exists()


def test_a_blocked_agent_gets_no_link(api, agent, workspace):
    api.post("/users", {"external_id": "u-1"})
    user = User.objects.get(external_id="u-1")
    block_agent(user=user, agent=agent, actor=Actor.for_user(user.pk))
    response = api.post("/users/u-1/link", LINK)
    assert (response.status_code, response.json()["code"]) == (403, "agent_blocked")
    assert not UserLink.objects.exists()


def test_a_link_expires_after_its_lifetime(api, client, time_machine):
    api.post("/users", {"external_id": "u-1"})
    url = api.post("/users/u-1/link", LINK).json()["url"]
    time_machine.move_to(timezone.now() + LINK_LIFETIME + timedelta(seconds=1))
    client.force_login(factories.make_user(password="correct horse battery staple"))
    response = client.get(url.removeprefix("http://testserver"))
    assert response.status_code == 410
    assert "expired" in response.content.decode()


def test_a_user_records_the_agent_that_created_it(api, agent):
    api.post("/users", {"external_id": "u-1"})
    assert User.objects.get(external_id="u-1").created_by_agent == agent


def test_only_the_agent_that_created_the_user_gets_a_link(api, caller, workspace):
    api.post("/users", {"external_id": "u-1"})
    other_key = factories.make_agent(workspace, "scheduler")[1]
    response = caller(other_key).post("/users/u-1/link", LINK)
    assert (response.status_code, response.json()["code"]) == (403, "not_user_creator")
    assert "only the agent that created this user" in response.json()["detail"]
    assert not UserLink.objects.exists()


def test_a_link_needs_the_persons_email(api):
    api.post("/users", {"external_id": "u-1"})
    for body in ({}, {"email": ""}, {"email": "not-an-email"}, {"email": "x" * 250 + "@a.io"}):
        response = api.post("/users/u-1/link", body)
        assert (response.status_code, response.json()["code"]) == (422, "invalid_input")
    assert not UserLink.objects.exists()
