"""Accounts cannot be captured through agents: agents set no login, a person links theirs.

Everything goes through the live server over HTTP: the agent API with the agent's key, and
sign-up, email confirmation, log-in and the link page with a cookie-keeping browser client.
"""

from __future__ import annotations

import importlib
import re
from datetime import timedelta

import httpx2
import pytest
from django.apps import apps
from django.core import mail
from django.core.cache import cache
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.models import AuditEntry, User, UserLink
from memoryhub.services.agents import create_personal_key
from memoryhub.services.preferences import block_agent
from memoryhub.services.user_links import LINK_LIFETIME
from memoryhub.services.users import create_user
from tests import factories

from .conftest import Http

PASSWORD = "a long and unusual passphrase"
SECRET = "Works at Acme on the Zephyr project"
LINK = {"email": "dana@example.com"}


class Browser:
    """A person's browser: keeps cookies and sends Django's CSRF token with every form."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx2.Client(base_url=base_url, timeout=120, follow_redirects=False)

    def get(self, path: str) -> httpx2.Response:
        return self.http.get(path)

    def post(self, path: str, data: dict[str, str], *, csrf: bool = True) -> httpx2.Response:
        if csrf and "csrftoken" not in self.http.cookies:
            self.http.get("/accounts/login/")  # Any page with a form sets the CSRF cookie.
        token = {"csrfmiddlewaretoken": self.http.cookies["csrftoken"]} if csrf else {}
        return self.http.post(path, data={**data, **token})

    def sign_up(self, email: str) -> None:
        """Sign up, confirm the address from the emailed link, and log in, as a person does."""
        response = self.post(
            "/accounts/signup/", {"email": email, "password1": PASSWORD, "password2": PASSWORD}
        )
        assert response.status_code == 302, response.text
        message = next(m for m in reversed(sent_mail()) if email in m.to)
        confirm = re.search(r"https?://[^/\s]+(/accounts/confirm-email/\S+/)", message.body)
        assert self.post(confirm.group(1), {}).status_code == 302
        self.log_in(email)

    def log_in(self, email: str, password: str = PASSWORD) -> None:
        response = self.post("/accounts/login/", {"login": email, "password": password})
        assert response.status_code == 302 and response.headers["location"] == "/dashboard/"

    def close(self) -> None:
        self.http.close()


@pytest.fixture
def browsers(world, live_server, settings, mailoutbox):
    # As in production (DEBUG off): an address is the person's only once they confirm it.
    settings.ACCOUNT_EMAIL_VERIFICATION = "mandatory"
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    # allauth sends one confirmation per address per 3 minutes, counted in this process's cache.
    cache.clear()
    opened: list[Browser] = []

    def open_browser() -> Browser:
        opened.append(Browser(live_server.url))
        return opened[-1]

    yield open_browser
    for browser in opened:
        browser.close()


def sent_mail():
    # Read at the time of use: the list behind `mail.outbox` is replaced between tests.
    return mail.outbox


def _path(url: str) -> str:
    return re.sub(r"^https?://[^/]+", "", url)


def _agent_user_with_a_memory(world, external_id: str = "u-1") -> User:
    assert world.agent_http.post("/users", {"external_id": external_id}).status_code == 201
    memory = {"user": external_id, "kind": "fact", "content": SECRET}
    assert world.agent_http.post("/memories", memory).status_code == 201
    return User.objects.get(workspace=world.workspace, external_id=external_id)


def _link(world, external_id: str = "u-1", email: str = "dana@example.com") -> str:
    response = world.agent_http.post(f"/users/{external_id}/link", {"email": email})
    assert response.status_code == 201, response.text
    return _path(response.json()["url"])


# --- Agents set no login identity ----------------------------------------------------------


def test_post_users_answers_byte_for_byte_the_same_whether_an_email_exists_or_not(world):
    elsewhere = factories.make_user(
        workspace=factories.make_workspace(), email="carol@example.com", external_id="carol"
    )
    answers = {
        email: world.agent_http.post("/users", {"external_id": "newcomer", "email": email})
        for email in (
            "alice@example.com",  # A user of this workspace.
            elsewhere.email,  # A user of another workspace.
            "ALICE@example.com",
            "nobody-at-all@example.com",  # Nobody on the hub.
        )
    }
    bodies = {response.content for response in answers.values()}
    assert len(bodies) == 1
    response = next(iter(answers.values()))
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_input"
    assert "agents do not set a user's login" in response.json()["detail"]
    assert {r.headers["content-length"] for r in answers.values()} == {str(len(bodies.pop()))}
    assert not User.objects.filter(external_id="newcomer").exists()


def test_new_users_answer_alike_apart_from_their_ids_and_get_no_login(world):
    def answer(external_id):
        response = world.agent_http.post(
            "/users", {"external_id": external_id, "display_name": "Dana", "password": PASSWORD}
        )
        assert response.status_code == 201
        body = response.json()
        return body.pop("id"), body.pop("external_id"), body

    first_id, _, first = answer("alice@example.com")  # An existing email, as an external id.
    second_id, _, second = answer("someone-new")
    assert first == second
    assert (first["email"], first["has_login"]) == (None, False)
    for user in User.objects.filter(pk__in=[first_id, second_id]):
        # The extra "password" field was ignored: nobody can sign in as either user.
        assert user.email is None and not user.has_usable_password()


def test_signing_up_with_an_address_an_agent_tried_to_give_claims_nothing(world, browsers):
    agent_user = _agent_user_with_a_memory(world)
    refused = world.agent_http.post("/users", {"external_id": "u-1", "email": "dana@example.com"})
    assert refused.status_code == 422
    person = browsers()
    person.sign_up("dana@example.com")
    account = User.objects.get(email="dana@example.com")
    assert account.pk != agent_user.pk
    assert account.workspace.slug == "default"
    page = person.get("/dashboard/")
    assert page.status_code == 200 and SECRET not in page.text
    agent_user.refresh_from_db()
    assert agent_user.email is None and not agent_user.has_usable_password()
    assert world.agent_http.get("/users/u-1").json()["has_login"] is False


def test_an_address_an_agent_set_before_is_forgotten_so_a_reset_claims_nothing(world, browsers):
    # A row from before the rule: an agent gave its user a victim's address.
    trap = create_user(workspace=world.workspace, external_id="trap", email="erin@example.com")
    migration = importlib.import_module("memoryhub.migrations.0012_user_links")
    migration.forget_agent_set_emails(apps, None)
    trap.refresh_from_db()
    assert trap.email is None
    world.alice.refresh_from_db()
    assert world.alice.email == "alice@example.com"  # A real login keeps its address.
    person = browsers()
    person.post("/accounts/password/reset/", {"email": "erin@example.com"})
    assert not any("/accounts/password/reset/key/" in m.body for m in sent_mail())
    person.sign_up("erin@example.com")
    assert User.objects.get(email="erin@example.com").pk != trap.pk


# --- A person links their login through the agent's one-time link --------------------------


def test_a_person_links_their_login_and_then_signs_in_to_the_agents_user(world, browsers):
    agent_user = _agent_user_with_a_memory(world)
    link = _link(world)
    person = browsers()
    person.sign_up("dana@example.com")
    shell_id = User.objects.get(email="dana@example.com").pk
    page = person.get(link)
    assert page.status_code == 200
    assert "assistant" in page.text and world.workspace.name in page.text
    assert UserLink.objects.get().used_at is None  # Looking at the page changes nothing.
    confirmed = person.post(link, {})
    assert (confirmed.status_code, confirmed.headers["location"]) == (302, "/dashboard/")
    assert SECRET in person.get("/dashboard/").text
    # The login moved onto the agent's user; the empty account it came from is gone.
    agent_user.refresh_from_db()
    assert agent_user.email == "dana@example.com" and agent_user.check_password(PASSWORD)
    assert agent_user.workspace == world.workspace
    assert not User.objects.filter(pk=shell_id).exists()
    assert world.agent_http.get("/users/u-1").json()["has_login"] is True
    assert world.agent_http.get("/profile", user="u-1").json()["facts"][0]["content"] == SECRET
    assert AuditEntry.objects.filter(action="user.link").count() == 1
    notice = sent_mail()[-1]
    assert notice.to == ["dana@example.com"] and "assistant" in notice.body
    again = browsers()
    again.log_in("dana@example.com")
    assert SECRET in again.get("/dashboard/").text


def test_another_agent_of_the_workspace_gets_no_link(world):
    _agent_user_with_a_memory(world)
    refused = world.other_agent_http.post("/users/u-1/link", LINK)
    assert (refused.status_code, refused.json()["code"]) == (403, "not_user_creator")
    assert not UserLink.objects.exists()


def test_a_throwaway_account_cannot_use_a_link_for_the_persons_address(world, browsers):
    agent_user = _agent_user_with_a_memory(world)
    link = _link(world)
    mallory = browsers()
    mallory.sign_up("throwaway@example.com")  # Confirmed, but not the person's address.
    for response in (mallory.get(link), mallory.post(link, {})):
        assert response.status_code == 403
        assert "another email address" in response.text
        assert "dana@example.com" not in response.text
    assert SECRET not in mallory.get("/dashboard/").text
    agent_user.refresh_from_db()
    assert agent_user.email is None
    assert UserLink.objects.get().used_at is None
    person = browsers()  # The link still works for the person it was made for.
    person.sign_up("dana@example.com")
    assert person.post(link, {}).status_code == 302
    assert SECRET in person.get("/dashboard/").text


def test_a_used_link_works_for_nobody_else(world, browsers):
    agent_user = _agent_user_with_a_memory(world)
    link = _link(world)
    first = browsers()
    first.sign_up("dana@example.com")
    assert first.post(link, {}).status_code == 302
    second = browsers()
    second.sign_up("mallory@example.com")
    for response in (second.get(link), second.post(link, {})):
        assert response.status_code == 410
        assert "already used" in response.text
    assert first.post(link, {}).status_code == 410
    agent_user.refresh_from_db()
    assert agent_user.email == "dana@example.com"
    assert SECRET not in second.get("/dashboard/").text
    assert world.agent_http.post("/users/u-1/link", LINK).status_code == 409  # It has a login now.


def test_an_expired_link_links_nothing(world, browsers, time_machine):
    agent_user = _agent_user_with_a_memory(world)
    link = _link(world)
    person = browsers()
    person.sign_up("dana@example.com")
    time_machine.move_to(timezone.now() + LINK_LIFETIME + timedelta(seconds=1))
    for response in (person.get(link), person.post(link, {})):
        assert response.status_code == 410
        assert "expired" in response.text
    agent_user.refresh_from_db()
    assert agent_user.email is None


def test_a_link_is_for_the_agents_own_workspace_and_a_forged_one_opens_nothing(world, browsers):
    agent_user = _agent_user_with_a_memory(world)
    assert world.stranger_http.post("/users/u-1/link", LINK).status_code == 404
    # The stranger's own "u-1" is another user: its link reaches that user, never this one.
    assert world.stranger_http.post("/users", {"external_id": "u-1"}).status_code == 201
    strangers_link = _path(world.stranger_http.post("/users/u-1/link", LINK).json()["url"])
    real_link = _link(world)
    person = browsers()
    person.sign_up("dana@example.com")
    forged = real_link[:-6] + ("A" if real_link[-6] != "A" else "B") + real_link[-5:]
    for path in (forged, "/dashboard/link/not-a-token/"):
        assert person.get(path).status_code == 404
        assert person.post(path, {}).status_code == 404
    assert person.post(strangers_link, {}).status_code == 302
    agent_user.refresh_from_db()
    assert agent_user.email is None
    linked = User.objects.get(email="dana@example.com")
    assert linked.workspace != world.workspace and linked.external_id == "u-1"


def test_a_blocked_or_personal_key_gets_no_link(world):
    agent_user = _agent_user_with_a_memory(world)
    block_agent(user=agent_user, agent=world.agent, actor=Actor.for_user(agent_user.pk))
    blocked = world.agent_http.post("/users/u-1/link", LINK)
    assert (blocked.status_code, blocked.json()["code"]) == (403, "agent_blocked")
    assert world.alice_http.post("/users/alice/link", LINK).status_code == 403
    assert not UserLink.objects.exists()


def test_an_account_with_memory_of_its_own_is_never_given_up_for_a_link(
    world, browsers, live_server
):
    agent_user = _agent_user_with_a_memory(world)
    link = _link(world)
    person = browsers()
    person.sign_up("dana@example.com")
    account = User.objects.get(email="dana@example.com")
    # The person's own MCP client remembered something in their own account.
    own_key = Http(live_server.url, create_personal_key(user=account, name="laptop").raw_key)
    memory = {"user": str(account.pk), "kind": "fact", "content": "Lives in Lyon"}
    assert own_key.post("/memories", memory).status_code == 201
    for response in (person.get(link), person.post(link, {})):
        assert response.status_code == 409
        assert "already holds memory" in response.text
    assert own_key.get("/profile", user=str(account.pk)).json()["facts"][0]["content"] == (
        "Lives in Lyon"
    )
    agent_user.refresh_from_db()
    assert agent_user.email is None
    assert UserLink.objects.get().used_at is None


def test_linking_needs_a_signed_in_person_and_a_csrf_token(world, browsers):
    agent_user = _agent_user_with_a_memory(world)
    link = _link(world)
    visitor = browsers()
    response = visitor.get(link)
    assert response.status_code == 302
    assert response.headers["location"].startswith("/accounts/login/?next=/dashboard/link/")
    assert visitor.post(link, {}).status_code == 302
    visitor.sign_up("dana@example.com")
    assert visitor.post(link, {}, csrf=False).status_code == 403
    agent_user.refresh_from_db()
    assert agent_user.email is None
    assert visitor.post(link, {}).status_code == 302
