"""Granting roles: the command and the admin-tools page make reviewers and admins, audited."""

from __future__ import annotations

import io

import pytest
from allauth.mfa.models import Authenticator
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from accounts.roles import REVIEWERS_GROUP, is_admin, is_reviewer
from memoryhub.audit.log import subject_pseudonym
from memoryhub.models import AuditEntry
from tests import factories


def _grant(*args: str) -> None:
    call_command("grant_role", *args, stdout=io.StringIO())


def test_a_fresh_database_has_the_reviewers_group(db):
    # Created by accounts/migrations/0001, not by a fixture.
    assert Group.objects.filter(name=REVIEWERS_GROUP).exists()


def test_grant_role_makes_a_reviewer_of_the_workspace(user, workspace):
    _grant(user.email, "reviewer", "--workspace", workspace.slug)
    user.refresh_from_db()
    assert is_reviewer(user) and not is_admin(user)


def test_grant_role_makes_an_admin(user, workspace):
    _grant(user.email, "admin", "--workspace", workspace.slug)
    user.refresh_from_db()
    assert is_admin(user) and not is_reviewer(user)


def test_grant_role_moves_an_account_that_holds_nothing_into_the_workspace(db):
    # As createsuperuser leaves it: an account in "default" with nothing in it.
    account = factories.make_user(workspace=factories.make_workspace("default"))
    team = factories.make_workspace("team")
    _grant(account.email.upper(), "reviewer", "--workspace", "team")
    account.refresh_from_db()
    assert account.workspace_id == team.pk and is_reviewer(account)


def test_grant_role_refuses_to_move_an_account_that_holds_memory(user):
    factories.make_memory(user, factories.mode_of(user), "The user likes tea")
    home = user.workspace_id
    factories.make_workspace("elsewhere")
    with pytest.raises(CommandError, match="holds data"):
        _grant(user.email, "reviewer", "--workspace", "elsewhere")
    user.refresh_from_db()
    assert user.workspace_id == home and not is_reviewer(user)


def test_grant_role_names_an_unknown_email_or_workspace(user, workspace):
    with pytest.raises(CommandError, match=r"nobody@example\.com"):
        _grant("nobody@example.com", "reviewer", "--workspace", workspace.slug)
    with pytest.raises(CommandError, match="no workspace 'nope'"):
        _grant(user.email, "reviewer", "--workspace", "nope")


def test_grant_role_refuses_an_unknown_role(user, workspace):
    with pytest.raises(CommandError, match="invalid choice"):
        _grant(user.email, "owner", "--workspace", workspace.slug)


def test_revoke_takes_the_role_away_and_both_are_audited(user, workspace):
    _grant(user.email, "reviewer", "--workspace", workspace.slug)
    _grant(user.email, "reviewer", "--workspace", workspace.slug, "--revoke")
    user.refresh_from_db()
    assert not is_reviewer(user)
    actions = list(
        AuditEntry.objects.filter(subject=subject_pseudonym(user.pk))
        .filter(action__startswith="role.")
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == ["role.grant_reviewer", "role.revoke_reviewer"]


def test_revoke_in_another_workspace_changes_nothing(user, workspace):
    _grant(user.email, "admin", "--workspace", workspace.slug)
    factories.make_workspace("elsewhere")
    with pytest.raises(CommandError, match="not in workspace"):
        _grant(user.email, "admin", "--workspace", "elsewhere", "--revoke")
    user.refresh_from_db()
    assert is_admin(user)


@pytest.fixture
def staff_client(client, workspace):
    staff = factories.make_user(workspace=workspace, email="root@example.com")
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    Authenticator.objects.create(user=staff, type=Authenticator.Type.TOTP, data={"secret": "x"})
    client.force_login(staff)
    return client


def test_the_roles_page_lists_role_holders(staff_client, user, workspace):
    _grant(user.email, "reviewer", "--workspace", workspace.slug)
    page = staff_client.get("/admin-tools/roles/").content.decode()
    assert user.email in page and "root@example.com" in page


def test_the_roles_page_grants_a_role(staff_client, user, workspace):
    response = staff_client.post(
        "/admin-tools/roles/",
        {"email": user.email, "role": "reviewer", "workspace": workspace.slug, "action": "grant"},
    )
    assert response.status_code == 302 and response["Location"] == "/admin-tools/roles/"
    user.refresh_from_db()
    assert is_reviewer(user)


def test_the_roles_page_shows_errors_with_422(staff_client, workspace):
    bad_form = staff_client.post("/admin-tools/roles/", {"email": "x", "role": "owner"})
    assert bad_form.status_code == 422
    unknown = staff_client.post(
        "/admin-tools/roles/",
        {
            "email": "ghost@example.com",
            "role": "admin",
            "workspace": workspace.slug,
            "action": "grant",
        },
    )
    assert unknown.status_code == 422 and "ghost@example.com" in unknown.content.decode()


def test_the_roles_page_refuses_a_reviewer(client, user, workspace):
    _grant(user.email, "reviewer", "--workspace", workspace.slug)
    Authenticator.objects.create(user=user, type=Authenticator.Type.TOTP, data={"secret": "x"})
    client.force_login(user)
    assert client.get("/admin-tools/roles/").status_code == 403
    assert client.post("/admin-tools/roles/", {"email": user.email}).status_code == 403


def test_a_createsuperuser_account_can_be_made_admin_of_another_workspace(db):
    from memoryhub.models import User

    root = User.objects.create_superuser("root@example.com", "correct horse battery staple")
    demo = factories.make_workspace("demo")
    _grant("root@example.com", "admin", "--workspace", "demo")
    root.refresh_from_db()
    assert root.workspace_id == demo.pk and is_admin(root) and is_reviewer(root)
