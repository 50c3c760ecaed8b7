"""The one hook through which the domain announces a change, once its transaction commits.

`record_access` announces every audited action that changes something (its catalogue entry
says so), so a change is announced exactly where it is audited, and only there. Whoever needs
to hear of changes (webhooks, telemetry) subscribes once, at start-up (an AppConfig's ready):
a subscriber is called after the commit, never for a change rolled back, once per change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from django.db import transaction

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Change:
    """One audited change: what, by whom, to whose data (ids only, never text)."""

    action: AuditAction
    actor: Actor
    user_id: str | None
    mode: str
    object_ids: tuple[str, ...]
    # The workspace, when the caller knows it and the user may be gone (an account deleted).
    workspace_id: int | None = None


Subscriber = Callable[[Change], None]

# The subscribers, in the order they subscribed. Filled at start-up, read on every change.
_subscribers: list[Subscriber] = []


def subscribe(subscriber: Subscriber) -> None:
    """Call `subscriber` with every change committed from now on (subscribing twice is once)."""
    if subscriber not in _subscribers:
        _subscribers.append(subscriber)


def unsubscribe(subscriber: Subscriber) -> None:
    if subscriber in _subscribers:
        _subscribers.remove(subscriber)


def announce(
    *,
    action: AuditAction,
    actor: Actor,
    user_id: UUID | str | None,
    mode: str = "",
    object_ids: tuple[str, ...] = (),
    workspace_id: int | None = None,
) -> None:
    """Tell every subscriber of this change once the outermost transaction commits.

    A subscriber that fails is logged and skipped (robust on_commit): the change is already
    committed, and the other subscribers must still hear of it.
    """
    change = Change(
        action=action,
        actor=actor,
        user_id=str(user_id) if user_id else None,
        mode=mode,
        object_ids=object_ids,
        workspace_id=workspace_id,
    )
    for subscriber in _subscribers:
        transaction.on_commit(_delivery(subscriber, change), robust=True)


def _delivery(subscriber: Subscriber, change: Change) -> Callable[[], None]:
    # A named function, not a partial: Django logs a failing robust hook by its __qualname__.
    def deliver_change() -> None:
        subscriber(change)

    return deliver_change
