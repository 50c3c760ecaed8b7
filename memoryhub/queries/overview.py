"""What the dashboard shows of one mode: sections of memories, candidates, contradictions, why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from django.core.paginator import Paginator
from django.db.models import Exists, F, OuterRef, Q
from django.db.models.functions import Coalesce
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django_stubs_ext import StrPromise

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.memory_rows import MemoryItem, decrypt_memory, get_memory_row, memories_of
from memoryhub.message_rows import open_message
from memoryhub.models import (
    Confidence,
    Memory,
    MemoryKind,
    MemoryQuerySet,
    MemorySource,
    MemoryStatus,
    Message,
    Mode,
    Session,
    User,
)

# Words for people (the dashboard): translated into the language of the request when shown.
CONFIDENCE_WORDS: dict[str, StrPromise] = {
    Confidence.CANDIDATE: _("not sure yet"),
    Confidence.MEDIUM: _("likely"),
    Confidence.HIGH: _("confirmed"),
}
CURRENT_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE)
# Filters on encrypted payload fields (episode type, topic) decrypt the newest rows in Python;
# past this many the oldest are not searched (the page says so).
MAX_FILTER_SCAN = 5000
# Never load vectors or blind-index hashes for display: they are most of a row's bytes.
HEAVY_FIELDS = ("embedding", "blind_tokens")


def confidence_word(confidence: str) -> str:
    """The confidence in words a person reads: "confirmed", "likely" or "not sure yet"."""
    return str(CONFIDENCE_WORDS.get(confidence, CONFIDENCE_WORDS[Confidence.CANDIDATE]))


@dataclass(frozen=True)
class Section:
    """One part of the dashboard: which kinds and statuses it lists."""

    slug: str
    title: StrPromise  # Translated when shown.
    kinds: tuple[str, ...]
    statuses: tuple[str, ...] = CURRENT_STATUSES


SECTIONS = (
    Section("profile", _("Profile"), (MemoryKind.FACT,)),
    Section(
        "preferences",
        _("Preferences and procedures"),
        (MemoryKind.PREFERENCE, MemoryKind.PROCEDURE),
    ),
    Section("sessions", _("Recent sessions"), (MemoryKind.SESSION_SUMMARY,)),
    Section("episodes", _("Episodes"), (MemoryKind.EPISODE, MemoryKind.THEME)),
    Section("open-items", _("Open items"), (MemoryKind.OPEN_ITEM,), (MemoryStatus.ACTIVE,)),
    Section("everything", _("Everything"), ()),
)
SECTIONS_BY_SLUG = {section.slug: section for section in SECTIONS}


@dataclass(frozen=True)
class EpisodeFilter:
    """Episode timeline filters; type and topic live in the encrypted payload."""

    episode_type: str = ""
    topic: str = ""
    since: datetime | None = None
    until: datetime | None = None

    @property
    def needs_decryption(self) -> bool:
        return bool(self.episode_type or self.topic)


@dataclass(frozen=True)
class MemoryPage:
    items: tuple[MemoryItem, ...]
    number: int
    num_pages: int
    total: int
    is_truncated: bool = False

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.num_pages


@dataclass(frozen=True)
class Contradiction:
    """A current item and a newer candidate that claims the same slot with another value."""

    current: MemoryItem
    challenger: MemoryItem


@dataclass(frozen=True)
class Overview:
    page: MemoryPage
    candidates: tuple[MemoryItem, ...]
    candidate_total: int
    contradictions: tuple[Contradiction, ...]


def _decorate(memory: Memory, cipher: UserCipher) -> MemoryItem:
    """Decrypt a row fetched with its agent and session, keeping their labels in `extra`."""
    item = decrypt_memory(memory, cipher)
    extra: dict[str, Any] = {"confidence_word": confidence_word(memory.confidence)}
    if memory.agent_id is not None and memory.agent is not None:
        extra["agent"] = memory.agent.name
    if memory.session_id is not None and memory.session is not None:
        extra["session_started_at"] = memory.session.started_at
    return replace(item, extra=extra)


def _display_rows(queryset: MemoryQuerySet) -> MemoryQuerySet:
    return queryset.select_related("agent", "session").defer(*HEAVY_FIELDS)


def _section_rows(
    user: User,
    mode: Mode,
    section: Section,
    episode_filter: EpisodeFilter | None,
    agent_id: UUID | None = None,
) -> MemoryQuerySet:
    queryset = memories_of(user=user, mode=mode).filter(status__in=section.statuses)
    if section.kinds:
        queryset = queryset.filter(kind__in=section.kinds)
    if agent_id is not None:
        queryset = queryset.filter(agent_id=agent_id)
    if section.slug != "episodes":
        return queryset.order_by("-created_at", "-id")
    # The timeline orders by when it happened, or else by when it was remembered.
    if episode_filter is not None and episode_filter.since is not None:
        since = episode_filter.since
        queryset = queryset.filter(
            Q(occurred_at__gte=since) | Q(occurred_at__isnull=True, created_at__gte=since)
        )
    if episode_filter is not None and episode_filter.until is not None:
        until = episode_filter.until
        queryset = queryset.filter(
            Q(occurred_at__lt=until) | Q(occurred_at__isnull=True, created_at__lt=until)
        )
    return queryset.order_by(Coalesce("occurred_at", "created_at").desc(), "-id")


def _matches(item: MemoryItem, episode_filter: EpisodeFilter) -> bool:
    payload = item.payload if isinstance(item.payload, dict) else {}
    if episode_filter.episode_type and payload.get("type") != episode_filter.episode_type:
        return False
    if episode_filter.topic:
        wanted = episode_filter.topic.casefold()
        topics = payload.get("topics") or []
        texts = [str(t) for t in topics] if isinstance(topics, list) else [str(topics)]
        return any(wanted in text.casefold() for text in [*texts, item.content])
    return True


def _page(
    queryset: MemoryQuerySet,
    cipher: UserCipher,
    *,
    number: int,
    per_page: int,
    episode_filter: EpisodeFilter | None,
) -> MemoryPage:
    if episode_filter is not None and episode_filter.needs_decryption:
        scanned = list(_display_rows(queryset)[: MAX_FILTER_SCAN + 1])
        matching = [
            item
            for item in (_decorate(row, cipher) for row in scanned[:MAX_FILTER_SCAN])
            if _matches(item, episode_filter)
        ]
        pages = Paginator(matching, per_page)
        matching_page = pages.get_page(number)
        return MemoryPage(
            items=tuple(matching_page.object_list),
            number=matching_page.number,
            num_pages=pages.num_pages,
            total=pages.count,
            is_truncated=len(scanned) > MAX_FILTER_SCAN,
        )
    paginator = Paginator(_display_rows(queryset), per_page)
    page = paginator.get_page(number)
    return MemoryPage(
        items=tuple(_decorate(row, cipher) for row in page.object_list),
        number=page.number,
        num_pages=paginator.num_pages,
        total=paginator.count,
    )


def _candidates(user: User, mode: Mode) -> MemoryQuerySet:
    return memories_of(user=user, mode=mode).filter(
        Q(confidence=Confidence.CANDIDATE) | Q(status=MemoryStatus.CANDIDATE),
        status__in=CURRENT_STATUSES,
    )


def _contradictions(
    user: User, mode: Mode, cipher: UserCipher, limit: int
) -> tuple[Contradiction, ...]:
    scoped = memories_of(user=user, mode=mode)
    current = scoped.filter(
        status=MemoryStatus.ACTIVE, confidence__in=[Confidence.MEDIUM, Confidence.HIGH]
    )
    challengers = list(
        _display_rows(
            _candidates(user, mode)
            .exclude(slot_hash="")
            .filter(Exists(current.filter(slot_hash=OuterRef("slot_hash"))))
            .order_by("-created_at")
        )[:limit]
    )
    holders: dict[str, Memory] = {}
    slots = {row.slot_hash for row in challengers}
    for row in _display_rows(current.filter(slot_hash__in=slots).order_by("created_at")):
        holders[row.slot_hash] = row  # The newest current holder wins.
    return tuple(
        Contradiction(
            current=_decorate(holders[row.slot_hash], cipher), challenger=_decorate(row, cipher)
        )
        for row in challengers
        if row.slot_hash in holders
    )


def get_overview(
    *,
    user: User,
    mode: Mode,
    actor: Actor,
    section: Section,
    page: int = 1,
    per_page: int = 25,
    episode_filter: EpisodeFilter | None = None,
    candidate_limit: int = 5,
    agent_id: UUID | None = None,
) -> Overview:
    """One page of a section (optionally of one agent's items), plus what waits for the user."""
    cipher = cipher_for(user)
    memory_page = _page(
        _section_rows(user, mode, section, episode_filter, agent_id),
        cipher,
        number=page,
        per_page=per_page,
        episode_filter=episode_filter,
    )
    candidate_rows = _display_rows(_candidates(user, mode).order_by("-created_at", "-id"))
    candidates = tuple(_decorate(row, cipher) for row in candidate_rows[:candidate_limit])
    overview = Overview(
        page=memory_page,
        candidates=candidates,
        candidate_total=_candidates(user, mode).count() if candidates else 0,
        contradictions=_contradictions(user, mode, cipher, limit=10),
    )
    shown = {item.id for item in (*memory_page.items, *candidates)}
    for pair in overview.contradictions:
        shown |= {pair.current.id, pair.challenger.id}
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.DASHBOARD_LIST,
        object_ids=sorted(shown),
        mode=mode.slug,
    )
    return overview


