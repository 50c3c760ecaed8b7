"""Consolidation: fold related episodes into themes and merge near-duplicate facts, losing none.

Two rules keep every fact findable. A theme quotes each episode it covers word for word, and
the episodes stay (superseded, linked through `derived_from` and the theme's `covers`). A fact
is merged into another only when the other says every one of its words in the same order, so
"daughter is 7" never merges into "daughter is 8".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import MINILM, Embedder, distance_scale, embedder_for_workspace
from memoryhub.keyring import UserCipher, cipher_for, tokenize
from memoryhub.memory_rows import MemoryItem, decrypt_memory, open_content
from memoryhub.models import (
    Confidence,
    Importance,
    Memory,
    MemoryKind,
    MemorySource,
    MemoryStatus,
    Mode,
    User,
)
from memoryhub.services.confidence import LADDER_KINDS, LIVE_STATUSES, status_for
from memoryhub.services.ingest import cite_messages
from memoryhub.services.memories import NewMemory, build_memory
from memoryhub.services.quotas import lock_usage
from memoryhub.services.summaries import compose_theme, topics_of

THEME_MIN_EPISODES = 3
THEME_MAX_EPISODES = 8
# Episodes this close in meaning (or sharing a topic) belong to one theme.
THEME_MIN_SIMILARITY = 0.55
# Facts this close in meaning, whose words are all in the other, are one fact told twice.
DUPLICATE_MIN_SIMILARITY = 0.9

_RANK = {Confidence.CANDIDATE: 0, Confidence.MEDIUM: 1, Confidence.HIGH: 2}
_IMPORTANCE_RANK = [Importance.LOW, Importance.NORMAL, Importance.HIGH, Importance.CRITICAL]


@dataclass(frozen=True)
class ConsolidationReport:
    themes: int = 0
    episodes: int = 0
    facts_merged: int = 0

    def __add__(self, other: ConsolidationReport) -> ConsolidationReport:
        return ConsolidationReport(
            themes=self.themes + other.themes,
            episodes=self.episodes + other.episodes,
            facts_merged=self.facts_merged + other.facts_merged,
        )


def _unit(vectors: Sequence[Any]) -> np.ndarray[Any, np.dtype[np.float64]]:
    matrix = np.array([np.asarray(v, dtype=np.float64) for v in vectors])
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def group_episodes(
    episodes: Sequence[MemoryItem], vectors: Sequence[Any], *, model: str = MINILM
) -> list[list[int]]:
    """Indices of episodes grouped by shared topic or closeness to the group's first episode.

    `model` made the vectors: their cosine is read on MiniLM's scale, as the threshold is.
    """
    if not episodes:
        return []
    similarity = 1.0 - (1.0 - _unit(vectors) @ _unit(vectors).T) * distance_scale(model)
    topics = [topics_of(e) for e in episodes]
    assigned: set[int] = set()
    groups: list[list[int]] = []
    for seed in range(len(episodes)):
        if seed in assigned:
            continue
        group = [seed]
        for other in range(seed + 1, len(episodes)):
            if len(group) == THEME_MAX_EPISODES:
                break
            if other not in assigned and (
                topics[seed] & topics[other] or similarity[seed, other] >= THEME_MIN_SIMILARITY
            ):
                group.append(other)
        if len(group) >= THEME_MIN_EPISODES:
            groups.append(group)
            assigned.update(group)
    return groups


def _write_theme(
    user: User,
    mode: Mode,
    members: list[tuple[Memory, MemoryItem]],
    cipher: UserCipher,
    embedder: Embedder,
) -> Memory:
    items = [item for _, item in members]
    content, payload = compose_theme(items)
    item = NewMemory(
        kind=MemoryKind.THEME,
        content=content,
        source=MemorySource.SYSTEM,
        confidence=Confidence.MEDIUM,
        importance=max(
            (i.importance for i in items),
            key=lambda value: _IMPORTANCE_RANK.index(Importance(value)),
        ),
        payload=payload,
        occurred_at=max(i.occurred_at or i.created_at for i in items),
        # The episodes' tags carry over, with those of the theme's own text (computed when sealed).
        personal_data=tuple(sorted({c for i in items for c in i.personal_data})),
        is_flagged=any(i.is_flagged for i in items),
    )
    theme = build_memory(
        item,
        user=user,
        mode=mode,
        cipher=cipher,
        embedding=embedder.embed([content])[0],
        embedding_model=embedder.name,
    )
    theme.save()
    through = Memory.derived_from.through
    through.objects.bulk_create(
        [through(from_memory_id=theme.pk, to_memory_id=row.pk) for row, _ in members]
    )
    # Folded away, not deleted: the theme quotes them and links to them.
    Memory.objects.for_owner(user=user, mode=mode).filter(
        pk__in=[row.pk for row, _ in members]
    ).update(status=MemoryStatus.SUPERSEDED)
    return theme


def build_themes(
    *, user: User, mode: Mode, embedder: Embedder, now: datetime | None = None
) -> list[Memory]:
    """Fold settled episodes (older than the consolidation age) into themes; return the themes."""
    now = now or timezone.now()
    cipher = cipher_for(user)
    settled = now - timedelta(days=settings.MEMORYHUB_CONSOLIDATE_AFTER_DAYS)
    rows = list(
        Memory.objects.for_owner(user=user, mode=mode)
        .filter(kind=MemoryKind.EPISODE, status=MemoryStatus.ACTIVE, created_at__lt=settled)
        # Their vectors are compared with each other: only those of one model.
        .filter(embedding_model=embedder.name)
        .exclude(embedding=None)
        .exclude(derivatives__kind=MemoryKind.THEME)
        .order_by("created_at", "pk")
    )
    items = [decrypt_memory(row, cipher) for row in rows]
    order = sorted(range(len(rows)), key=lambda i: items[i].occurred_at or rows[i].created_at)
    rows, items = [rows[i] for i in order], [items[i] for i in order]
    limit = settings.MEMORYHUB_MAX_CONTENT_BYTES
    themes = []
    for group in group_episodes(items, [row.embedding for row in rows], model=embedder.name):
        members = [(rows[i], items[i]) for i in group]
        while len(compose_theme([i for _, i in members])[0].encode()) > limit:
            members.pop()
        if len(members) >= THEME_MIN_EPISODES:
            themes.append(_write_theme(user, mode, members, cipher, embedder))
    return themes


def _is_subsequence(short: list[str], long: list[str]) -> bool:
    remaining = iter(long)
    return all(word in remaining for word in short)


def _survivor_of(
    a: Memory, b: Memory, words: dict[UUID, list[str]]
) -> tuple[Memory, Memory] | None:
    """(survivor, duplicate) when one says every word of the other, in the same order.

    Order matters: "prefers tea over coffee" and "prefers coffee over tea" share every word.
    """
    words_a, words_b = words[a.pk], words[b.pk]
    if words_a == words_b:
        # The surer, better-attested, older one stays.
        def key(m: Memory) -> tuple[int, int, datetime]:
            return (-_RANK[Confidence(m.confidence)], -m.evidence_count, m.created_at)

        first, second = sorted([a, b], key=key)
        return first, second
    if _is_subsequence(words_b, words_a):
        return a, b
    if _is_subsequence(words_a, words_b):
        return b, a
    return None


def _absorb(survivor: Memory, duplicate: Memory) -> None:
    survivor.evidence_count += duplicate.evidence_count
    if _RANK[Confidence(duplicate.confidence)] > _RANK[Confidence(survivor.confidence)]:
        survivor.confidence = duplicate.confidence
        survivor.status = status_for(survivor.confidence)
    survivor.updated_at = timezone.now()
    survivor.save(update_fields=["evidence_count", "confidence", "status", "updated_at"])
    Memory.derived_from.through.objects.create(
        from_memory_id=survivor.pk, to_memory_id=duplicate.pk
    )
    # The duplicate's evidence now supports the survivor, so forgetting one source keeps it.
    cite_messages(
        survivor,
        list(
            Memory.source_messages.through.objects.filter(memory_id=duplicate.pk).values_list(
                "message_id", flat=True
            )
        ),
    )
    duplicate.status = MemoryStatus.SUPERSEDED
    duplicate.save(update_fields=["status"])


def merge_duplicate_facts(*, user: User, mode: Mode) -> list[UUID]:
    """Merge facts told twice into one (evidence and sources combined); return the merged ids."""
    rows = list(
        Memory.objects.for_owner(user=user, mode=mode)
        .filter(kind__in=LADDER_KINDS, status__in=LIVE_STATUSES, valid_to__isnull=True)
        # Their vectors are compared with each other: only those of the deployment's model (a
        # fact not re-embedded yet during a switch waits for the next run).
        .filter(embedding_model=settings.MEMORYHUB_EMBEDDING_MODEL)
        .exclude(embedding=None)
        .order_by("created_at", "pk")
    )
    if len(rows) < 2:
        return []
    similarity = _unit([row.embedding for row in rows])
    scale = distance_scale(settings.MEMORYHUB_EMBEDDING_MODEL)
    pairs = []
    for i in range(len(rows)):
        scores = 1.0 - (1.0 - similarity[i + 1 :] @ similarity[i]) * scale
        for offset in np.nonzero(scores >= DUPLICATE_MIN_SIMILARITY)[0]:
            j = i + 1 + int(offset)
            if rows[i].kind == rows[j].kind and rows[i].slot_hash == rows[j].slot_hash:
                pairs.append((float(scores[offset]), i, j))
    cipher = cipher_for(user)
    involved = {rows[k].pk: rows[k] for _, i, j in pairs for k in (i, j)}
    words = {pk: tokenize(open_content(row, cipher)) for pk, row in involved.items()}
    merged: list[UUID] = []
    gone: set[int] = set()
    for _, i, j in sorted(pairs, reverse=True):
        if i in gone or j in gone:
            continue
        outcome = _survivor_of(rows[i], rows[j], words)
        if outcome is None:
            continue
        survivor, duplicate = outcome
        _absorb(survivor, duplicate)
        gone.add(i if duplicate is rows[i] else j)
        merged.append(duplicate.pk)
    return merged


def consolidate_mode(
    *, user: User, mode: Mode, embedder: Embedder, now: datetime | None = None
) -> ConsolidationReport:
    """Build themes and merge duplicates in one mode; running it again changes nothing."""
    with transaction.atomic():
        lock_usage(user.pk)  # Before any memory row: see quotas.lock_usage.
        themes = build_themes(user=user, mode=mode, embedder=embedder, now=now)
        merged = merge_duplicate_facts(user=user, mode=mode)
        covered = Memory.derived_from.through.objects.filter(
            from_memory_id__in=[theme.pk for theme in themes]
        ).count()
        if themes or merged:
            record_access(
                actor=Actor.system("consolidation"),
                subject_user_id=user.pk,
                action=AuditAction.MEMORY_CONSOLIDATE,
                object_ids=[*(theme.pk for theme in themes), *merged],
                mode=mode.slug,
            )
    return ConsolidationReport(themes=len(themes), episodes=covered, facts_merged=len(merged))


def consolidate_all(
    *, embedder: Embedder | None = None, now: datetime | None = None
) -> ConsolidationReport:
    """Consolidate every mode of every user (the weekly job).

    Without `embedder`, each user's themes are embedded with their workspace's model.
    """
    report = ConsolidationReport()
    for mode in Mode.objects.select_related("user__workspace").order_by("pk"):
        chosen = embedder or embedder_for_workspace(mode.user.workspace)
        report += consolidate_mode(user=mode.user, mode=mode, embedder=chosen, now=now)
    return report
