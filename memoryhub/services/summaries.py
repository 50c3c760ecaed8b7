"""System-written summaries (consolidation themes, thread compactions): their text and rows.

The summaries are extractive on purpose: a theme quotes every episode it covers and a
compaction keeps every sentence that names someone or holds a number or a date, so no fact
of the sources is lost and nothing is invented.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryhub import text_patterns
from memoryhub.embeddings import Embedder
from memoryhub.keyring import UserCipher
from memoryhub.memory_rows import MemoryItem, keep_version, seal_content, seal_payload
from memoryhub.models import Memory, MemoryVersion

THEME_GENERATOR = "consolidation"
COMPACTION_GENERATOR = "compaction"

SENTENCE_PATTERN = text_patterns.compile(r"[^.!?\n]+[.!?]*")
WORD_PATTERN = text_patterns.compile(r"\w[\w'’-]*", text_patterns.UNICODE)
# Function words: they open sentences without naming anyone, and never make a topic.
COMMON_WORDS = frozenset(
    str.split(
        "i i'm i've i'll i'd a an the we you he she it they my our your this that these those "
        "there here what when where why how who which yes no ok okay thanks thank please hi hello "
        "and but so or if then also just well sure let can could would should will do did does "
        "is are was were have has had not je tu il elle nous vous ils elles le la les un une des "
        "et mais ou donc oui non merci bonjour salut ce cette ces mon ma mes"
    )
)


@dataclass(frozen=True)
class SummarySource:
    """One decrypted message handed to the compaction summariser."""

    seq: int
    role: str
    content: str
    created_at: datetime


def is_entity(word: str) -> bool:
    """A name, number or date word: what a compaction summary must never drop."""
    if any(ch.isdigit() for ch in word):
        return True
    return word[:1].isupper() and word.casefold() not in COMMON_WORDS


def entities_of(text: str) -> list[str]:
    """Names, numbers and dates in the text, in order, without repeats."""
    seen: dict[str, None] = {}
    for word in WORD_PATTERN.findall(text):
        cleaned = word.strip("'’-")
        if cleaned and is_entity(cleaned):
            seen.setdefault(cleaned, None)
    return list(seen)


def _fit(lines: list[str], tail: str, limit: int) -> str:
    # Drop the oldest quoted sentences first: the entity line at the end keeps every
    # name, number and date even when the sentences no longer fit.
    while lines and len("\n".join([*lines, tail]).encode()) > limit:
        lines.pop(1 if len(lines) > 1 else 0)
    return "\n".join([*lines, tail]) if lines else tail


def compose_compaction(messages: Sequence[SummarySource]) -> str:
    """Summarise older messages of a thread, keeping every name, number and date."""
    ordered = sorted(messages, key=lambda m: m.seq)
    first, last = ordered[0], ordered[-1]
    lines = [
        f"Summary of messages {first.seq}–{last.seq} "
        f"({first.created_at:%Y-%m-%d} to {last.created_at:%Y-%m-%d}):"
    ]
    entities: dict[str, None] = {}
    for message in ordered:
        for sentence in SENTENCE_PATTERN.findall(message.content):
            found = entities_of(sentence)
            if found:
                lines.append(f"{message.role}: {sentence.strip()}")
                entities.update(dict.fromkeys(found))
    tail = "Mentioned: " + (", ".join(entities) if entities else "no names, numbers or dates.")
    return _fit(lines, tail, settings.MEMORYHUB_MAX_CONTENT_BYTES)


def topics_of(item: MemoryItem) -> set[str]:
    """The topics a memory's payload names ("topic" and "topics"), case-folded."""
    raw = item.payload.get("topics")
    values = [str(value) for value in raw] if isinstance(raw, list) else []
    if isinstance(item.payload.get("topic"), str):
        values.append(item.payload["topic"])
    return {value.strip().casefold() for value in values if value.strip()}


def _topic_of(episodes: Sequence[MemoryItem]) -> str:
    shared = set.intersection(*(topics_of(e) for e in episodes))
    if shared:
        return sorted(shared)[0]
    # No shared topic: name the theme by its most frequent longer word.
    counts: dict[str, int] = {}
    for episode in episodes:
        for word in {w.casefold() for w in WORD_PATTERN.findall(episode.content) if len(w) > 4}:
            counts[word] = counts.get(word, 0) + 1
    return max(sorted(counts), key=lambda w: counts[w]) if counts else "related episodes"


def compose_theme(episodes: Sequence[MemoryItem]) -> tuple[str, dict[str, Any]]:
    """A theme's text (quoting every episode) and payload (the ids it covers, its period)."""
    ordered = sorted(episodes, key=lambda e: (e.occurred_at or e.created_at, str(e.id)))
    first = ordered[0].occurred_at or ordered[0].created_at
    last = ordered[-1].occurred_at or ordered[-1].created_at
    topic = _topic_of(ordered)
    lines = [f"Theme: {topic} ({len(ordered)} episodes, {first:%Y-%m-%d} to {last:%Y-%m-%d})."]
    lines += [f"- {(e.occurred_at or e.created_at):%Y-%m-%d}: {e.content}" for e in ordered]
    payload = {
        "generated_by": THEME_GENERATOR,
        "topic": topic,
        "covers": [str(e.id) for e in ordered],
        "period": [first.isoformat(), last.isoformat()],
    }
    return "\n".join(lines), payload


def rewrite_summary(
    memory: Memory,
    *,
    content: str,
    payload: dict[str, Any],
    cipher: UserCipher,
    embedder: Embedder,
    keep_history: bool,
) -> Memory:
    """Replace a summary's text in place; without `keep_history` its old versions go too.

    Forgetting regenerates summaries with `keep_history=False`: an old version would still
    quote what was forgotten.
    """
    with transaction.atomic():
        if keep_history:
            keep_version(
                memory,
                cipher=cipher,
                changed_by_type="system",
                changed_by_id="system",
                reason="regenerate",
            )
        else:
            MemoryVersion.objects.filter(memory=memory).delete()
        fields = seal_content(
            memory,
            cipher=cipher,
            content=content,
            embedding=embedder.embed([content])[0],
            embedding_model=embedder.name,
        )
        fields += seal_payload(memory, cipher=cipher, payload=payload)
        memory.updated_at = timezone.now()
        memory.save(update_fields=[*fields, "updated_at"])
    return memory
