"""Choose what a forget removes: memories, messages, working memory, journal notes, history."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db.models import Q
from django.utils.translation import gettext_noop

from memoryhub.embeddings import Embedder, calibrated_cosine
from memoryhub.errors import InvalidInputError
from memoryhub.keyring import UserCipher, tokenize
from memoryhub.memory_rows import open_payload, open_version_content
from memoryhub.message_rows import open_message
from memoryhub.models import (
    JournalEntry,
    Memory,
    MemoryKind,
    MemoryVersion,
    Message,
    Mode,
    Session,
    User,
)
from memoryhub.sealed_tables import (
    JOURNAL_TABLE,
    SESSION_TABLE,
    WORKING_MEMORY_FIELD,
)
from memoryhub.services.summaries import COMMON_WORDS, COMPACTION_GENERATOR, THEME_GENERATOR
from memoryhub.vector_search import cosine_distance

# Cosine similarity above which a memory or message counts as "about" a forget query.
QUERY_MIN_SIMILARITY = 0.5


@dataclass(frozen=True)
class ForgetSelector:
    """What to forget; the criteria combine with AND (ids within a period, topic in a period)."""

    memory_ids: Sequence[UUID | str] = ()
    since: datetime | None = None
    until: datetime | None = None
    topic: str | None = None
    query: str | None = None


@dataclass
class ForgetPlan:
    """Rows chosen for deletion, grown by the provenance cascade."""

    memory_ids: set[UUID] = field(default_factory=set)
    message_ids: set[UUID] = field(default_factory=set)
    working_memory_session_ids: set[UUID] = field(default_factory=set)
    journal_ids: set[UUID] = field(default_factory=set)
    # Ended sessions that started in the period: deleted once none of their messages is left.
    session_ids: set[UUID] = field(default_factory=set)
    version_ids: set[UUID] = field(default_factory=set)
    # Memories edited inside the period: restored to their content from before the period.
    restores: dict[UUID, MemoryVersion] = field(default_factory=dict)
    regenerate_ids: set[UUID] = field(default_factory=set)
    # Episodes a deleted theme had folded away: they come back so no fact is lost.
    reactivate_ids: set[UUID] = field(default_factory=set)
    evidence_lost: dict[UUID, int] = field(default_factory=dict)


def check_selector(selector: ForgetSelector) -> tuple[UUID, ...]:
    """Return the selector's memory ids as UUIDs; raise InvalidInputError if it is malformed."""
    try:
        ids = tuple(UUID(str(memory_id)) for memory_id in selector.memory_ids)
    except ValueError:
        raise InvalidInputError(gettext_noop("memory_ids must be UUIDs")) from None
    for name in ("since", "until"):
        moment = getattr(selector, name)
        if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
            raise InvalidInputError(
                gettext_noop("{name} must be a timezone-aware datetime"), name=name
            )
    if selector.since and selector.until and selector.since >= selector.until:
        raise InvalidInputError(gettext_noop("since must be before until"))
    for name in ("topic", "query"):
        value = getattr(selector, name)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InvalidInputError(gettext_noop("{name} must not be empty"), name=name)
    if not (ids or selector.since or selector.until or selector.topic or selector.query):
        raise InvalidInputError(
            gettext_noop("say what to forget: memory ids, a period, a topic or a query")
        )
    return ids


def _topic_words(topic: str) -> set[str]:
    words = set(tokenize(topic))
    # Function words ("my", "the", "de") would make every text match a topic.
    meaningful = {w for w in words if w not in COMMON_WORDS}
    return meaningful or words


def _mentions(text: str, words: set[str]) -> bool:
    return words <= set(tokenize(text))


def select_texts(
    selector: ForgetSelector, texts: Mapping[UUID, str], embedder: Embedder | None
) -> set[UUID]:
    """The ids whose text the selector's topic and query pick; the period is the caller's filter.

    For rows without a stored embedding (working memory, journal notes, versions, answers):
    the texts are embedded here, so a forget by query reaches them too.
    """
    chosen = set(texts)
    if selector.topic:
        words = _topic_words(selector.topic)
        chosen = {pk for pk in chosen if _mentions(texts[pk], words)}
    if selector.query and embedder is not None and chosen:
        chosen = _near_query(selector.query, [(pk, texts[pk]) for pk in sorted(chosen)], embedder)
    return chosen


