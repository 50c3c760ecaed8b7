"""What recall may return: the scoped candidates, narrowed by kind, period, topic or id."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db.models import Q
from django.utils.translation import gettext_noop

from memoryhub.errors import InvalidInputError
from memoryhub.keyring import UserCipher, tokenize
from memoryhub.memory_rows import memories_of
from memoryhub.models import Confidence, MemoryKind, MemoryQuerySet, MemoryStatus, Mode, User
from memoryhub.queries.as_of import known_at


@dataclass(frozen=True)
class RecallFilter:
    """Optional narrowing of the candidates (all criteria combine with AND)."""

    kinds: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    # A memory is about a topic when it holds every word of it; several topics combine with OR.
    topics: tuple[str, ...] = ()
    exclude_ids: tuple[UUID, ...] = ()
    # The owner searching their own dashboard also finds what waits for their answer
    # ("not sure yet"). Never set for an agent: candidates are never recalled.
    includes_candidates: bool = False
    # What was known then (as_of.py): rows that existed and were current at that moment.
    as_of: datetime | None = None


# No narrowing: every recallable memory of the user's mode is a candidate.
NO_FILTER = RecallFilter()


def check_filter(recall_filter: RecallFilter) -> None:
    """Raise InvalidInputError on an unknown kind, a naive or inverted period, or a blank topic."""
    unknown = set(recall_filter.kinds) - set(MemoryKind.values)
    if unknown:
        raise InvalidInputError(
            gettext_noop("kinds must be among: {kinds}"), kinds=", ".join(MemoryKind.values)
        )
    for name in ("since", "until"):
        moment = getattr(recall_filter, name)
        if moment is not None and moment.tzinfo is None:
            raise InvalidInputError(
                gettext_noop("{name} must be a timezone-aware datetime"), name=name
            )
    if recall_filter.since and recall_filter.until and recall_filter.since >= recall_filter.until:
        raise InvalidInputError(gettext_noop("since must be before until"))
    if any(not tokenize(topic) for topic in recall_filter.topics):
        raise InvalidInputError(gettext_noop("each topic needs at least one word"))


def candidates(
    *, user: User, mode: Mode, cipher: UserCipher, recall_filter: RecallFilter
) -> MemoryQuerySet:
    """The memories recall may return: this user's, this mode's, active, medium or high."""
    # Security invariant: the scope comes from the one scoped door; candidates (confidence
    # "candidate") and superseded or forgotten memories are never recalled.
    queryset = memories_of(user=user, mode=mode).recallable()
    if recall_filter.includes_candidates:
        queryset = memories_of(user=user, mode=mode).filter(
            status__in=[MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE]
        )
    if recall_filter.as_of is not None:
        # Today's candidates were candidates then too; those confirmed since are dropped once
        # opened as they were (as_of.items_as_of).
        queryset = known_at(memories_of(user=user, mode=mode), recall_filter.as_of)
        if not recall_filter.includes_candidates:
            queryset = queryset.exclude(status=MemoryStatus.CANDIDATE).exclude(
                confidence=Confidence.CANDIDATE
            )
    if recall_filter.kinds:
        queryset = queryset.filter(kind__in=recall_filter.kinds)
    # A memory's time is when it happened, if known, else when it was learnt.
    if recall_filter.since:
        queryset = queryset.filter(
            Q(occurred_at__gte=recall_filter.since)
            | Q(occurred_at__isnull=True, created_at__gte=recall_filter.since)
        )
    if recall_filter.until:
        queryset = queryset.filter(
            Q(occurred_at__lt=recall_filter.until)
            | Q(occurred_at__isnull=True, created_at__lt=recall_filter.until)
        )
    if recall_filter.topics:
        about = Q()
        for topic in recall_filter.topics:
            about |= Q(blind_tokens__contains=cipher.blind_tokens(topic))
        queryset = queryset.filter(about)
    if recall_filter.exclude_ids:
        queryset = queryset.exclude(pk__in=recall_filter.exclude_ids)
    return queryset
