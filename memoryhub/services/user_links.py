"""Link an agent-created user to a person's login, through a one-time link the agent hands over.

Agents never set a login identity: an agent-created user has no email and no password. To
reach that user's memory from the dashboard, a person opens the agent's link while signed in
and confirms. Only the agent that created the user may issue the link, and it binds the link
to the person's email address: only an account that confirmed that address (allauth's
verified `EmailAddress`, proven by a mail the agent never sees) may use it. So another agent
of the workspace, or the agent with a throwaway account, cannot take the user over.

Then the login moves, not the memory: the person's email addresses, password
and authenticators go to the agent-created user, whose memories, modes, sessions and settings
stay as they are, in the agent's workspace. The account the person signed in with is erased,
and it may hold nothing that would be lost with it (see `holds_something`): no memory, no
conversation, no key, no role. So nothing moves across workspaces, and nothing is merged. The
person is told by email, and an admin of the workspace can undo a wrong link
(`undo_user_link`): the login leaves again for an empty account of its own.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import router, transaction
from django.db.models.deletion import Collector, ProtectedError, RestrictedError
from django.utils import timezone
from django.utils.translation import gettext_lazy, gettext_noop

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
from memoryhub.models import (
    DEFAULT_WORKSPACE_NAME,
    DEFAULT_WORKSPACE_SLUG,
    Agent,
    ApiKey,
    User,
    UserLink,
)
from memoryhub.notices import send_notice_on_commit
from memoryhub.services.agents import get_or_create_workspace
from memoryhub.services.forget import delete_account
from memoryhub.services.users import create_user

LINK_LIFETIME = timedelta(hours=24)
# What an account may hold and still be given up for a link: its login (moved to the linked
# user first), its modes (whose memories would show up as rows of their own), its data key and
# its write mark. Any other row tied to it, of any model, present or future, means something
# would be lost: such an account cannot be given up.
DISPOSABLE_ROWS = frozenset(
    {
        "memoryhub.User",
        "memoryhub.Mode",
        "memoryhub.UserKey",
        "memoryhub.UserWriteMark",
        "account.EmailAddress",
        "account.EmailConfirmation",
        "mfa.Authenticator",
    }
)


@dataclass(frozen=True)
class IssuedLink:
    """A fresh link: `token` goes into the URL shown once to the agent, and is never stored."""

    token: str
    expires_at: datetime


@dataclass(frozen=True)
class LinkPreview:
    """What following a link does: whose user it is, and until when it works."""

    user: User
    agent_name: str
    workspace_name: str
    expires_at: datetime


def _digest(token: str) -> str:
    # Tokens are long random strings: a plain hash is enough (as for bearer keys).
    return hashlib.sha256(token.encode()).hexdigest()


def has_login(user: User) -> bool:
    """Whether someone can sign in as the user (an email to sign in with, or a password)."""
    return bool(user.email) or user.has_usable_password()


def _normalized_email(email: str) -> str:
    email = email.strip()
    try:
        validate_email(email)
    except ValidationError:
        raise InvalidInputError(gettext_noop("email must be the person's email address")) from None
    return email


def issue_user_link(*, user: User, agent: Agent, email: str, actor: Actor) -> IssuedLink:
    """Issue a one-time link for an agent-created user, usable only by an account that
    confirmed `email`; an unused earlier link stops working.

    Raises NotFoundError for a user of another workspace, ConflictError if the user already
    has a login (a person manages that user from the dashboard already), NotUserCreatorError
    if another agent created the user, InvalidInputError for a malformed email.
    """
    # Security invariant: an agent links users of its own workspace only.
    if user.workspace_id != agent.workspace_id:
        raise NotFoundError(gettext_noop("user not found"))
    if has_login(user):
        raise ConflictError(
            gettext_noop("this user already has a login: a person signs in as them already")
        )
    # Security invariant: only the agent that created the user hands out its link; other
    # agents of the workspace talk to the user, and must not be able to take it over.
    if user.created_by_agent_id != agent.pk:
        raise NotUserCreatorError(
            gettext_noop("only the agent that created this user may issue its link")
        )
    # Never looked up: the answer is the same whether anyone on the hub uses the address.
    email = _normalized_email(email)
    token = secrets.token_urlsafe(32)
    now = timezone.now()
    with transaction.atomic():
        # One live link per user: only the latest one handed over works.
        UserLink.objects.filter(user=user, used_at__isnull=True).delete()
        link = UserLink.objects.create(
            user=user,
            agent=agent,
            token_digest=_digest(token),
            email=email,
            created_at=now,
            expires_at=now + LINK_LIFETIME,
        )
        record_access(actor=actor, subject_user_id=user.pk, action=AuditAction.USER_LINK_ISSUE)
    return IssuedLink(token=token, expires_at=link.expires_at)


def holds_something(account: User) -> bool:
    """Whether erasing or moving the account would take something with it beyond its login."""
    # Ask Django what erasing the account would delete with it, rather than list tables here:
    # a table added later is then counted too, never erased unnoticed.
    collector = Collector(using=router.db_for_write(User))
    try:
        collector.collect([account])
    except (ProtectedError, RestrictedError):
        return True
    if any(
        rows and model._meta.label not in DISPOSABLE_ROWS for model, rows in collector.data.items()
    ):
        return True
    return any(
        rows.model._meta.label not in DISPOSABLE_ROWS and rows.exists()
        for rows in collector.fast_deletes
    )


def _check(link: UserLink, user: User, account: User) -> None:
    if link.used_at is not None:
        raise GoneError(gettext_noop("this link was already used: ask the agent for a new one"))
    if link.expires_at <= timezone.now():
        raise GoneError(gettext_noop("this link has expired: ask the agent for a new one"))
    if not link.agent.is_active:
        raise GoneError(gettext_noop("the agent that made this link was disabled"))
    if has_login(user):
        raise ConflictError(
            gettext_noop("this user already has a login: ask the agent for a new link")
        )
    _check_email(link, account)
    if account.is_staff or account.is_superuser or holds_something(account):
        # The account would be erased: refuse rather than lose its memory, keys or roles.
        raise ConflictError(
            gettext_noop(
                "your account already holds memory, keys or a role of its own, and one login "
                "holds one user's memory: sign up with another address of yours, and ask the "
                "agent for a link for that address"
            )
        )


def _check_email(link: UserLink, account: User) -> None:
    # Security invariant: the person proves the link is theirs with an address they confirmed
    # (a mail the agent never sees). The link's address is never shown to whoever opens it.
    addresses = EmailAddress.objects.filter(user=account, email__iexact=link.email)
    if not link.email or not addresses.exists():
        raise EmailMismatchError(
            gettext_noop(
                "this link is for another email address: sign in with the address you gave the "
                "agent (sign up with it if you have no account yet), then open the link again"
            )
        )
    if not addresses.filter(verified=True).exists():
        raise EmailNotVerifiedError(
            gettext_noop(
                "confirm your email address first (follow the link in the mail we sent you, or "
                "send it again from your email settings), then open this link again"
            )
        )


def _find(token: str, *, for_update: bool = False) -> UserLink:
    links = UserLink.objects.select_related("agent", "user__workspace")
    if for_update:
        links = links.select_for_update(of=("self",))
    link = links.filter(token_digest=_digest(token)).first()
    if link is None:
        raise NotFoundError(gettext_noop("this link is not valid: check that it was copied whole"))
    return link


def preview_user_link(*, token: str, account: User) -> LinkPreview:
    """What following the link would do for the signed-in account; raises as `link_user` would."""
    link = _find(token)
    _check(link, link.user, account)
    return LinkPreview(
        user=link.user,
        agent_name=link.agent.name,
        workspace_name=link.user.workspace.display_name,
        expires_at=link.expires_at,
    )


def link_user(*, token: str, account: User, client_ip: str | None = None) -> User:
    """Give the link's user the signed-in account's login, and erase that (empty) account.

    Returns the linked user: the person signs in as them from now on. Raises NotFoundError
    (unknown link), GoneError (used, expired, or its agent disabled) and ConflictError (the
    user has a login already, or the account holds something that erasing it would lose).
    """
    with transaction.atomic():
        link = _find(token, for_update=True)
        # Lock both users: two tabs confirming at once, or a write for either, wait here.
        user = User.objects.select_for_update().get(pk=link.user_id)
        account = User.objects.select_for_update().get(pk=account.pk)
        _check(link, user, account)
        email, password, language = account.email, account.password, account.language
        EmailAddress.objects.filter(user=account).update(user=user)
        Authenticator.objects.filter(user=account).update(user=user)
        # Audits AuditAction.ACCOUNT_DELETE on the account's chain, AuditAction.USER_LINK below goes on the user's:
        # two chains in one transaction, taken in this order only (see record_access).
        delete_account(user=account, actor=Actor.for_user(account.pk, client_ip=client_ip))
        user.email = email
        user.password = password
        user.language = language  # The person's: it goes with their login.
        user.save(update_fields=["email", "password", "language"])
        link.used_at = timezone.now()
        link.save(update_fields=["used_at"])
        record_access(
            actor=Actor.for_user(user.pk, client_ip=client_ip),
            subject_user_id=user.pk,
            action=AuditAction.USER_LINK,
            object_ids=[link.pk],
        )
        send_notice_on_commit(
            to=link.email,
            subject=gettext_lazy("Your login now reaches an agent's memory of you"),
            template="email/user_linked.txt",
            context={
                "agent_name": link.agent.name,
                "workspace": user.workspace,
                "used_at": link.used_at,
            },
            language=user.language,
        )
    return user


def undo_user_link(*, link_id: int, admin: User, actor: Actor) -> UserLink:
    """Undo a used link: its login leaves the user for a new, empty account of its own.

    The user keeps its memories, modes and sessions, and has no login again (its agent may
    issue a new link); the person's personal keys made meanwhile are revoked, and every
    session signed in as the user ends. Raises NotFoundError (no used link by that id in the
    admin's workspace), GoneError (undone already) and ConflictError (the user has no login).
    """
    with transaction.atomic():
        links = UserLink.objects.used().visible_to_admin(admin).select_related("agent")
        link = links.select_for_update(of=("self",)).filter(pk=link_id).first()
        if link is None:
            raise NotFoundError(gettext_noop("link not found"))
        if link.undone_at is not None:
            raise GoneError(gettext_noop("this link was undone already"))
        user = User.objects.select_for_update().select_related("workspace").get(pk=link.user_id)
        if not user.email:
            raise ConflictError(
                gettext_noop("this user has no login any more: there is nothing to undo")
            )
        email, password = user.email, user.password
        # The address is unique: the user lets go of it before the new account takes it. A
        # new password hash also ends every session signed in as the user (Django checks it).
        user.email = None
        user.set_unusable_password()
        user.save(update_fields=["email", "password"])
        # Where a sign-up lands (accounts/adapter.py): the login becomes an account like new.
        account = create_user(
            workspace=get_or_create_workspace(
                slug=DEFAULT_WORKSPACE_SLUG, name=DEFAULT_WORKSPACE_NAME
            ),
            email=email,
        )
        account.password = password
        account.language = user.language  # The person's: it goes with their login.
        account.save(update_fields=["password", "language"])
        EmailAddress.objects.filter(user=user).update(user=account)
        Authenticator.objects.filter(user=user).update(user=account)
        ApiKey.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
        link.undone_at = timezone.now()
        link.save(update_fields=["undone_at"])
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.USER_LINK_UNDO,
            object_ids=[link.pk],
        )
        send_notice_on_commit(
            to=email,
            subject=gettext_lazy("An admin undid the link of your login to an agent's memory"),
            template="email/user_link_undone.txt",
            context={"agent_name": link.agent.name, "workspace": user.workspace},
            language=account.language,
        )
    return link