def _near_query(query: str, texts: Sequence[tuple[UUID, str]], embedder: Embedder) -> set[UUID]:
    """The ids whose text is about the query, embedding MEMORYHUB_FORGET_EMBED_BATCH at a time.

    Only one batch of vectors is alive at once, whatever the number of texts.
    """
    query_vector = embedder.embed_query(query)
    batch = settings.MEMORYHUB_FORGET_EMBED_BATCH
    near: set[UUID] = set()
    for start in range(0, len(texts), batch):
        chunk = texts[start : start + batch]
        vectors = embedder.embed([text for _, text in chunk])
        near.update(
            pk
            for (pk, _), vector in zip(chunk, vectors, strict=True)
            if calibrated_cosine(_similarity(query_vector, vector), embedder.name)
            >= QUERY_MIN_SIMILARITY
        )
    return near


def _payload_mentions(payload: Mapping[str, Any], words: set[str]) -> bool:
    values: list[str] = []
    for key in ("topic", "topics", "tags", "theme"):
        value = payload.get(key)
        if isinstance(value, str):
            values.append(value)
        elif isinstance(value, list):
            values.extend(str(v) for v in value)
    return any(_mentions(value, words) for value in values)


def in_window(column: str, selector: ForgetSelector) -> Q:
    """The selector's period as a filter on one date-time column (empty without a period)."""
    window = Q()
    if selector.since is not None:
        window &= Q(**{f"{column}__gte": selector.since})
    if selector.until is not None:
        window &= Q(**{f"{column}__lt": selector.until})
    return window


def _select_memories(
    *,
    user: User,
    mode: Mode,
    selector: ForgetSelector,
    ids: tuple[UUID, ...],
    cipher: UserCipher,
    query_vector: list[float] | None,
    vector_model: str,
) -> set[UUID]:
    memories = Memory.objects.for_owner(user=user, mode=mode).filter(
        in_window("created_at", selector)
    )
    if ids:
        memories = memories.filter(pk__in=ids)
    if query_vector is not None:
        memories = memories.annotate(
            distance=cosine_distance(query_vector, model=vector_model)
        ).filter(distance__lt=1 - QUERY_MIN_SIMILARITY)
    if not selector.topic:
        chosen = set(memories.values_list("pk", flat=True))
        return chosen if query_vector is None else _drop_generated(chosen, memories, cipher)
    words = _topic_words(selector.topic)
    # The blind index answers "are all these words in the content" without decrypting it.
    blind = [cipher.blind_tokens(word)[0] for word in sorted(words)]
    chosen = set(memories.filter(blind_tokens__contains=blind).values_list("pk", flat=True))
    for row in memories.exclude(pk__in=chosen).exclude(payload_ciphertext=None):
        payload = open_payload(row, cipher)
        if _payload_mentions(payload, words):
            chosen.add(row.pk)
    return _drop_generated(chosen, memories, cipher)


def _drop_generated(chosen: set[UUID], memories: Any, cipher: UserCipher) -> set[UUID]:
    """Leave themes and compactions to the cascade: it rewrites them without the match.

    A theme quotes many episodes; deleting it because one of them mentions the topic would
    also drop what the others said.
    """
    summaries = memories.filter(
        pk__in=chosen, kind__in=[MemoryKind.THEME, MemoryKind.SESSION_SUMMARY]
    )
    return chosen - {
        row.pk
        for row in summaries
        if is_generated(row, cipher, THEME_GENERATOR)
        or is_generated(row, cipher, COMPACTION_GENERATOR)
    }


def _select_messages(
    *,
    user: User,
    mode: Mode,
    selector: ForgetSelector,
    cipher: UserCipher,
    query_vector: list[float] | None,
    vector_model: str,
) -> set[UUID]:
    messages = Message.objects.filter(session__user=user, session__mode=mode).filter(
        in_window("created_at", selector)
    )
    if query_vector is not None:
        messages = messages.annotate(
            distance=cosine_distance(query_vector, model=vector_model)
        ).filter(distance__lt=1 - QUERY_MIN_SIMILARITY)
    if not selector.topic:
        return set(messages.values_list("pk", flat=True))
    words = _topic_words(selector.topic)
    return {
        message.pk
        for message in messages.only("pk", "content_ciphertext")
        if _mentions(open_message(message, cipher), words)
    }


def _select_working_memory(
    *,
    user: User,
    mode: Mode,
    selector: ForgetSelector,
    cipher: UserCipher,
    embedder: Embedder | None,
) -> set[UUID]:
    sessions = (
        Session.objects.for_owner(user=user, mode=mode)
        .exclude(working_memory_ciphertext=None)
        .filter(in_window("working_memory_updated_at", selector))
    )
    if not (selector.topic or selector.query):
        return set(sessions.values_list("pk", flat=True))
    texts = {
        session.pk: cipher.decrypt(
            session.working_memory_ciphertext,  # type: ignore[arg-type]  # Non-null: excluded above.
            table=SESSION_TABLE,
            row_id=session.pk,
            field=WORKING_MEMORY_FIELD,
        )
        for session in sessions
    }
    return select_texts(selector, texts, embedder)


