"""memoryhub/services/user_links.py: what a link moves, and which accounts it never gives up."""

from __future__ import annotations

import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.contrib.auth.models import Group

from accounts.roles import REVIEWERS_GROUP
from memoryhub.actors import Actor
from memoryhub.errors import ConflictError
from memoryhub.models import AuditEntry, User
from memoryhub.services.agents import create_personal_key
from memoryhub.services.user_links import issue_user_link, link_user, preview_user_link
from memoryhub.services.users import create_user
from tests import factories


@pytest.fixture
def agent(workspace):
    return factories.make_agent(workspace, "assistant")[0]


@pytest.fixture
def agent_user(workspace):
    return create_user(workspace=workspace, external_id="u-1", display_name="Dana")


@pytest.fixture
def token(agent_user, agent):
    return issue_user_link(user=agent_user, agent=agent, actor=Actor.system()).token


@pytest.fixture
def account():
    """A person's fresh account, as sign-up leaves it: a login and empty default modes."""
    account = factories.make_user(workspace=factories.make_workspace("default"))
    EmailAddress.objects.create(user=account, email=account.email, verified=True, primary=True)
    return account


def test_linking_moves_the_login_with_its_addresses_and_authenticators(
    agent_user, token, account, embedder
):
    memory = factories.make_memory(agent_user, factories.mode_of(agent_user), "Likes tea")
    Authenticator.objects.create(user=account, type=Authenticator.Type.TOTP, data={"secret": "x"})
    email, password = account.email, account.password
    linked = link_user(token=token, account=account)
    assert linked.pk == agent_user.pk
    linked.refresh_from_db()
    assert (linked.email, linked.password) == (email, password)
    assert linked.external_id == "u-1" and linked.display_name == "Dana"
    assert EmailAddress.objects.get(email=email).user_id == linked.pk
    assert Authenticator.objects.get().user_id == linked.pk
    assert not User.objects.filter(pk=account.pk).exists()
    assert factories.mode_of(linked).pk == memory.mode_id
    assert set(AuditEntry.objects.values_list("action", flat=True)) >= {
        "user.link",
        "account.delete",
    }


@pytest.mark.parametrize(
    "give",
    [
        pytest.param(lambda a: factories.make_memory(a, factories.mode_of(a), "x"), id="memory"),
        pytest.param(lambda a: create_personal_key(user=a, name="cli"), id="personal key"),
        pytest.param(
            lambda a: a.groups.add(Group.objects.get_or_create(name=REVIEWERS_GROUP)[0]),
            id="reviewer",
        ),
        pytest.param(lambda a: User.objects.filter(pk=a.pk).update(is_staff=True), id="staff"),
    ],
)
def test_an_account_holding_anything_is_never_given_up(agent_user, token, account, give, embedder):
    give(account)
    account.refresh_from_db()
    with pytest.raises(ConflictError):
        preview_user_link(token=token, account=account)
    with pytest.raises(ConflictError):
        link_user(token=token, account=account)
    assert User.objects.filter(pk=account.pk).exists()
    agent_user.refresh_from_db()
    assert agent_user.email is None


def test_a_user_that_got_a_login_meanwhile_is_not_linked_again(agent_user, token, account):
    User.objects.filter(pk=agent_user.pk).update(email="someone@example.com")
    with pytest.raises(ConflictError):
        link_user(token=token, account=account)
    assert User.objects.filter(pk=account.pk).exists()
