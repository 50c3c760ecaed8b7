"""Template filters that put memory fields into words; they format, never query."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.formats import date_format, get_format_modules
from django.utils.text import capfirst
from django.utils.timesince import timesince
from django.utils.translation import get_language, gettext, ngettext_lazy, pgettext_lazy
from django.utils.translation import gettext_lazy as _
from django_stubs_ext import StrOrPromise, StrPromise

from memoryhub.audit.actions import action_label as _action_label
from memoryhub.audit.actions import action_words as _action_words
from memoryhub.memory_rows import MemoryItem
from memoryhub.models import (
    ActorType,
    Channel,
    Confidence,
    MemoryKind,
    MemorySource,
    MemoryStatus,
    mode_name_in_words,
)
from memoryhub.queries.overview import confidence_word as _confidence_word

register = template.Library()

# The words are translated when shown (lazily), in the language of the request.
KIND_LABELS: dict[str, StrPromise] = {
    MemoryKind.FACT: _("Fact"),
    MemoryKind.PREFERENCE: _("Preference"),
    MemoryKind.PROCEDURE: _("Procedure"),
    MemoryKind.EPISODE: _("Episode"),
    MemoryKind.SESSION_SUMMARY: _("Session"),
    MemoryKind.OPEN_ITEM: _("Open item"),
    MemoryKind.THEME: _("Theme"),
}
SOURCE_WORDS: dict[str, StrOrPromise] = {
    MemorySource.USER: _("you"),
    MemorySource.EXPLICIT: _("you, through an agent"),
    MemorySource.EXTRACTED: _("a conversation"),
    MemorySource.REVIEWER: _("a reviewer"),
    MemorySource.SYSTEM: "MemoryHub",
}
# An episode's type (stored in English in its payload), as a person reads it.
EPISODE_TYPE_WORDS: dict[str, StrPromise] = {
    "decision": _("Decision"),
    "milestone": _("Milestone"),
    "commitment": _("Commitment"),
    "event": _("Event"),
}
# Who changed an item (a version's changed_by_type other than the user), after "replaced … by".
ACTOR_TYPE_WORDS: dict[str, StrPromise] = {
    ActorType.AGENT: pgettext_lazy("changed by", "agent"),
    ActorType.REVIEWER: pgettext_lazy("changed by", "reviewer"),
    ActorType.ADMIN: pgettext_lazy("changed by", "admin"),
    ActorType.SYSTEM: pgettext_lazy("changed by", "system"),
}
# The way an audit entry came in (its stored channel), in the access log.
CHANNEL_WORDS: dict[str, StrPromise] = {
    Channel.UI: pgettext_lazy("audit channel", "ui"),
    Channel.API: pgettext_lazy("audit channel", "api"),
    Channel.MCP: pgettext_lazy("audit channel", "mcp"),
    Channel.ADMIN: pgettext_lazy("audit channel", "admin"),
    Channel.SYSTEM: pgettext_lazy("audit channel", "system"),
}


@register.filter
def confidence_word(confidence: str) -> str:
    """ "confirmed", "likely" or "not sure yet"."""
    return _confidence_word(confidence)


@register.filter
def kind_label(kind: str) -> str:
    return str(KIND_LABELS.get(kind, kind.replace("_", " ").capitalize()))


@register.filter
def episode_type_word(episode_type: str | None) -> str:
    """ "Decision", "Milestone" …; an episode without a type is an event."""
    episode_type = episode_type or "event"
    return str(EPISODE_TYPE_WORDS.get(episode_type, capfirst(episode_type)))


@register.filter
def actor_type_word(actor_type: str) -> str:
    return str(ACTOR_TYPE_WORDS.get(actor_type, actor_type))


@register.filter
def channel_word(channel: str) -> str:
    return str(CHANNEL_WORDS.get(channel, channel))


@register.filter
def source_word(item: MemoryItem) -> str:
    """Who or what stated the item, in a few words."""
    agent = item.extra.get("agent")
    if item.source == MemorySource.EXPLICIT and agent:
        return gettext("you, through agent “{name}”").format(name=agent)
    if item.source == MemorySource.AGENT and agent:
        return gettext("agent “{name}”").format(name=agent)
    if item.source == MemorySource.AGENT:
        return gettext("an agent")
    return str(SOURCE_WORDS.get(item.source, item.source))


@register.filter
def is_candidate(item: MemoryItem) -> bool:
    return item.confidence == Confidence.CANDIDATE or item.status == MemoryStatus.CANDIDATE


@register.filter
def is_open(item: MemoryItem) -> bool:
    return item.kind == MemoryKind.OPEN_ITEM and item.status == MemoryStatus.ACTIVE


@register.filter
def action_words(action: str) -> str:
    """A stored audit action in the user's words, from the catalogue (memoryhub/audit/actions.py)."""
    return _action_words(action)


