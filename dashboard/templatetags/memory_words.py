"""Template filters that put memory fields into words; they format, never query."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.dateformat import format as format_date
from django.utils.timesince import timesince

from memoryhub.audit.actions import action_words as _action_words
from memoryhub.memory_rows import MemoryItem
from memoryhub.models import Confidence, MemoryKind, MemorySource, MemoryStatus
from memoryhub.queries.overview import confidence_word as _confidence_word

register = template.Library()

KIND_LABELS: dict[str, str] = {
    MemoryKind.FACT: "Fact",
    MemoryKind.PREFERENCE: "Preference",
    MemoryKind.PROCEDURE: "Procedure",
    MemoryKind.EPISODE: "Episode",
    MemoryKind.SESSION_SUMMARY: "Session",
    MemoryKind.OPEN_ITEM: "Open item",
    MemoryKind.THEME: "Theme",
}
SOURCE_WORDS: dict[str, str] = {
    MemorySource.USER: "you",
    MemorySource.EXPLICIT: "you, through an agent",
    MemorySource.EXTRACTED: "a conversation",
    MemorySource.REVIEWER: "a reviewer",
    MemorySource.SYSTEM: "MemoryHub",
}


@register.filter
def confidence_word(confidence: str) -> str:
    """ "confirmed", "likely" or "not sure yet"."""
    return _confidence_word(confidence)


@register.filter
def kind_label(kind: str) -> str:
    return KIND_LABELS.get(kind, kind.replace("_", " ").capitalize())


@register.filter
def source_word(item: MemoryItem) -> str:
    """Who or what stated the item, in a few words."""
    agent = item.extra.get("agent")
    if item.source in {MemorySource.AGENT, MemorySource.EXPLICIT} and agent:
        prefix = "you, through " if item.source == MemorySource.EXPLICIT else ""
        return f"{prefix}agent “{agent}”"
    if item.source == MemorySource.AGENT:
        return "an agent"
    return SOURCE_WORDS.get(item.source, item.source)


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


# What a forget removes, in words: (one, many).
RECEIPT_WORDS: dict[str, tuple[str, str]] = {
    MemoryKind.FACT: ("fact", "facts"),
    MemoryKind.PREFERENCE: ("preference", "preferences"),
    MemoryKind.PROCEDURE: ("procedure", "procedures"),
    MemoryKind.EPISODE: ("episode", "episodes"),
    MemoryKind.SESSION_SUMMARY: ("conversation summary", "conversation summaries"),
    MemoryKind.OPEN_ITEM: ("open item", "open items"),
    MemoryKind.THEME: ("theme", "themes"),
    "version": ("earlier version of an item", "earlier versions of items"),
    "message": ("conversation message", "conversation messages"),
    "working_memory": (
        "agent's working notes of a conversation",
        "agents' working notes of conversations",
    ),
    "session": ("ended conversation", "ended conversations"),
    "journal": ("agent's note of what it told you", "agents' notes of what they told you"),
    "answer_record": ("answer an agent gave you", "answers agents gave you"),
    "learning_candidate": ("question kept for review", "questions kept for review"),
    "graph_node": ("knowledge-graph entry", "knowledge-graph entries"),
    "graph_edge": ("knowledge-graph link", "knowledge-graph links"),
}


@register.filter
def receipt_line(kind: str, count: int) -> str:
    """ "2 facts", "1 conversation message": a count of what a forget removes, in words."""
    one, many = RECEIPT_WORDS.get(kind, (kind.replace("_", " "), kind.replace("_", " ")))
    return f"{count} {one if count == 1 else many}"


@register.filter
def receipt_kind(kind: str) -> str:
    """A receipt line's kind, in words ("fact", "message", "working_memory" …)."""
    return KIND_LABELS.get(kind, kind.replace("_", " ")).lower()


@register.filter
def when(moment: datetime | None) -> str:
    """ "just now", "5 minutes ago" or "3 hours ago" within a day; the date after; "never"."""
    if moment is None:
        return "never"
    age = timezone.now() - moment
    if age < timedelta(minutes=1):
        return "just now"
    if age < timedelta(days=1):
        return f"{timesince(moment, depth=1)} ago"
    return format_date(timezone.localtime(moment), "j M Y, H:i")
