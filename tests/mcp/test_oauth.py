"""OAuth 2.1 sign-in for the MCP endpoint, end to end with the `mcp` SDK's OAuth client: it
finds the authorization server through the 401 and Protected Resource Metadata, registers,
sends the person to sign in and consent (PKCE S256, resource indicator), then calls tools."""

from __future__ import annotations

import secrets
from datetime import timedelta
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx2
from allauth.account.models import EmailAddress
from allauth.idp.oidc.adapter import get_adapter
from allauth.idp.oidc.models import Client as OIDCClient
from allauth.idp.oidc.models import Token
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import (
    format_hotp_value,
    generate_totp_secret,
    hotp_value,
    yield_hotp_counters_from_time,
)
from django.test import Client as DjangoClient
from django.utils import timezone
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from accounts.adapter import MFAAdapter
from memoryhub.models import ApiKey, AuditEntry
from tests import factories
from tests.mcp.conftest import error_text, structured

REDIRECT_URI = "http://127.0.0.1:9/callback"


class _Form(HTMLParser):
    """The consent form's inputs."""

    def __init__(self):
        super().__init__()
        self.fields = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "input" and attributes.get("name"):
            self.fields.append(attributes)


class _Memory:
    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


async def _consent(browser, url, base_url, seen, *, untick=()):
    """On the consent page at `url` (or where it leads), grant the ticked modes."""
    page = await browser.get(url, follow_redirects=True)
    assert page.status_code == 200, page.text
    form = _Form()
    form.feed(page.text)
    data = [
        (field["name"], field.get("value", ""))
        for field in form.fields
        if field.get("type") != "checkbox" or field["value"] not in untick
    ]
    seen["scopes"] = [f["value"] for f in form.fields if f.get("type") == "checkbox"]
    granted = await browser.post(
        f"{base_url}/identity/o/authorize",
        content=urlencode([*data, ("action", "grant")]),
        headers={"Referer": str(page.url), "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert granted.status_code == 302, granted.text
    seen["redirect"] = granted.headers["location"]


def _callback_handler(seen):
    async def callback_handler():
        query = parse_qs(urlsplit(seen["redirect"]).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0])

    return callback_handler


def _browser(base_url, session_cookie, *, untick=()):
    """The person's browser, signed in: opens the authorization URL and consents."""
    seen = {}

    async def redirect_handler(url):
        seen["authorize"] = url
        async with httpx2.AsyncClient(cookies={"sessionid": session_cookie}) as browser:
            await _consent(browser, url, base_url, seen, untick=untick)

    return redirect_handler, _callback_handler(seen), seen


def _signed_in(user):
    client = DjangoClient()
    client.force_login(user)
    return client


def test_a_person_signs_in_consents_and_the_client_calls_tools_within_the_granted_modes(
    base_url, world, embedder
):
    alice = world["alice"]
    factories.make_memory(alice, factories.mode_of(alice), "Lives in Lyon", embedder=embedder)
    dashboard = _signed_in(alice)
    redirect_handler, callback_handler, seen = _browser(
        base_url, dashboard.cookies["sessionid"].value, untick=("mode:work",)
    )
    provider = OAuthClientProvider(
        server_url=f"{base_url}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="Desktop assistant",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope="mode:personal mode:work",
        ),
        storage=_Memory(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )

    async def run():
        async with httpx2.AsyncClient(auth=provider, timeout=120) as http:
            transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
            async with Client(transport, read_timeout_seconds=60) as client:
                personal = await client.call_tool("get_profile", {"user": "me"})
                work = await client.call_tool("get_profile", {"user": "me", "mode": "work"})
                return personal, work

    personal, work = anyio.run(run)

    authorize = parse_qs(urlsplit(seen["authorize"]).query)
    assert authorize["code_challenge_method"] == ["S256"]
    assert authorize["resource"] == [f"{base_url}/mcp"]
    assert sorted(seen["scopes"]) == ["mode:personal", "mode:work"]
    assert [m["content"] for m in structured(personal)["facts"]] == ["Lives in Lyon"]
    assert error_text(work).startswith("forbidden")
    (grant_key,) = ApiKey.objects.filter(user=alice, name__startswith="OAuth: Desktop assistant")
    entry = AuditEntry.objects.filter(action="profile.read").order_by("-id").first()
    assert (entry.channel, entry.actor_id) == ("mcp", f"personal-key:{grant_key.pk}")

    # The grant is in the dashboard's key list; revoked there, its tokens stop working at once.
    assert "OAuth: Desktop assistant" in dashboard.get("/dashboard/keys/").content.decode()
    dashboard.post(f"/dashboard/keys/{grant_key.pk}/revoke/")
    token = provider.context.current_tokens.access_token
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
    refused = httpx2.post(f"{base_url}/mcp", json=body, headers=headers)
    assert refused.status_code == 401
    assert "revoked" in refused.json()["detail"]
    assert "resource_metadata=" in refused.headers["www-authenticate"]
    # A refresh mints a new token of the same grant: still refused.
    refreshed = httpx2.post(
        f"{base_url}/identity/o/api/token",
        content=urlencode(
            {
                "grant_type": "refresh_token",
                "refresh_token": provider.context.current_tokens.refresh_token,
                "client_id": provider.context.client_info.client_id,
            }
        ),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert refreshed.status_code == 200, refreshed.text
    new_token = refreshed.json()["access_token"]
    headers["Authorization"] = f"Bearer {new_token}"
    after_refresh = httpx2.post(f"{base_url}/mcp", json=body, headers=headers)
    assert (after_refresh.status_code, after_refresh.json()["detail"]) == (
        401,
        "this sign-in was revoked: sign in and consent again",
    )


def test_the_resource_metadata_names_the_authorization_server(base_url, world):
    metadata = httpx2.get(f"{base_url}/.well-known/oauth-protected-resource/mcp").json()
    assert metadata["resource"] == f"{base_url}/mcp"
    assert metadata["authorization_servers"] == [base_url]
    server = httpx2.get(f"{base_url}/.well-known/openid-configuration").json()
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert {"mode:personal", "mode:work"} <= set(server["scopes_supported"])


def _access_token(user, *, resources, scopes=("mode:personal",)):
    """An access token as the authorization server stores it (by hash), for these resources."""
    client = OIDCClient.objects.create(name="Other app", type=OIDCClient.Type.PUBLIC)
    raw = secrets.token_urlsafe(32)
    token = Token(
        type=Token.Type.ACCESS_TOKEN,
        client=client,
        user=user,
        hash=get_adapter().hash_token(raw),
        expires_at=timezone.now() + timedelta(hours=1),
    )
    token.set_resources(resources)
    token.set_scopes(scopes)
    token.save()
    return raw


def _list_tools(base_url, token):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
    return httpx2.post(f"{base_url}/mcp", json=body, headers=headers)


def test_a_token_for_another_resource_or_none_is_refused(base_url, world):
    elsewhere = _access_token(world["alice"], resources=["https://elsewhere.example/mcp"])
    unbound = _access_token(world["alice"], resources=[])
    bound = _access_token(world["alice"], resources=[f"{base_url}/mcp"])
    for token in (elsewhere, unbound, "not-a-token"):
        refused = _list_tools(base_url, token)
        assert (refused.status_code, refused.json()["code"]) == (401, "not_authenticated")
    assert _list_tools(base_url, bound).status_code == 200


def test_without_a_signing_key_oauth_is_off_and_only_keys_work(base_url, world, settings):
    settings.MEMORYHUB_MCP_OAUTH = False
    bound = _access_token(world["alice"], resources=[f"{base_url}/mcp"])
    refused = _list_tools(base_url, bound)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == "Bearer"
    assert _list_tools(base_url, world["key"]).status_code == 200


async def _post_form(browser, page, fields):
    """Submit the page's form with these fields (and its CSRF token), as a browser would."""
    form = _Form()
    form.feed(page.text)
    data = {f["name"]: f.get("value", "") for f in form.fields if f.get("type") == "hidden"}
    return await browser.post(
        str(page.url),
        content=urlencode({**data, **fields}),
        headers={"Referer": str(page.url), "Content-Type": "application/x-www-form-urlencoded"},
    )


def _browser_with_two_factor(base_url, email, password, totp_secret):
    """A browser not signed in: the authorization URL sends it to the dashboard's login page,
    which asks for the password, then the authenticator code, then comes back to consent."""
    seen = {}

    async def redirect_handler(url):
        seen["authorize"] = url
        async with httpx2.AsyncClient() as browser:
            login = await browser.get(url, follow_redirects=True)
            seen["login_page"] = urlsplit(str(login.url)).path
            password_step = await _post_form(browser, login, {"login": email, "password": password})
            seen["after_password"] = password_step.headers.get("location")
            # Signed in halfway: the authorization endpoint still sends the browser to log in.
            halfway = await browser.get(url)
            seen["authorize_before_code"] = halfway.headers.get("location", "")
            two_factor = await browser.get(f"{base_url}{seen['after_password']}")
            # A code lives for one 30-second period; one crossing a boundary gets a second try.
            for _ in range(2):
                code = format_hotp_value(
                    hotp_value(totp_secret, next(yield_hotp_counters_from_time()))
                )
                code_step = await _post_form(browser, two_factor, {"code": code})
                if code_step.status_code == 302:
                    break
            assert code_step.status_code == 302, code_step.text
            seen["after_code"] = code_step.headers["location"]
            await _consent(browser, f"{base_url}{seen['after_code']}", base_url, seen)

    return redirect_handler, _callback_handler(seen), seen


def test_a_person_with_an_authenticator_app_passes_its_code_before_consenting(
    base_url, world, embedder
):
    alice = world["alice"]
    EmailAddress.objects.update_or_create(
        user=alice, email=alice.email, defaults={"verified": True, "primary": True}
    )
    secret = generate_totp_secret()
    Authenticator.objects.create(
        user=alice, type=Authenticator.Type.TOTP, data={"secret": MFAAdapter().encrypt(secret)}
    )
    factories.make_memory(alice, factories.mode_of(alice), "Lives in Lyon", embedder=embedder)
    redirect_handler, callback_handler, seen = _browser_with_two_factor(
        base_url, alice.email, "correct horse battery staple", secret
    )
    provider = OAuthClientProvider(
        server_url=f"{base_url}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="Phone assistant",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope="mode:personal mode:work",
        ),
        storage=_Memory(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )

    async def run():
        async with httpx2.AsyncClient(auth=provider, timeout=120) as http:
            transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
            async with Client(transport, read_timeout_seconds=60) as client:
                return await client.call_tool("get_profile", {"user": "me"})

    profile = anyio.run(run)

    assert seen["login_page"] == "/accounts/login/"
    assert seen["after_password"] == "/accounts/2fa/authenticate/"
    assert seen["authorize_before_code"].startswith("/accounts/login/")
    assert seen["after_code"].startswith("/identity/o/authorize?")
    assert sorted(seen["scopes"]) == ["mode:personal", "mode:work"]
    assert [m["content"] for m in structured(profile)["facts"]] == ["Lives in Lyon"]
    (grant_key,) = ApiKey.objects.filter(user=alice, name__startswith="OAuth: Phone assistant")
    entry = AuditEntry.objects.filter(action="profile.read").order_by("-id").first()
    assert (entry.channel, entry.actor_id) == ("mcp", f"personal-key:{grant_key.pk}")
