"""The untrusted layers of an assembled context: what each one reads, decrypted into entries.

Every function here reads one (user, mode) scope and returns plain `Entry` values; nothing
here fences, budgets or audits (queries/context.py does, once for the whole context). `using`
names the database to read: queries/context.py picks the user's (memoryhub/replicas.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Case, IntegerField, Value, When

from memoryhub import text_patterns
from memoryhub.actors import Actor
from memoryhub.graph.queries import graph_insights, insight_lines
from memoryhub.keyring import UserCipher
from memoryhub.knowledge.queries import search_knowledge
from memoryhub.memory_rows import MemoryItem, decrypt_memory, memories_of, recallable_sql
from memoryhub.message_rows import open_message
from memoryhub.models import (
    Confidence,
    Importance,
    Memory,
    MemoryKind,
    MemoryQuerySet,
    MemoryStatus,
    Message,
    Mode,
    Session,
    User,
    Workspace,
)
from memoryhub.queries.as_of import items_as_of, known_at
from memoryhub.queries.recall import LOADED_FIELDS, LOADED_SQL, UNREAD_COLUMNS
from memoryhub.sealed_tables import SESSION_TABLE, WORKING_MEMORY_FIELD
from memoryhub.vector_search import cosine_distance

PROFILE_KINDS = (MemoryKind.FACT, MemoryKind.PREFERENCE, MemoryKind.PROCEDURE)
PROFILE_LIMIT = 20
RECENT_SUMMARIES = 3
OPEN_ITEMS_LIMIT = 10
# See services.compaction.compaction_key: a thread's compaction summary is keyed by its session.
COMPACTION_KEY_PREFIX = "compaction:"
_IMPORTANCE_RANK = Case(
    When(importance=Importance.CRITICAL, then=Value(0)),
    When(importance=Importance.HIGH, then=Value(1)),
    When(importance=Importance.NORMAL, then=Value(2)),
    default=Value(3),
    output_field=IntegerField(),
)
# _IMPORTANCE_RANK in SQL, for the hand-written statements below.
_IMPORTANCE_RANK_SQL = "CASE m.importance WHEN %s THEN 0 WHEN %s THEN 1 WHEN %s THEN 2 ELSE 3 END"
_IMPORTANCE_RANK_PARAMS = (
    Importance.CRITICAL.value,
    Importance.HIGH.value,
    Importance.NORMAL.value,
)
_QUESTION_WORDS = frozenset(
    str.split(
        "who whom whose what which when where why how is are was were do does did can could "
        "should would will shall may might have has had am any "
        "qui que quoi quel quelle quels quelles quand ou comment pourquoi combien est-ce"
    )
)
_FIRST_WORD = text_patterns.compile(r"[\w'-]+", text_patterns.UNICODE)


@dataclass(frozen=True)
class Entry:
    """One recalled item: its stored (untrusted) text, and the memory it came from, if any."""

    key: str
    text: str
    memory_id: UUID | None = None


def memory_line(item: MemoryItem) -> str:
    """How a memory reads inside a fence: its date and kind, then its text."""
    when = item.occurred_at or item.created_at
    return f"({when:%Y-%m-%d}, {item.kind.replace('_', ' ')}) {item.content}"


def memory_entry(item: MemoryItem) -> Entry:
    return Entry(key=f"memory:{item.id}", text=memory_line(item), memory_id=item.id)


def _recallable(queryset: MemoryQuerySet, as_of: datetime | None) -> MemoryQuerySet:
    """What may be injected: now, or (with `as_of`) then, as far as the rows can tell."""
    if as_of is None:
        return queryset.recallable()
    return (
        known_at(queryset, as_of)
        .exclude(status=MemoryStatus.CANDIDATE)
        .exclude(confidence=Confidence.CANDIDATE)
    )


def _recallable_rows(
    *,
    user: User,
    mode: Mode,
    using: str,
    condition: str,
    params: Sequence[Any],
    order: str,
    limit: int,
) -> list[Memory]:
    """The user's recallable memories in the mode that meet `condition` (SQL over `m`), ordered.

    The layers read now (no `as_of`) through this hand-written statement: the ORM's compile of
    each layer's query cost about as much Python as the rest of the layer (issue 34). Like
    `memories_of`, it is scoped by owner and mode first (`recallable_sql`); `order` may hold
    parameters after those of `condition`, in `params`.
    """
    scope_sql, scope_params = recallable_sql(user=user, mode=mode)
    sql = f"SELECT {LOADED_SQL} {scope_sql} AND {condition} ORDER BY {order} LIMIT %s"
    with connections[using].cursor() as cursor:
        cursor.execute(sql, [*scope_params, *params, limit])
        return [Memory.from_db(using, LOADED_FIELDS, row) for row in cursor.fetchall()]


def _latest_profile_rows(
    *, user: User, mode: Mode, importances: Sequence[Importance], using: str
) -> list[Memory]:
    """The profile's rows: recallable, of a profile kind, most important first, then newest.

    The latest PROFILE_LIMIT of each kind and importance, each read backwards along the heavy
    user's own profile index (mode, status, kind, importance, created_at; built with their
    vector index, services/nearest_index.py), then merged: their 100,000 facts are not all read
    and sorted to find the newest 20 (issue 34). A smaller user's are sorted: twelve branches
    cost more to plan than 1,000 rows to sort.
    """
    scope_sql, scope_params = recallable_sql(user=user, mode=mode)
    # One branch per kind and importance, each with its own constants: a join over a list of
    # them left the planner blind to which, and it read all the user's rows once per pair.
    branch = (
        f"(SELECT m.* {scope_sql} AND m.kind = %s AND m.importance = %s"
        " ORDER BY m.created_at DESC, m.id DESC LIMIT %s)"
    )
    pairs = [(str(kind), str(importance)) for kind in PROFILE_KINDS for importance in importances]
    # Our own SQL fragments only; every value is a parameter.
    sql = f"""
        SELECT {LOADED_SQL} FROM ({" UNION ALL ".join(branch for _ in pairs)}) AS m
        ORDER BY {_IMPORTANCE_RANK_SQL}, m.created_at DESC, m.id DESC LIMIT %s
    """  # noqa: S608
    params = [
        *(value for pair in pairs for value in (*scope_params, *pair, PROFILE_LIMIT)),
        *_IMPORTANCE_RANK_PARAMS,
        PROFILE_LIMIT,
    ]
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        return [Memory.from_db(using, LOADED_FIELDS, row) for row in cursor.fetchall()]


def _open(
    rows: Iterable[Memory], cipher: UserCipher, as_of: datetime | None, using: str
) -> list[MemoryItem]:
    items = [decrypt_memory(row, cipher) for row in rows]
    if as_of is None:
        return items
    return items_as_of(items, cipher=cipher, as_of=as_of, using=using)


def profile_items(
    *,
    user: User,
    mode: Mode,
    cipher: UserCipher,
    is_session_start: bool,
    using: str = DEFAULT_DB_ALIAS,
    as_of: datetime | None = None,
    is_heavy: bool = False,
) -> list[MemoryItem]:
    """Facts, preferences and procedures, most important first.

    At session start the whole profile (capped); later only the critical items, which hold
    what must never be forgotten (an allergy, a hard constraint). The rest arrives through the
    relevant-memories layer when the message calls for it. `is_heavy`: the user has their own
    indexes (services/nearest_index.py), and too many memories to sort them all.
    """
    if as_of is None and is_heavy:
        importances = list(Importance) if is_session_start else [Importance.CRITICAL]
        rows: Iterable[Memory] = _latest_profile_rows(
            user=user, mode=mode, importances=importances, using=using
        )
        return _open(rows, cipher, as_of, using)
    if as_of is None:
        critical = "" if is_session_start else " AND m.importance = %s"
        rows = _recallable_rows(
            user=user,
            mode=mode,
            using=using,
            condition=f"m.kind = ANY(%s){critical}",
            params=[
                [str(kind) for kind in PROFILE_KINDS],
                *([] if is_session_start else [Importance.CRITICAL.value]),
                *_IMPORTANCE_RANK_PARAMS,
            ],
            order=f"{_IMPORTANCE_RANK_SQL}, m.created_at DESC, m.id DESC",
            limit=PROFILE_LIMIT,
        )
        return _open(rows, cipher, as_of, using)
    queryset = (
        memories_of(user=user, mode=mode)
        .using(using)
        .defer(*UNREAD_COLUMNS)
        .of_kind(*PROFILE_KINDS)
    )
    queryset = _recallable(queryset, as_of)
    if not is_session_start:
        queryset = queryset.filter(importance=Importance.CRITICAL)
    rows = queryset.annotate(importance_rank=_IMPORTANCE_RANK).order_by(
        "importance_rank", "-created_at", "-id"
    )[:PROFILE_LIMIT]
    return _open(rows, cipher, as_of, using)


def recent_summaries(
    *,
    user: User,
    mode: Mode,
    cipher: UserCipher,
    session: Session | None,
    using: str = DEFAULT_DB_ALIAS,
    as_of: datetime | None = None,
) -> list[MemoryItem]:
    """The summaries of the last few sessions (never this one's, never a thread compaction)."""
    if as_of is None:
        # A NULL session or key is neither this session's nor a compaction's (as the ORM's
        # exclude reads it).
        this_session = "" if session is None else " AND m.session_id IS DISTINCT FROM %s"
        rows: Iterable[Memory] = _recallable_rows(
            user=user,
            mode=mode,
            using=using,
            condition=(
                "m.kind = %s AND (m.idempotency_key IS NULL OR m.idempotency_key NOT LIKE %s)"
                f"{this_session}"
            ),
            params=[
                MemoryKind.SESSION_SUMMARY.value,
                f"{COMPACTION_KEY_PREFIX}%",
                *([] if session is None else [session.pk]),
            ],
            order="m.created_at DESC, m.id DESC",
            limit=RECENT_SUMMARIES,
        )
        return _open(rows, cipher, as_of, using)
    queryset = _recallable(
        memories_of(user=user, mode=mode)
        .using(using)
        .defer(*UNREAD_COLUMNS)
        .of_kind(MemoryKind.SESSION_SUMMARY)
        .exclude(idempotency_key__startswith=COMPACTION_KEY_PREFIX),
        as_of,
    )
    if session is not None:
        queryset = queryset.exclude(session_id=session.pk)
    rows = queryset.order_by("-created_at", "-id")[:RECENT_SUMMARIES]
    return _open(rows, cipher, as_of, using)


def open_items(
    *,
    user: User,
    mode: Mode,
    cipher: UserCipher,
    using: str = DEFAULT_DB_ALIAS,
    as_of: datetime | None = None,
) -> list[MemoryItem]:
    """What is still open for the user in the mode, most important first."""
    if as_of is None:
        rows: Iterable[Memory] = _recallable_rows(
            user=user,
            mode=mode,
            using=using,
            condition="m.kind = %s",
            params=[MemoryKind.OPEN_ITEM.value, *_IMPORTANCE_RANK_PARAMS],
            order=f"{_IMPORTANCE_RANK_SQL}, m.created_at DESC, m.id DESC",
            limit=OPEN_ITEMS_LIMIT,
        )
        return _open(rows, cipher, as_of, using)
    queryset = memories_of(user=user, mode=mode).using(using).defer(*UNREAD_COLUMNS)
    rows = (
        _recallable(queryset, as_of)
        .of_kind(MemoryKind.OPEN_ITEM)
        .annotate(importance_rank=_IMPORTANCE_RANK)
        .order_by("importance_rank", "-created_at", "-id")[:OPEN_ITEMS_LIMIT]
    )
    return _open(rows, cipher, as_of, using)


def compaction_summary(
    *, user: User, mode: Mode, cipher: UserCipher, session: Session, using: str = DEFAULT_DB_ALIAS
) -> MemoryItem | None:
    """The summary standing in for this thread's compacted (older) messages, if any."""
    row = (
        memories_of(user=user, mode=mode)
        .using(using)
        .defer(*UNREAD_COLUMNS)
        .recallable()
        .filter(idempotency_key=f"{COMPACTION_KEY_PREFIX}{session.pk}")
        .first()
    )
    return decrypt_memory(row, cipher) if row is not None else None


@dataclass(frozen=True)
class ThreadMessages:
    """The thread's last messages (oldest first) and the recalled older ones (in seq order)."""

    recent: tuple[Entry, ...]
    recalled: tuple[Entry, ...]
    # No earlier message in the thread than the one being answered.
    is_session_start: bool


def _message_text(message: Message, cipher: UserCipher) -> str:
    return open_message(message, cipher)


def _message_entry(message: Message, text: str) -> Entry:
    return Entry(key=f"message:{message.seq}", text=f"{message.role}: {text}")


def thread_messages(
    *,
    session: Session,
    cipher: UserCipher,
    message: str,
    message_vector: Sequence[float],
    vector_model: str,
    last_messages: int,
    top_k: int,
    message_range: int,
    using: str = DEFAULT_DB_ALIAS,
) -> ThreadMessages:
    """The last N messages verbatim, plus the top-K older ones most similar to the message.

    Each recalled message brings `message_range` neighbours on each side. The current message,
    if the agent already stored it, is left out: it is the user's own block. Compacted messages
    are never among the last N (their summary stands in) but may be recalled by similarity.
    """
    messages = session.messages.using(using)
    # One more than asked: the newest may be the current message itself.
    latest = list(
        messages.filter(is_compacted=False)
        .defer("embedding")
        .order_by("-seq")[: max(last_messages, 1) + 1]
    )
    texts = {row.seq: _message_text(row, cipher) for row in latest}
    excluded: set[int] = set()
    if latest and latest[0].role == Message.Role.USER and texts[latest[0].seq] == message.strip():
        excluded.add(latest[0].seq)
        latest = latest[1:]
    recent_rows = latest[:last_messages]
    excluded.update(row.seq for row in recent_rows)
    recalled: list[Entry] = []
    if top_k > 0:
        older = messages.exclude(embedding=None).exclude(seq__in=excluded)
        if recent_rows:
            older = older.filter(seq__lt=recent_rows[-1].seq)
        hits = list(
            older.annotate(distance=cosine_distance(message_vector, model=vector_model))
            .order_by("distance", "seq")
            .values_list("seq", flat=True)[:top_k]
        )
        wanted = {
            seq + offset
            for seq in hits
            for offset in range(-message_range, message_range + 1)
            if seq + offset > 0
        } - excluded
        if recent_rows:
            wanted = {seq for seq in wanted if seq < recent_rows[-1].seq}
        if wanted:
            rows = messages.filter(seq__in=wanted).defer("embedding").order_by("seq")
            recalled = [_message_entry(row, _message_text(row, cipher)) for row in rows]
    return ThreadMessages(
        recent=tuple(_message_entry(row, texts[row.seq]) for row in reversed(recent_rows)),
        recalled=tuple(recalled),
        is_session_start=not latest,
    )


def working_memory_lines(*, session: Session, cipher: UserCipher, now: datetime) -> list[str]:
    """The session's working memory as `key: value` lines; empty when unset or expired."""
    expires_at = session.working_memory_expires_at
    if session.working_memory_ciphertext is None or (expires_at is not None and expires_at <= now):
        return []
    data = cipher.decrypt_json(
        session.working_memory_ciphertext,
        table=SESSION_TABLE,
        row_id=session.pk,
        field=WORKING_MEMORY_FIELD,
    )
    return [
        f"{key}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
        for key, value in sorted(data.items())
    ]


def knowledge_passages(
    *,
    workspace: Workspace,
    query: str,
    query_vector: Sequence[float],
    vector_model: str,
    k: int,
) -> list[Entry]:
    """Published passages of the workspace knowledge base that answer the query."""
    passages = search_knowledge(
        workspace=workspace, query=query, vector=query_vector, vector_model=vector_model, k=k
    )
    # Reviewed workspace text, yet still data: a document may quote anything.
    return [
        Entry(key=f"knowledge:{passage.chunk_id}", text=f"({passage.title}) {passage.text}")
        for passage in passages
    ]


def graph_insight_entries(*, workspace: Workspace, actor: Actor) -> list[Entry]:
    """The workspace graph's popular items and unanswered questions; none below its threshold."""
    insights = graph_insights(workspace, actor=actor)
    if not insights.enabled:
        return []
    return [Entry(key=f"graph:{n}", text=line) for n, line in enumerate(insight_lines(insights))]


def is_question(message: str) -> bool:
    """Whether a message asks something (English or French): it then warrants knowledge."""
    text = message.strip()
    if text.endswith("?"):
        return True
    first = _FIRST_WORD.search(text.casefold())
    return first is not None and first.group() in _QUESTION_WORDS