def _similarity(a: Sequence[float], b: Sequence[float]) -> float:
    # Embedder vectors are unit length: the dot product is the cosine similarity.
    return float(sum(x * y for x, y in zip(a, b, strict=True)))


def _select_journal(
    *,
    user: User,
    mode: Mode,
    selector: ForgetSelector,
    cipher: UserCipher,
    embedder: Embedder | None,
) -> set[UUID]:
    """The agent's journal notes about the user (what it surfaced) in the period, topic or query."""
    entries = JournalEntry.objects.filter(user=user, mode=mode).filter(
        in_window("created_at", selector)
    )
    if not (selector.topic or selector.query):
        return set(entries.values_list("pk", flat=True))
    texts = {entry.pk: _journal_text(entry, cipher) for entry in entries}
    return select_texts(selector, texts, embedder)


def _journal_text(entry: JournalEntry, cipher: UserCipher) -> str:
    """The note's summary and its key: an agent may put the topic in either."""
    summary = cipher.decrypt(
        entry.summary_ciphertext, table=JOURNAL_TABLE, row_id=entry.pk, field="summary"
    )
    if entry.key_ciphertext is None:
        return summary
    key = cipher.decrypt(entry.key_ciphertext, table=JOURNAL_TABLE, row_id=entry.pk, field="key")
    return f"{summary}\n{key}"


def _select_history(
    *,
    user: User,
    mode: Mode,
    selector: ForgetSelector,
    plan: ForgetPlan,
    cipher: UserCipher,
    embedder: Embedder | None,
) -> None:
    """Versions that hold forgotten content, and edits made inside the period to undo."""
    versions = MemoryVersion.objects.filter(memory__user=user, memory__mode=mode).exclude(
        memory_id__in=plan.memory_ids
    )
    if selector.since or selector.until:
        # An edit inside the period is forgotten by restoring the content from before it:
        # the oldest version written inside the period holds exactly that content.
        for version in versions.filter(in_window("created_at", selector)).order_by("-created_at"):
            plan.version_ids.add(version.pk)
            plan.restores[version.memory_id] = version
    if not (selector.topic or selector.query):
        return
    texts = {
        v.pk: open_version_content(v, cipher) for v in versions.exclude(pk__in=plan.version_ids)
    }
    plan.version_ids.update(select_texts(selector, texts, embedder))


def is_generated(memory: Memory, cipher: UserCipher, generator: str) -> bool:
    payload = open_payload(memory, cipher)
    return isinstance(payload, dict) and payload.get("generated_by") == generator


def plan_forget(
    *,
    user: User,
    mode: Mode,
    selector: ForgetSelector,
    cipher: UserCipher,
    embedder: Embedder,
) -> ForgetPlan:
    """Pick the rows the selector names (before the provenance cascade adds their dependants).

    Raises InvalidInputError for an empty or malformed selector.
    """
    ids = check_selector(selector)
    query_vector = embedder.embed_query(selector.query) if selector.query else None
    plan = ForgetPlan()
    plan.memory_ids = _select_memories(
        user=user,
        mode=mode,
        selector=selector,
        ids=ids,
        cipher=cipher,
        query_vector=query_vector,
        vector_model=embedder.name,
    )
    if ids:
        # Explicit ids name memories only; periods, topics and queries reach everything.
        return plan
    plan.message_ids = _select_messages(
        user=user,
        mode=mode,
        selector=selector,
        cipher=cipher,
        query_vector=query_vector,
        vector_model=embedder.name,
    )
    plan.working_memory_session_ids = _select_working_memory(
        user=user, mode=mode, selector=selector, cipher=cipher, embedder=embedder
    )
    if selector.since or selector.until:
        plan.session_ids = set(
            Session.objects.for_owner(user=user, mode=mode)
            .filter(in_window("started_at", selector), ended_at__isnull=False)
            .values_list("pk", flat=True)
        )
    plan.journal_ids = _select_journal(
        user=user, mode=mode, selector=selector, cipher=cipher, embedder=embedder
    )
    _select_history(
        user=user, mode=mode, selector=selector, plan=plan, cipher=cipher, embedder=embedder
    )
    return plan
