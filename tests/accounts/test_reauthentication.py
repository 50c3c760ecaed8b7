"""Two-factor set-up right after a login asks no second password; later, or for a key, it does."""

from __future__ import annotations

from datetime import timedelta

import time_machine
from django.utils import timezone

PASSWORD = "correct horse battery staple"
ACTIVATE = "/accounts/2fa/totp/activate/"


def _log_in(client, user):
    response = client.post("/accounts/login/", {"login": user.email, "password": PASSWORD})
    assert response.status_code == 302


def test_two_factor_set_up_right_after_a_login_asks_no_password(client, user):
    _log_in(client, user)
    response = client.get(ACTIVATE)
    assert response.status_code == 200
    assert "Activate Authenticator App" in response.content.decode()


def test_two_factor_set_up_long_after_the_login_asks_for_the_password(client, user):
    _log_in(client, user)
    with time_machine.travel(timezone.now() + timedelta(minutes=6)):
        response = client.get(ACTIVATE)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/reauthenticate/")


def test_a_forced_session_without_a_login_record_still_asks(client, user):
    client.force_login(user)  # No password was typed in this session.
    response = client.get(ACTIVATE)
    assert response.status_code == 302 and "/reauthenticate/" in response["Location"]


def test_minting_a_key_right_after_a_login_still_asks_for_the_password(client, user):
    _log_in(client, user)
    response = client.post("/dashboard/keys/", {"name": "desktop"})
    assert response.status_code == 302 and "/reauthenticate/" in response["Location"]
