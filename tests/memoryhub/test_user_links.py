"""memoryhub/services/user_links.py: who may issue a link, who may use it, what it moves, undo."""

from __future__ import annotations

import importlib

import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.apps import apps
from django.contrib.auth.models import Group

from accounts.roles import REVIEWERS_GROUP
from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import (
    ConflictError,
    EmailMismatchError,
    EmailNotVerifiedError,
    GoneError,
    InvalidInputError,
    NotFoundError,
    NotUserCreatorError,
)
from memoryhub.models import ActorType, ApiKey, AuditEntry, Channel, Memory, User, UserLink
from memoryhub.services.agents import create_personal_key
from memoryhub.services.user_links import (
    issue_user_link,
    link_user,
    preview_user_link,
    undo_user_link,
)
from memoryhub.services.users import create_user
from tests import factories

EMAIL = "dana@example.com"


@pytest.fixture
def agent(workspace):
    return factories.make_agent(workspace, "assistant")[0]


@pytest.fixture
def agent_user(workspace, agent):
    return create_user(
        workspace=workspace, external_id="u-1", display_name="Dana", created_by_agent=agent
    )


@pytest.fixture
def token(agent_user, agent):
    return issue_user_link(user=agent_user, agent=agent, email=EMAIL, actor=Actor.system()).token


def _account(email: str = EMAIL, *, verified: bool = True) -> User:
    """A person's fresh account, as sign-up leaves it: a login and empty default modes."""
    account = factories.make_user(workspace=factories.make_workspace("default"), email=email)
    EmailAddress.objects.create(user=account, email=email, verified=verified, primary=True)
    return account


@pytest.fixture
def account():
    return _account()


@pytest.fixture
def admin(workspace):
    staff = factories.make_user(workspace=workspace, email="root@example.com")
    User.objects.filter(pk=staff.pk).update(is_staff=True)
    staff.refresh_from_db()
    return staff


def _link_and_undo(token, account, admin):
    link_user(token=token, account=account)
    link = UserLink.objects.get()
    return undo_user_link(link_id=link.pk, admin=admin, actor=Actor.system("admin"))


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