@dataclass(frozen=True)
class ItemCounts:
    """The numbers the dashboard shows beside a section title and "Is this right?"."""

    section_total: int
    candidate_total: int


def count_items(
    *, user: User, mode: Mode, section: Section, agent_id: UUID | None = None
) -> ItemCounts:
    """How many items a section holds (of one agent, if given), and how many wait for an answer."""
    return ItemCounts(
        section_total=_section_rows(user, mode, section, None, agent_id).count(),
        candidate_total=_candidates(user, mode).count(),
    )


@dataclass(frozen=True)
class AgentName:
    id: UUID
    name: str


def list_mode_agents(*, user: User, mode: Mode) -> tuple[AgentName, ...]:
    """The agents that remembered something in this mode, by name (for the agent filter)."""
    rows = (
        memories_of(user=user, mode=mode)
        .filter(agent__isnull=False)
        .order_by("agent__name", "agent_id")
        .values_list("agent_id", "agent__name")
        .distinct()
    )
    return tuple(AgentName(id=agent_id, name=name) for agent_id, name in rows)


def name_agents(*, user: User, mode: Mode, items: Sequence[MemoryItem]) -> list[MemoryItem]:
    """The items with the name of the agent that stated each (as the dashboard cards show)."""
    names = dict(
        memories_of(user=user, mode=mode)
        .filter(pk__in=[item.id for item in items], agent__isnull=False)
        .values_list("pk", "agent__name")
    )
    return [
        replace(item, extra={**item.extra, "agent": names[item.id]}) if item.id in names else item
        for item in items
    ]


