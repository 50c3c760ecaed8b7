"""Sign-up, log-in, password reset and the look of the allauth pages."""

from __future__ import annotations

import re

from django.core import mail

from memoryhub.models import Mode, User

PASSWORD = "a long and unusual passphrase"


def test_signing_up_creates_a_user_with_the_default_modes(client, workspace):
    response = client.post(
        "/accounts/signup/",
        {"email": "new@example.com", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302
    user = User.objects.get(email="new@example.com")
    assert sorted(Mode.objects.filter(user=user).values_list("slug", flat=True)) == [
        "personal",
        "work",
    ]


def test_logging_in_leads_to_the_dashboard(client, user):
    response = client.post(
        "/accounts/login/", {"login": user.email, "password": "correct horse battery staple"}
    )
    assert response.status_code == 302 and response["Location"] == "/dashboard/"


def test_a_wrong_password_does_not_log_in(client, user):
    response = client.post("/accounts/login/", {"login": user.email, "password": "wrong"})
    assert response.status_code == 200
    assert "_auth_user_id" not in client.session


def test_logging_out_needs_a_post(client, user):
    client.force_login(user)
    response = client.post("/accounts/logout/")
    assert response.status_code == 302
    assert "_auth_user_id" not in client.session


def test_password_reset_sends_an_email(client, user, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    client.post("/accounts/password/reset/", {"email": user.email})
    assert len(mail.outbox) == 1 and user.email in mail.outbox[0].to


def test_allauth_pages_use_the_memoryhub_layout(client, db):
    page = client.get("/accounts/login/").content.decode()
    assert "css/app.css" in page and 'class="site-header"' in page
    assert re.search(r"<title>\s*Sign In\s*· MemoryHub</title>", page)
    assert 'id="messages"' in page


def test_account_management_pages_link_the_memory_controls(client, user):
    client.force_login(user)
    page = client.get("/accounts/password/change/").content.decode()
    assert "/dashboard/account/delete/" in page and "/accounts/2fa/" in page
