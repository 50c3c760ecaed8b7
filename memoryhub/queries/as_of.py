"""Memories as they were at a moment (`as_of`): rows that existed then, with their text then.

What as-of can and cannot reconstruct is in docs/history.md. In short: a memory's text,
payload, kind, confidence and status come back as they were, from the versions kept when they
changed; forgotten and deleted memories never come back (forgetting is not history).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from uuid import UUID

from django.db import DEFAULT_DB_ALIAS
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.errors import InvalidAsOfError
from memoryhub.keyring import UserCipher
from memoryhub.memory_rows import MemoryItem, open_version_content, open_version_payload
from memoryhub.models import Confidence, MemoryQuerySet, MemoryStatus, MemoryVersion


def check_as_of(as_of: datetime | None) -> datetime | None:
    """Return a usable `as_of`; raise InvalidAsOfError for a naive or future moment."""
    if as_of is None:
        return None
    if as_of.tzinfo is None:
        raise InvalidAsOfError(
            gettext_noop("as_of must carry a time zone (e.g. 2026-05-01T12:00:00Z)")
        )
    if as_of > timezone.now():
        raise InvalidAsOfError(gettext_noop("as_of is in the future: nothing is known of it yet"))
    return as_of


def known_at(queryset: MemoryQuerySet, as_of: datetime) -> MemoryQuerySet:
    """The rows that existed at `as_of` and had not been replaced by then.

    Their stored status is today's: whether each was a candidate then is read from its versions
    (`items_as_of`). Forgetting is not history: forgotten rows never come back, and deleted or
    crypto-shredded ones are gone. A memory folded into a theme or merged into a duplicate has
    no end date, so it is left out (docs/history.md).
    """
    return queryset.filter(created_at__lte=as_of).filter(
        Q(status__in=[MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE])
        & (Q(valid_to__isnull=True) | Q(valid_to__gt=as_of))
        | Q(status=MemoryStatus.SUPERSEDED, valid_to__gt=as_of)
    )


def _versions_after(
    memory_ids: Iterable[UUID], as_of: datetime, using: str
) -> dict[UUID, MemoryVersion]:
    """For each memory, the first version kept after `as_of`: the row as it was at `as_of`."""
    versions = (
        MemoryVersion.objects.using(using)
        .filter(memory_id__in=list(memory_ids), created_at__gt=as_of)
        .order_by("memory_id", "created_at", "id")
        .distinct("memory_id")
    )
    return {version.memory_id: version for version in versions}


def _as_it_was(
    item: MemoryItem, version: MemoryVersion | None, cipher: UserCipher, as_of: datetime
) -> MemoryItem:
    if version is not None:
        item = replace(
            item,
            content=open_version_content(version, cipher),
            payload=open_version_payload(version, cipher),
            # Blank on versions kept before these were recorded: today's value stands in.
            kind=version.kind or item.kind,
            confidence=version.confidence or item.confidence,
            status=version.status or item.status,
            source=version.source or item.source,
        )
    if item.status == MemoryStatus.SUPERSEDED:
        # `known_at` keeps only rows replaced after `as_of`: at `as_of` they were current.
        item = replace(item, status=MemoryStatus.ACTIVE)
    if item.confidence == Confidence.CANDIDATE:
        item = replace(item, status=MemoryStatus.CANDIDATE)
    is_ended = item.valid_to is not None and item.valid_to <= as_of
    return replace(
        item,
        valid_to=item.valid_to if is_ended else None,
        updated_at=min(item.updated_at, as_of),
    )


def items_as_of(
    items: Sequence[MemoryItem],
    *,
    cipher: UserCipher,
    as_of: datetime,
    includes_candidates: bool = False,
    using: str = DEFAULT_DB_ALIAS,
) -> list[MemoryItem]:
    """The items as they were at `as_of`, in the same order; those then candidates dropped.

    The items come from rows `known_at(as_of)`. `includes_candidates` keeps what waited for
    the user's answer then (the owner's own view; agents never get candidates).
    """
    versions = _versions_after((item.id for item in items), as_of, using)
    then = [_as_it_was(item, versions.get(item.id), cipher, as_of) for item in items]
    if includes_candidates:
        return then
    return [item for item in then if item.status == MemoryStatus.ACTIVE]
