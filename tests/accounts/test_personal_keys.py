"""A personal key outlives no password, and minting one asks for the password again."""

from __future__ import annotations

import re
from datetime import timedelta

import time_machine
from django.core import mail
from django.test import Client
from django.utils import timezone

from memoryhub.models import ApiKey, AuditEntry
from memoryhub.services.agents import create_personal_key
from tests import factories
from tests.api.conftest import Caller

PASSWORD = "correct horse battery staple"  # tests/factories.py's
NEW_PASSWORD = "a brand new and unusual passphrase"
REAUTHENTICATE = "/accounts/reauthenticate/?next=%2Fdashboard%2Fkeys%2F"


def _reaches_the_api(raw_key: str) -> int:
    return Caller(Client(), raw_key).get("/users/alice").status_code


def test_changing_the_password_revokes_every_personal_key(client, user, workspace):
    keys = [create_personal_key(user=user, name=name).raw_key for name in ("cli", "desktop")]
    _, agent_key = factories.make_agent(workspace)
    assert [_reaches_the_api(key) for key in keys] == [200, 200]
    client.force_login(user)
    response = client.post(
        "/accounts/password/change/",
        {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert response.status_code == 302
    assert [_reaches_the_api(key) for key in keys] == [401, 401]
    assert _reaches_the_api(agent_key) == 200  # an agent's key is the agent's, not the user's
    audit = AuditEntry.objects.get(action="api_key.revoke_all")
    revoked = ApiKey.objects.filter(user=user).values_list("pk", flat=True)
    assert sorted(audit.object_ids) == sorted(str(pk) for pk in revoked)


def test_resetting_the_password_revokes_every_personal_key(client, user, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    key = create_personal_key(user=user, name="cli").raw_key
    client.post("/accounts/password/reset/", {"email": user.email})
    link = re.search(r"http://testserver(/accounts/password/reset/key/\S+/)", mail.outbox[0].body)
    assert link is not None
    form = client.get(link.group(1), follow=True)
    response = client.post(
        form.redirect_chain[-1][0], {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    )
    assert response.status_code == 302
    assert _reaches_the_api(key) == 401


def test_minting_a_key_without_a_recent_reauthentication_asks_for_the_password(client, user):
    client.force_login(user)  # signed in, but not just now with a password
    assert client.get("/dashboard/keys/").status_code == 200  # the list needs no password
    response = client.post("/dashboard/keys/", {"name": "desktop"})
    assert (response.status_code, response["Location"]) == (302, REAUTHENTICATE)
    assert not ApiKey.objects.filter(user=user).exists()


def test_after_reauthenticating_the_key_is_minted(client, user):
    client.force_login(user)
    client.post("/dashboard/keys/", {"name": "desktop"})
    # The password again: allauth then replays the suspended request, which mints the key
    # and redirects to the page that shows it once.
    response = client.post(REAUTHENTICATE, {"password": PASSWORD}, follow=True)
    assert response.status_code == 200
    raw_key = response.content.decode().split('id="new-key" class="secret" value="')[1]
    assert _reaches_the_api(raw_key.split('"')[0]) == 200
    again = client.post("/dashboard/keys/", {"name": "laptop"})
    assert (again.status_code, again["Location"]) == (302, "/dashboard/keys/")
    assert ApiKey.objects.filter(user=user).count() == 2


def test_a_reauthentication_is_recent_for_five_minutes_only(client, user):
    client.force_login(user)
    client.post(REAUTHENTICATE, {"password": PASSWORD})
    with time_machine.travel(timezone.now() + timedelta(minutes=6)):
        response = client.post("/dashboard/keys/", {"name": "desktop"})
    assert (response.status_code, response["Location"]) == (302, REAUTHENTICATE)
    assert not ApiKey.objects.filter(user=user).exists()


def test_a_wrong_password_mints_no_key(client, user):
    client.force_login(user)
    client.post("/dashboard/keys/", {"name": "desktop"})
    response = client.post(REAUTHENTICATE, {"password": "wrong"})
    assert response.status_code == 200
    assert not ApiKey.objects.filter(user=user).exists()
