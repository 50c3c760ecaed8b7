"""Styled 403, 404 and 500 pages with a way back; the admin refuses non-staff without a loop."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.accounts.conftest import add_totp

pytestmark = pytest.mark.urls("tests.accounts.urls")


@pytest.fixture(autouse=True)
def _debug_off(settings):
    # What a person sees in production: with DEBUG on, Django shows its technical pages instead.
    settings.DEBUG = False


def test_a_signed_in_end_user_gets_a_styled_403_from_the_admin_not_a_redirect_loop(client, user):
    client.force_login(user)
    for path in ("/admin/", "/admin/login/?next=/admin/", "/admin/memoryhub/memory/"):
        response = client.get(path)
        assert response.status_code == 403, path
        page = response.content.decode()
        assert "This page is not for your account" in page and 'class="site-header"' in page
        assert 'href="/dashboard/"' in page  # The way back.


def test_a_reviewer_who_is_not_staff_gets_403_from_the_admin(client, reviewer):
    add_totp(reviewer)
    client.force_login(reviewer)
    assert client.get("/admin/").status_code == 403


def test_an_anonymous_visitor_is_still_sent_to_the_allauth_login_for_the_admin(client, db):
    response = client.get("/admin/", follow=True)
    assert response.redirect_chain[-1][0] == "/accounts/login/?next=%2Fadmin%2F"
    assert response.status_code == 200


def test_staff_with_totp_reach_the_admin(superuser_client):
    assert superuser_client.get("/admin/").status_code == 200


def test_a_role_page_refused_is_the_styled_403(client, user):
    client.force_login(user)
    response = client.get("/review/")
    assert response.status_code == 403
    assert "This page is not for your account" in response.content.decode()


def test_an_unknown_address_is_a_styled_404_without_the_url_list(client, user):
    client.force_login(user)
    response = client.get("/dashboard/no-such-page/")
    page = response.content.decode()
    assert response.status_code == 404
    assert "Nothing here" in page and "Back to your memories" in page
    assert "URLconf" not in page and "memoryhub.urls" not in page


def test_another_users_memory_is_the_same_404_as_a_missing_one(client, user, other_user):
    from tests import factories

    theirs = factories.make_memory(other_user, factories.mode_of(other_user), "Bob's secret.")
    client.force_login(user)
    response = client.get(f"/dashboard/modes/personal/memories/{theirs.pk}/")
    assert response.status_code == 404
    assert "Nothing here" in response.content.decode()
    assert "Bob" not in response.content.decode()


def test_an_anonymous_404_offers_the_login(client, db):
    page = client.get("/nowhere/").content.decode()
    assert "Nothing here" in page and 'href="/accounts/login/"' in page


def test_a_crash_is_the_styled_500_page(db):
    client = Client(raise_request_exception=False)
    response = client.get("/test-crash/")
    page = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on our side" in page and "css/app.css" in page
    assert "a bug in a view" not in page and "Traceback" not in page