@register.filter
def action_label(action: str) -> str:
    """A stored audit action in the admin table's words (of the user, not to them)."""
    return _action_label(action)


# What a forget removes, in words, singular or plural by the count ("%(count)s" is the count).
RECEIPT_WORDS: dict[str, StrPromise] = {
    MemoryKind.FACT: ngettext_lazy("%(count)s fact", "%(count)s facts", "count"),
    MemoryKind.PREFERENCE: ngettext_lazy("%(count)s preference", "%(count)s preferences", "count"),
    MemoryKind.PROCEDURE: ngettext_lazy("%(count)s procedure", "%(count)s procedures", "count"),
    MemoryKind.EPISODE: ngettext_lazy("%(count)s episode", "%(count)s episodes", "count"),
    MemoryKind.SESSION_SUMMARY: ngettext_lazy(
        "%(count)s conversation summary", "%(count)s conversation summaries", "count"
    ),
    MemoryKind.OPEN_ITEM: ngettext_lazy("%(count)s open item", "%(count)s open items", "count"),
    MemoryKind.THEME: ngettext_lazy("%(count)s theme", "%(count)s themes", "count"),
    "version": ngettext_lazy(
        "%(count)s earlier version of an item", "%(count)s earlier versions of items", "count"
    ),
    "message": ngettext_lazy(
        "%(count)s conversation message", "%(count)s conversation messages", "count"
    ),
    "working_memory": ngettext_lazy(
        "%(count)s agent's working notes of a conversation",
        "%(count)s agents' working notes of conversations",
        "count",
    ),
    "session": ngettext_lazy(
        "%(count)s ended conversation", "%(count)s ended conversations", "count"
    ),
    "journal": ngettext_lazy(
        "%(count)s agent's note of what it told you",
        "%(count)s agents' notes of what they told you",
        "count",
    ),
    "answer_record": ngettext_lazy(
        "%(count)s answer an agent gave you", "%(count)s answers agents gave you", "count"
    ),
    "learning_candidate": ngettext_lazy(
        "%(count)s question kept for review", "%(count)s questions kept for review", "count"
    ),
    "graph_node": ngettext_lazy(
        "%(count)s knowledge-graph entry", "%(count)s knowledge-graph entries", "count"
    ),
    "graph_edge": ngettext_lazy(
        "%(count)s knowledge-graph link", "%(count)s knowledge-graph links", "count"
    ),
}


@register.filter
def receipt_line(kind: str, count: int) -> str:
    """ "2 facts", "1 conversation message": a count of what a forget removes, in words."""
    words = RECEIPT_WORDS.get(kind)
    if words is None:
        return f"{count} {kind.replace('_', ' ')}"
    return str(words % {"count": count})


@register.filter
def receipt_kind(kind: str) -> str:
    """A receipt line's kind, in words ("fact", "message", "working_memory" …)."""
    return str(KIND_LABELS.get(kind, kind.replace("_", " "))).lower()


@register.filter
def when(moment: datetime | None) -> str:
    """ "just now", "5 minutes ago" or "3 hours ago" within a day; the date after; "never"."""
    if moment is None:
        return gettext("never")
    age = timezone.now() - moment
    if age < timedelta(minutes=1):
        return gettext("just now")
    if age < timedelta(days=1):
        return gettext("{time} ago").format(time=timesince(moment, depth=1))
    return date_format(timezone.localtime(moment), "DATETIME_FORMAT")


@register.filter
def exact_time(moment: datetime | None) -> str:
    """A moment to the second with its time zone, for the admin tables: « 3 déc. 2026, 18:07:05
    UTC » (EXACT_DATETIME_FORMAT of memoryhub/formats/<language>)."""
    if moment is None:
        return ""
    return date_format(timezone.localtime(moment), _own_format("EXACT_DATETIME_FORMAT"))


@register.filter
def zoned_time(moment: datetime | None) -> str:
    """A moment to the minute with its time zone: « 3 déc. 2026, 18:07 UTC »."""
    if moment is None:
        return ""
    return date_format(timezone.localtime(moment), _own_format("ZONED_DATETIME_FORMAT"))


def _own_format(name: str) -> str:
    """A date format of ours (memoryhub/formats), in the active language.

    Django's get_format() knows only its own names and returns any other name as it is.
    """
    for module in get_format_modules(get_language()):
        if hasattr(module, name):
            return str(getattr(module, name))
    raise LookupError(name)


@register.filter
def mode_slug_name(slug: str) -> str:
    """A mode known only by its slug (the access log, review candidates): a default mode by its
    name in the reader's language, any other by its slug."""
    return mode_name_in_words(slug, slug) if slug else slug
