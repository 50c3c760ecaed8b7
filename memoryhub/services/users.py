"""Create users and their modes."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils.text import slugify
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import ConflictError, InvalidInputError, NotFoundError
from memoryhub.keyring import cipher_for
from memoryhub.models import DEFAULT_MODE_NAMES, DEFAULT_MODES, Agent, Mode, User, Workspace


def create_user(
    *,
    workspace: Workspace,
    email: str | None = None,
    password: str | None = None,
    external_id: str | None = None,
    display_name: str = "",
    created_by_agent: Agent | None = None,
    actor: Actor | None = None,
) -> User:
    """Create a user with a data key and the default modes; raise ConflictError if taken.

    `created_by_agent` is the agent creating the user through the API: the one that may later
    hand the person a link to it (services/user_links.py). With an `actor`, the creation is
    audited in the user's log (an agent's; sign-ups and tests create users unaudited).
    """
    email = email.strip().lower() if email else None
    if not email and not external_id:
        raise InvalidInputError(gettext_noop("a user needs an email or an external id"))
    try:
        with transaction.atomic():
            user = User.objects.create_user(
                email=email,
                password=password,
                workspace=workspace,
                external_id=external_id or None,
                display_name=display_name,
                created_by_agent=created_by_agent,
            )
            if password is None:
                user.set_unusable_password()
                user.save(update_fields=["password"])
            for slug in DEFAULT_MODES:
                Mode.objects.create(user=user, slug=slug, name=DEFAULT_MODE_NAMES[slug])
            cipher_for(user)
            if actor is not None:
                record_access(actor=actor, subject_user_id=user.pk, action=AuditAction.USER_CREATE)
    except IntegrityError:
        raise ConflictError(
            gettext_noop("a user with this email or external id already exists")
        ) from None
    return user


def create_mode(*, user: User, name: str) -> Mode:
    """Add a custom mode; its slug is derived from the name."""
    slug = slugify(name)[:64]
    if not slug:
        raise InvalidInputError(gettext_noop("a mode needs a name with letters or digits"))
    mode, _ = Mode.objects.get_or_create(
        user=user, slug=slug, defaults={"name": name.strip()[:100]}
    )
    return mode


def ensure_mode(*, user: User, slug: str, create: bool = False) -> Mode:
    """Return the user's mode; default modes (and any mode, with `create`) are made on demand."""
    mode = Mode.objects.filter(user=user, slug=slug).first()
    if mode is not None:
        return mode
    if slug in DEFAULT_MODES or create:
        return create_mode(user=user, name=slug)
    raise NotFoundError(gettext_noop("mode {slug!r} does not exist for this user"), slug=slug)