@dataclass(frozen=True)
class TemporarySession:
    """A temporary (incognito) conversation: it may read memory but nothing of it is kept."""

    id: UUID
    agent: str
    started_at: datetime
    last_activity_at: datetime
    is_open: bool


def list_temporary_sessions(
    *, user: User, mode: Mode, limit: int = 5
) -> tuple[TemporarySession, ...]:
    """The mode's most recent temporary sessions, open ones first (no text: they keep none)."""
    rows = (
        Session.objects.for_owner(user=user, mode=mode)
        .filter(is_incognito=True)
        .select_related("agent")
        .order_by(F("ended_at").desc(nulls_first=True), "-started_at")[:limit]
    )
    return tuple(
        TemporarySession(
            id=row.pk,
            agent=row.agent.name if row.agent is not None else "",
            started_at=row.started_at,
            last_activity_at=row.last_activity_at,
            is_open=row.is_open,
        )
        for row in rows
    )


def get_item(*, user: User, mode: Mode, memory_id: UUID | str, actor: Actor) -> MemoryItem:
    """One item as the dashboard shows it (with its agent and session labels)."""
    row = get_memory_row(user=user, mode=mode, memory_id=memory_id)
    memory = _display_rows(memories_of(user=user, mode=mode)).get(pk=row.pk)
    item = _decorate(memory, cipher_for(user))
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.MEMORY_READ,
        object_ids=[memory.pk],
        mode=mode.slug,
    )
    return item


@dataclass(frozen=True)
class Quote:
    """A message an item was taken from, decrypted for its owner."""

    message_id: UUID
    role: str
    text: str
    created_at: datetime
    session_id: UUID


@dataclass(frozen=True)
class Provenance:
    """Why MemoryHub remembers an item: who stated it, the messages it came from, what it uses."""

    item: MemoryItem
    stated_by: str
    quotes: tuple[Quote, ...]
    derived_from: tuple[MemoryItem, ...]
    session_id: UUID | None
    session_started_at: datetime | None


def _stated_by(memory: Memory) -> str:
    """Who stated the item, in the words (and language) of the person asking."""
    agent = (
        gettext("the agent “{name}”").format(name=memory.agent.name)
        if memory.agent is not None
        else gettext("an agent")
    )
    words: dict[str, str] = {
        MemorySource.USER: gettext("you, in this dashboard"),
        MemorySource.EXPLICIT: gettext("you, asking {agent} to remember it").format(agent=agent),
        MemorySource.AGENT: agent,
        MemorySource.EXTRACTED: gettext("MemoryHub, from a conversation with {agent}").format(
            agent=agent
        ),
        MemorySource.REVIEWER: gettext("a reviewer"),
        MemorySource.SYSTEM: "MemoryHub",
        MemorySource.IMPORTED: gettext("an import from another service"),
    }
    return words.get(memory.source, agent)


def explain_memory(*, user: User, mode: Mode, memory_id: UUID | str, actor: Actor) -> Provenance:
    """Answer "why do you remember this?" for one item, writing its audit row."""
    row = get_memory_row(user=user, mode=mode, memory_id=memory_id)
    memory = _display_rows(memories_of(user=user, mode=mode)).get(pk=row.pk)
    cipher = cipher_for(user)
    messages = Message.objects.filter(
        derived_memories=memory, session__user=user, session__mode=mode
    ).order_by("created_at", "seq")
    quotes = tuple(
        Quote(
            message_id=message.pk,
            role=message.role,
            text=open_message(message, cipher),
            created_at=message.created_at,
            session_id=message.session_id,
        )
        for message in messages
    )
    # The reverse of `derived_from`, through the scoped manager (related managers are unscoped).
    parents = _display_rows(memories_of(user=user, mode=None).filter(derivatives=memory))
    provenance = Provenance(
        item=_decorate(memory, cipher),
        stated_by=_stated_by(memory),
        quotes=quotes,
        derived_from=tuple(_decorate(parent, cipher) for parent in parents),
        session_id=memory.session_id,
        session_started_at=memory.session.started_at if memory.session is not None else None,
    )
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.MEMORY_PROVENANCE,
        object_ids=[memory.pk, *(q.message_id for q in quotes)],
        mode=mode.slug,
    )
    return provenance
