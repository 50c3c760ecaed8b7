"""POST /users and GET /users/{external_id}: the end users of an agent's workspace."""

from __future__ import annotations

from memoryhub.models import AuditEntry, User
from memoryhub.services.agents import create_personal_key
from tests import factories


def test_creating_a_user_returns_201_then_200_with_the_same_user(api, workspace):
    body = {"external_id": "u-42", "email": "Dana@Example.com", "display_name": "Dana"}
    created = api.post("/users", body)
    assert created.status_code == 201
    assert created.json()["external_id"] == "u-42"
    assert created.json()["email"] == "dana@example.com"
    assert sorted(created.json()["modes"]) == ["personal", "work"]
    again = api.post("/users", {"external_id": "u-42"})
    assert again.status_code == 200
    assert again.json()["id"] == created.json()["id"]
    user = User.objects.get(pk=created.json()["id"])
    assert user.workspace == workspace
    assert not user.has_usable_password()  # They claim the account later by signing up.
    assert AuditEntry.objects.filter(action="user.create").count() == 1


def test_get_user_by_external_id(api, user):
    response = api.get("/users/alice")
    assert response.status_code == 200
    assert response.json()["id"] == str(user.pk)
    assert api.get("/users/nobody").status_code == 404


def test_the_same_external_id_in_another_workspace_is_another_user(api, workspace):
    factories.make_user(workspace=factories.make_workspace(), external_id="shared-id")
    response = api.post("/users", {"external_id": "shared-id"})
    assert response.status_code == 201
    assert User.objects.filter(external_id="shared-id").count() == 2


def test_user_creation_rejects_bad_input(api, user, caller):
    assert api.post("/users", {}).status_code == 422
    assert api.post("/users", {"external_id": "   "}).status_code == 422
    assert api.post("/users", {"external_id": "x", "email": "not-an-email"}).status_code == 422
    assert api.post("/users", {"external_id": "a\u0000b"}).status_code == 422
    taken = api.post("/users", {"external_id": "new", "email": "alice@example.com"})
    assert taken.status_code == 409
    assert taken.json()["code"] == "conflict"
    personal_key = create_personal_key(user=user, name="cli").raw_key
    assert caller(personal_key).post("/users", {"external_id": "z"}).status_code == 403
