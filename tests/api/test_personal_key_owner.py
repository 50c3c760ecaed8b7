"""A personal key acts for its owner by default: no `user`, or `me`; agents must name the user."""

from __future__ import annotations

from memoryhub.audit.log import subject_pseudonym
from memoryhub.models import AuditEntry
from memoryhub.services.agents import create_personal_key


def test_a_personal_key_without_user_reads_its_owners_profile(caller, user):
    key = create_personal_key(user=user, name="cli").raw_key
    response = caller(key).get("/profile")
    assert response.status_code == 200
    assert AuditEntry.objects.filter(
        subject=subject_pseudonym(user.pk), action="profile.read"
    ).exists()


def test_a_personal_key_remembers_for_its_owner_with_no_user_field(caller, user):
    key = create_personal_key(user=user, name="cli").raw_key
    created = caller(key).post(
        "/memories", {"kind": "preference", "content": "The user likes green tea"}
    )
    assert created.status_code == 201, created.json()
    listed = caller(key).get("/memories", user="me").json()
    assert [m["content"] for m in listed["items"]] == ["The user likes green tea"]


def test_users_me_gives_a_personal_key_its_hub_id(caller, user):
    key = create_personal_key(user=user, name="cli").raw_key
    response = caller(key).get("/users/me")
    assert response.status_code == 200
    assert response.json()["id"] == str(user.pk) and response.json()["email"] == user.email


def test_me_never_reaches_another_user(caller, user, other_user):
    key = create_personal_key(user=other_user, name="cli").raw_key
    assert caller(key).get("/users/me").json()["id"] == str(other_user.pk)
    assert caller(key).get("/profile", user=str(user.pk)).status_code == 404


def test_an_agent_key_must_name_the_user(api, user):
    response = api.get("/profile")
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_input"
    assert "agent key names the user" in response.json()["detail"]


def test_for_an_agent_key_me_is_just_an_external_id(api, user):
    assert api.get("/users/me").status_code == 404
    assert api.get("/profile", user="me").status_code == 404
