"""Template filters that put memory fields into words; they format, never query."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.dateformat import format as format_date
from django.utils.timesince import timesince

from memoryhub.models import Confidence, MemoryKind, MemorySource, MemoryStatus
from memoryhub.queries.memories import MemoryItem
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
ACTION_WORDS: dict[str, str] = {
    "dashboard.list": "viewed memories in the dashboard",
    "memory.list": "listed memories",
    "memory.read": "read a memory",
    "memory.create": "remembered something",
    "memory.reinforce": "said again something already remembered",
    "memory.edit": "edited a memory",
    "memory.delete": "deleted memories",
    "memory.forget": "forgot memories",
    "memory.confirm": "confirmed a memory",
    "memory.reject": "rejected a memory",
    "memory.resolve": "resolved a contradiction",
    "memory.copy": "copied a memory to another mode",
    "memory.history": "read a memory's history",
    "memory.provenance": "asked why a memory is kept",
    "memory.pause": "paused memory",
    "memory.resume": "resumed memory",
    "memory.search": "searched memories",
    "profile.read": "read the profile",
    "open_items.list": "listed open items",
    "context.assemble": "assembled context for a reply",
    "account.export": "exported all data",
    "account.delete": "deleted the account",
    "agent.block": "blocked an agent",
    "agent.unblock": "unblocked an agent",
    "api_key.revoke_all": "revoked your personal keys (your password changed)",
    "settings.retention": "changed retention",
    "access.refused": "tried to reach your memory (you blocked this agent)",
    "access_log.view": "read this access log",
    "role.grant_reviewer": "made you a reviewer",
    "role.grant_admin": "made you an admin",
    "role.revoke_reviewer": "took away your reviewer role",
    "role.revoke_admin": "took away your admin role",
    "answer.report": "reported an answer it gave",
    "answer.feedback": "recorded your feedback on an answer",
    "forget.preview": "previewed what a forget would delete",
    "mode.memory_off": "turned memory off in a mode",
    "mode.memory_on": "turned memory on in a mode",
    "review.candidate_view": "read a scrubbed question for review",
    "review.queue_view": "saw a scrubbed question in the review queue",
    "review.candidate_approve": "published a scrubbed question to the knowledge base",
    "review.candidate_reject": "rejected a scrubbed question in review",
    "review.candidate_skip": "skipped a scrubbed question in review",
    "review.names_read": "read your name to scrub it from a question for review",
    "journal.create": "noted what it told you",
    "journal.read": "read its notes of what it told you",
    "journal.resolve": "closed one of its notes",
    "knowledge.propose": "proposed workspace knowledge",
    "memory.consolidate": "folded episodes into a theme",
    "memory.extract": "remembered things from a conversation",
    "session.start": "started a conversation",
    "session.end": "ended a conversation",
    "session.list": "listed its recent conversations",
    "session.compact": "summarised a long conversation",
    "working_memory.read": "read its working notes of a conversation",
    "working_memory.write": "wrote its working notes of a conversation",
    "journal.list": "listed its notes of what it told you",
    "transcript.sent_to_llm": "sent a conversation to the language model to learn from it",
    "graph.record_answer": "added an answer you were given to the workspace's knowledge graph",
    "review.answer_for_user": "answered a question of yours, for you to confirm",
    "review.needs_user": "left you a question only you can answer",
    "user.create": "created your user record",
    "user.read": "read your user record",
    "user.link_issue": "made a link to connect your login to this user",
    "user.link": "connected your login to this user",
    "user.link_undo": "undid the link of a login to this user: the login left it",
    "admin.user_links": "listed the logins linked to agents' users",
    "audit.view": "read the audit log about you",
    "audit.export": "exported the audit log about you",
}
# What an admin did to a row in the admin site ("admin.<model>.<verb>", memoryhub/admin.py).
ADMIN_VERBS: dict[str, str] = {
    "add": "added",
    "change": "changed",
    "delete": "deleted",
    "view": "viewed",
    "list": "listed",
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
    if action in ACTION_WORDS:
        return ACTION_WORDS[action]
    parts = action.split(".")
    if len(parts) == 3 and parts[0] == "admin" and parts[2] in ADMIN_VERBS:
        return f"{ADMIN_VERBS[parts[2]]} a record ({parts[1]}) in the admin site"
    return action.replace(".", ": ").replace("_", " ")


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
