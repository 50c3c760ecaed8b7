"""Admin tools, linked logins: an admin of the workspace sees the links used and undoes one."""

from __future__ import annotations

import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.test import Client

from memoryhub.actors import Actor
from memoryhub.models import AuditEntry, User, UserLink
from memoryhub.services.user_links import issue_user_link, link_user
from memoryhub.services.users import create_user
from tests import factories

EMAIL = "dana@example.com"


def _staff(workspace, email, *, superuser=False):
    staff = factories.make_user(workspace=workspace, email=email)
    User.objects.filter(pk=staff.pk).update(is_staff=True, is_superuser=superuser)
    Authenticator.objects.create(user=staff, type=Authenticator.Type.TOTP, data={"secret": "x"})
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def linked(workspace):
    """An agent's user whose login a person linked: (the user, the link, that person's client)."""
    agent = factories.make_agent(workspace, "assistant")[0]
    user = create_user(workspace=workspace, external_id="u-1", created_by_agent=agent)
    token = issue_user_link(user=user, agent=agent, email=EMAIL, actor=Actor.system()).token
    account = factories.make_user(workspace=factories.make_workspace("default"), email=EMAIL)
    EmailAddress.objects.create(user=account, email=EMAIL, verified=True, primary=True)
    user = link_user(token=token, account=account)
    person = Client()
    person.force_login(user)
    return user, UserLink.objects.get(), person


def test_the_admin_sees_the_links_used_in_their_workspace(workspace, linked):
    admin = _staff(workspace, "root@example.com")
    page = admin.get("/admin-tools/links/").content.decode()
    assert EMAIL in page and "u-1" in page and "assistant" in page
    assert f"/admin-tools/links/{linked[1].pk}/undo/" in page
    entry = AuditEntry.objects.order_by("-id").first()
    assert (entry.action, entry.channel, entry.subject) == ("admin.user_links", "admin", "")


def test_undoing_a_link_detaches_the_login_and_signs_the_person_out(workspace, linked):
    user, link, person = linked
    assert person.get("/dashboard/").status_code == 200
    admin = _staff(workspace, "root@example.com")
    response = admin.post(f"/admin-tools/links/{link.pk}/undo/")
    assert (response.status_code, response["Location"]) == (302, "/admin-tools/links/")
    user.refresh_from_db()
    assert user.email is None
    assert User.objects.get(email=EMAIL).pk != user.pk
    assert person.get("/dashboard/").status_code == 302  # Its session ended.
    assert AuditEntry.objects.filter(action="user.link_undo").count() == 1
    page = admin.get("/admin-tools/links/").content.decode()
    assert "Undone" in page and f"/admin-tools/links/{link.pk}/undo/" not in page
    again = admin.post(f"/admin-tools/links/{link.pk}/undo/", follow=True)
    assert "undone already" in again.content.decode()


def test_another_workspaces_admin_neither_sees_nor_undoes_the_link(workspace, linked):
    user, link, _ = linked
    elsewhere = _staff(factories.make_workspace(), "other-root@example.com")
    page = elsewhere.get("/admin-tools/links/").content.decode()
    assert EMAIL not in page and "No login was linked yet." in page
    assert elsewhere.post(f"/admin-tools/links/{link.pk}/undo/").status_code == 404
    user.refresh_from_db()
    assert user.email == EMAIL
    assert not AuditEntry.objects.filter(action="user.link_undo").exists()


def test_a_superuser_sees_and_undoes_every_workspaces_links(linked):
    root = _staff(factories.make_workspace(), "super@example.com", superuser=True)
    assert EMAIL in root.get("/admin-tools/links/").content.decode()
    assert root.post(f"/admin-tools/links/{linked[1].pk}/undo/").status_code == 302
    assert UserLink.objects.get().undone_at is not None


def test_only_staff_may_undo_and_only_by_post(workspace, linked, client, user):
    link = linked[1]
    client.force_login(user)
    assert client.get("/admin-tools/links/").status_code == 403
    assert client.post(f"/admin-tools/links/{link.pk}/undo/").status_code == 403
    admin = _staff(workspace, "root@example.com")
    assert admin.get(f"/admin-tools/links/{link.pk}/undo/").status_code == 405
    assert admin.post("/admin-tools/links/999999/undo/").status_code == 404
    assert UserLink.objects.get().undone_at is None


def test_undoing_a_link_twice_says_so_in_the_admins_language(workspace, linked):
    admin = _staff(workspace, "root@example.com")
    admin.post(f"/admin-tools/links/{linked[1].pk}/undo/")
    again = admin.post(
        f"/admin-tools/links/{linked[1].pk}/undo/", follow=True, HTTP_ACCEPT_LANGUAGE="fr"
    )
    page = again.content.decode()
    assert "Ce lien a déjà été annulé." in page and "undone already" not in page
    # The linked time in the French format, with its zone.
    assert " UTC</td>" in page and "Dec" not in page


def test_undoing_the_link_of_a_user_with_no_login_left_says_so(workspace, linked):
    user, link, _ = linked
    User.objects.filter(pk=user.pk).update(email=None)  # Its login went another way.
    admin = _staff(workspace, "root@example.com")
    response = admin.post(f"/admin-tools/links/{link.pk}/undo/", follow=True)
    assert response.status_code == 200
    assert "This user has no login any more: there is nothing to undo." in (
        response.content.decode()
    )