def test_linking_emails_the_person_once_it_is_committed(
    agent_user, token, account, mailoutbox, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        link_user(token=token, account=account)
    [notice] = mailoutbox
    assert notice.to == [EMAIL]
    assert '"assistant"' in notice.body and "undo" in notice.body
    entry = AuditEntry.objects.get(action="user.link")
    assert entry.object_ids == [str(UserLink.objects.get().pk)]


def test_only_the_agent_that_created_the_user_may_issue_its_link(workspace, agent, agent_user):
    other_agent = factories.make_agent(workspace, "scheduler")[0]
    with pytest.raises(NotUserCreatorError):
        issue_user_link(user=agent_user, agent=other_agent, email=EMAIL, actor=Actor.system())
    nobodys = create_user(workspace=workspace, external_id="u-2")  # No creator recorded.
    with pytest.raises(NotUserCreatorError):
        issue_user_link(user=nobodys, agent=agent, email=EMAIL, actor=Actor.system())
    assert not UserLink.objects.exists()


@pytest.mark.parametrize("email", ["", "not-an-email", "dana@", "a b@example.com"])
def test_a_link_needs_a_well_formed_email(agent, agent_user, email):
    with pytest.raises(InvalidInputError):
        issue_user_link(user=agent_user, agent=agent, email=email, actor=Actor.system())
    assert not UserLink.objects.exists()


def test_an_account_without_the_links_address_cannot_use_it(agent_user, token):
    throwaway = _account("throwaway@example.com")
    for attempt in (preview_user_link, link_user):
        with pytest.raises(EmailMismatchError) as refused:
            attempt(token=token, account=throwaway)
        assert EMAIL not in str(refused.value)  # The link's address is never shown.
    assert User.objects.filter(pk=throwaway.pk).exists()
    agent_user.refresh_from_db()
    assert agent_user.email is None
    assert UserLink.objects.get().used_at is None


def test_an_account_must_have_confirmed_the_links_address(agent_user, token):
    unconfirmed = _account(verified=False)
    for attempt in (preview_user_link, link_user):
        with pytest.raises(EmailNotVerifiedError):
            attempt(token=token, account=unconfirmed)
    agent_user.refresh_from_db()
    assert agent_user.email is None
    EmailAddress.objects.filter(user=unconfirmed).update(verified=True)
    assert link_user(token=token, account=unconfirmed).pk == agent_user.pk


def test_the_links_address_matches_whatever_its_case(agent, agent_user):
    token = issue_user_link(
        user=agent_user, agent=agent, email="  Dana@Example.COM ", actor=Actor.system()
    ).token
    assert link_user(token=token, account=_account()).pk == agent_user.pk


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


# --- An admin undoes a wrong link ----------------------------------------------------------


def test_undoing_a_link_gives_the_login_an_empty_account_and_the_user_keeps_its_memory(
    agent, agent_user, token, account, admin, embedder
):
    memory = factories.make_memory(agent_user, factories.mode_of(agent_user), "Likes tea")
    Authenticator.objects.create(user=account, type=Authenticator.Type.TOTP, data={"secret": "x"})
    password = account.password
    link = _link_and_undo(token, account, admin)
    assert link.undone_at is not None
    agent_user.refresh_from_db()
    assert agent_user.email is None and not agent_user.has_usable_password()
    assert factories.mode_of(agent_user).pk == memory.mode_id  # The memory stays.
    login = User.objects.get(email=EMAIL)
    assert login.pk != agent_user.pk and login.password == password
    assert login.workspace.slug == "default" and login.external_id is None
    assert EmailAddress.objects.get(email=EMAIL).user_id == login.pk
    assert Authenticator.objects.get().user_id == login.pk
    assert not Memory.all_owners.filter(user=login).exists()
    # The agent may hand the right person a new link.
    issue_user_link(user=agent_user, agent=agent, email="real@example.com", actor=Actor.system())


def test_undoing_revokes_the_personal_keys_made_meanwhile_and_is_audited_and_emailed(
    agent_user, token, account, admin, mailoutbox, django_capture_on_commit_callbacks
):
    link_user(token=token, account=account)
    create_personal_key(user=agent_user, name="laptop")
    link = UserLink.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        undo_user_link(link_id=link.pk, admin=admin, actor=Actor.system("admin"))
    assert not ApiKey.objects.filter(user=agent_user, revoked_at__isnull=True).exists()
    entry = AuditEntry.objects.get(action="user.link_undo")
    assert entry.object_ids == [str(link.pk)] and entry.actor_label == "admin"
    assert [m.to for m in mailoutbox] == [[EMAIL]]
    assert "undid the link" in mailoutbox[0].body


def test_a_link_is_undone_once_and_an_unused_one_not_at_all(agent_user, token, account, admin):
    unused = UserLink.objects.get()
    with pytest.raises(NotFoundError):
        undo_user_link(link_id=unused.pk, admin=admin, actor=Actor.system("admin"))
    link = _link_and_undo(token, account, admin)
    with pytest.raises(GoneError):
        undo_user_link(link_id=link.pk, admin=admin, actor=Actor.system("admin"))


def test_another_workspaces_admin_cannot_undo_a_link_but_a_superuser_can(
    agent_user, token, account
):
    link_user(token=token, account=account)
    link = UserLink.objects.get()
    elsewhere = factories.make_user(workspace=factories.make_workspace())
    User.objects.filter(pk=elsewhere.pk).update(is_staff=True)
    elsewhere.refresh_from_db()
    with pytest.raises(NotFoundError):
        undo_user_link(link_id=link.pk, admin=elsewhere, actor=Actor.system("admin"))
    agent_user.refresh_from_db()
    assert agent_user.email == EMAIL
    User.objects.filter(pk=elsewhere.pk).update(is_superuser=True)
    elsewhere.refresh_from_db()
    assert undo_user_link(link_id=link.pk, admin=elsewhere, actor=Actor.system("admin")).undone_at


def test_the_migration_names_each_users_creator_from_its_audit_row(workspace, agent):
    created = create_user(workspace=workspace, external_id="u-9")
    record_access(
        actor=Actor(ActorType.AGENT, str(agent.pk), Channel.API, label=agent.name),
        subject_user_id=created.pk,
        action=AuditAction.USER_CREATE,
    )
    create_user(workspace=workspace, external_id="u-10")  # No audit row names its creator.
    by_key = create_user(workspace=workspace, external_id="u-11")
    record_access(
        actor=Actor(ActorType.AGENT, "personal-key:7", Channel.API),
        subject_user_id=by_key.pk,
        action=AuditAction.USER_CREATE,
    )
    foreign = create_user(workspace=factories.make_workspace(), external_id="u-12")
    record_access(  # A row naming an agent of another workspace: never believed.
        actor=Actor(ActorType.AGENT, str(agent.pk), Channel.API),
        subject_user_id=foreign.pk,
        action=AuditAction.USER_CREATE,
    )
    migration = importlib.import_module("memoryhub.migrations.0023_user_link_proof")
    migration.record_creating_agents(apps, None)
    creators = dict(User.objects.values_list("external_id", "created_by_agent"))
    assert [creators[f"u-{n}"] for n in (9, 10, 11, 12)] == [agent.pk, None, None, None]
