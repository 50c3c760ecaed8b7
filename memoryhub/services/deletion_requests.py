"""Data-deletion requests (compliance): specific facts, a period or a topic, carried out by forget."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from django.db.models import Q
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.embeddings import Embedder
from memoryhub.errors import InvalidInputError, NotFoundError
from memoryhub.models import User
from memoryhub.services.forget import DeletionReceipt, ForgetSelector, forget
from memoryhub.services.users import ensure_mode


def find_user(user_ref: str) -> User:
    """The user named by id or email; raise NotFoundError when there is none."""
    try:
        lookup = Q(pk=UUID(user_ref))
    except ValueError:
        lookup = Q(email__iexact=user_ref.strip())
    user = User.objects.filter(lookup).first()
    if user is None:
        raise NotFoundError(gettext_noop("no such user"))
    return user


def _moment(value: str | None, name: str) -> datetime | None:
    if value is None or not value.strip():
        return None
    try:
        moment = parse_datetime(value.strip())
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise InvalidInputError(
            gettext_noop("{name} must be an ISO 8601 date-time with a time zone"), name=name
        )
    return moment


def carry_out_deletion_request(
    *,
    user_ref: str,
    mode_slug: str,
    embedder: Embedder | None = None,
    memory_ids: Sequence[str] = (),
    since: str | None = None,
    until: str | None = None,
    topic: str | None = None,
    actor: Actor | None = None,
) -> DeletionReceipt:
    """Forget what the request names in one mode of one user, with everything derived from it.

    Raises NotFoundError (user or mode) and InvalidInputError (malformed or empty request).
    """
    user = find_user(user_ref)
    mode = ensure_mode(user=user, slug=mode_slug)
    selector = ForgetSelector(
        memory_ids=tuple(memory_ids),
        since=_moment(since, "since"),
        until=_moment(until, "until"),
        topic=topic or None,
    )
    return forget(
        user=user,
        mode=mode,
        selector=selector,
        actor=actor or Actor.system("deletion-request"),
        embedder=embedder,
    )
