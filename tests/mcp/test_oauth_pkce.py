"""The authorization server takes PKCE with S256 only: a public client must send a challenge,
and a `plain` one is refused before the person is asked anything."""

from __future__ import annotations

import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from allauth.idp.oidc.models import Client as OIDCClient

from tests import factories

REDIRECT_URI = "http://127.0.0.1:9/callback"


@pytest.fixture
def public_client(db):
    client = OIDCClient.objects.create(name="Desktop assistant", type=OIDCClient.Type.PUBLIC)
    client.set_redirect_uris([REDIRECT_URI])
    client.set_scopes(["openid", "mode:personal", "mode:work"])
    client.save()
    return client


def _authorize(browser, public_client, **pkce):
    query = {
        "response_type": "code",
        "client_id": public_client.id,
        "redirect_uri": REDIRECT_URI,
        "scope": "openid mode:personal",
        "state": "s1",
        **pkce,
    }
    return browser.get(f"/identity/o/authorize?{urlencode(query)}")


def _error_of(response) -> str | None:
    if response.status_code != 302:
        return None
    return parse_qs(urlsplit(response["Location"]).query).get("error", [None])[0]


@pytest.mark.parametrize(
    "pkce",
    [
        {},  # No challenge at all.
        {"code_challenge": "a" * 43, "code_challenge_method": "plain"},
        {"code_challenge": "a" * 43},  # No method means plain.
    ],
)
def test_a_public_client_without_an_s256_challenge_is_refused(
    client, workspace, public_client, pkce
):
    client.force_login(factories.make_user(workspace=workspace, email="pat@example.com"))
    response = _authorize(client, public_client, **pkce)
    # Refused for the challenge, not for anything else the request holds.
    assert _error_of(response) == "invalid_request", (
        response.status_code,
        response.get("Location"),
    )


def test_an_s256_challenge_reaches_the_consent_page(client, workspace, public_client):
    client.force_login(factories.make_user(workspace=workspace, email="pat@example.com"))
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    response = _authorize(
        client,
        public_client,
        code_challenge=challenge.decode().rstrip("="),
        code_challenge_method="S256",
    )
    assert response.status_code == 200, (response.status_code, response.get("Location"))
    assert b"mode:personal" in response.content
