"""Roles: reviewers and staff are checked on the server, and both must use TOTP."""

from __future__ import annotations

import pytest

from accounts.roles import has_totp, is_admin, is_reviewer, needs_mfa_setup
from tests.accounts.conftest import add_totp

pytestmark = pytest.mark.urls("tests.accounts.urls")


def test_a_plain_user_is_neither_reviewer_nor_admin(user):
    assert not is_reviewer(user) and not is_admin(user) and not needs_mfa_setup(user)


def test_the_reviewers_group_makes_a_reviewer(reviewer):
    assert is_reviewer(reviewer) and not is_admin(reviewer)


def test_an_anonymous_visitor_has_no_role(db):
    from django.contrib.auth.models import AnonymousUser

    assert not is_reviewer(AnonymousUser()) and not is_admin(AnonymousUser())


def test_an_inactive_reviewer_is_not_a_reviewer(reviewer):
    reviewer.is_active = False
    reviewer.save(update_fields=["is_active"])
    assert not is_reviewer(reviewer)


def test_a_reviewer_page_sends_anonymous_visitors_to_login(client, db):
    response = client.get("/test-review/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_a_reviewer_page_refuses_an_end_user(client, user):
    client.force_login(user)
    assert client.get("/test-review/").status_code == 403


def test_a_reviewer_without_totp_is_sent_to_set_it_up(client, reviewer):
    client.force_login(reviewer)
    response = client.get("/test-review/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/2fa/totp/activate/"


def test_a_reviewer_with_totp_gets_the_page(client, reviewer):
    add_totp(reviewer)
    client.force_login(reviewer)
    assert has_totp(reviewer)
    response = client.get("/test-review/")
    assert response.status_code == 200 and response.content == b"review queue"


def test_a_staff_page_refuses_a_reviewer(client, reviewer):
    add_totp(reviewer)
    client.force_login(reviewer)
    assert client.get("/test-staff/").status_code == 403


def test_staff_without_totp_are_sent_to_set_it_up(client, staff):
    client.force_login(staff)
    assert client.get("/test-staff/")["Location"] == "/accounts/2fa/totp/activate/"


def test_staff_with_totp_get_the_staff_page(client, staff):
    add_totp(staff)
    client.force_login(staff)
    assert client.get("/test-staff/").status_code == 200


def test_the_admin_sends_staff_without_totp_to_set_it_up(client, staff):
    client.force_login(staff)
    response = client.get("/admin/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/2fa/totp/activate/"


def test_the_admin_lets_staff_with_totp_in(client, staff):
    add_totp(staff)
    client.force_login(staff)
    assert client.get("/admin/").status_code == 200


def test_the_admin_login_is_allauths_login_with_its_totp_step(client, db):
    response = client.get("/admin/login/?next=/admin/memoryhub/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=%2Fadmin%2Fmemoryhub%2F"


def test_the_admin_login_form_cannot_be_posted_around_totp(client, staff):
    response = client.post(
        "/admin/login/", {"username": staff.email, "password": "correct horse battery staple"}
    )
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert "_auth_user_id" not in client.session


def test_the_header_links_review_and_admin_tools_only_for_those_roles(client, user, other_user):
    from django.contrib.auth.models import Group

    from accounts.roles import REVIEWERS_GROUP

    client.force_login(user)
    page = client.get("/dashboard/settings/").content.decode()
    assert 'href="/review/"' not in page and 'href="/admin-tools/"' not in page
    other_user.groups.add(Group.objects.get_or_create(name=REVIEWERS_GROUP)[0])
    client.force_login(other_user)
    page = client.get("/dashboard/settings/").content.decode()
    assert 'href="/review/"' in page and 'href="/admin-tools/"' not in page
    other_user.is_staff = True
    other_user.save(update_fields=["is_staff"])
    page = client.get("/dashboard/settings/").content.decode()
    assert 'href="/review/"' in page and 'href="/admin-tools/"' in page


def test_after_totp_set_up_the_account_pages_lead_back_to_the_review_queue(client, reviewer):
    client.force_login(reviewer)
    assert client.get("/review/?status=pending")["Location"] == "/accounts/2fa/totp/activate/"
    # Before TOTP is on, no "continue" link: the page would only send them back here.
    assert "Continue to the review queue" not in client.get("/accounts/2fa/").content.decode()
    add_totp(reviewer)
    page = client.get("/accounts/2fa/").content.decode()
    assert "Continue to the review queue" in page and 'href="/review/?status=pending"' in page
    assert client.get("/review/?status=pending").status_code == 200
    # Arrived: the link is gone.
    assert "Continue to the review queue" not in client.get("/accounts/2fa/").content.decode()


def test_the_continue_link_is_per_session(client, reviewer, other_user):
    client.force_login(reviewer)
    client.get("/review/")
    add_totp(other_user)
    other = client.__class__()
    other.force_login(other_user)
    assert "Continue to" not in other.get("/accounts/2fa/").content.decode()
