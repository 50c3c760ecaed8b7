"""Context assembly: the ordered, fenced, budgeted blocks an agent puts before its model.

Layers (docs/retrieval.md): 1 platform rules, 2 date, 3 persona (system, trusted); 4 profile,
5 recent session summaries and open items, 6 memories relevant to the message, 7 the thread
(working memory, recalled older messages, last messages), 8 compacted history, 9 knowledge
passages and graph insights (user role, untrusted, fenced); then the user's message (10).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any
from uuid import UUID

from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder
from memoryhub.errors import InvalidAsOfError, InvalidInputError, NotFoundError
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.memory_rows import MemoryItem
from memoryhub.models import Agent, Mode, Session, User
from memoryhub.queries import context_layers as layers
from memoryhub.queries.as_of import check_as_of, items_as_of
from memoryhub.queries.context_budget import (
    MESSAGE_LAYER,
    ContextBlock,
    ContextBundle,
    DroppedEntry,
    ListLayer,
    TrustedBlock,
    fit_context,
)
from memoryhub.queries.context_layers import Entry
from memoryhub.queries.memories import is_memory_in_use
from memoryhub.queries.nearest import nearest_candidates
from memoryhub.queries.recall import decrypt_ranked, rank_memories
from memoryhub.queries.recall_filter import RecallFilter
from memoryhub.queries.speaker_cues import QueryCues, read_cues
from memoryhub.replicas import read_for_user
from memoryhub.services.access import record_memory_access
from memoryhub.services.write_checks import check_content
from memoryhub.telemetry import context_result_attributes, traced

__all__ = [
    "MESSAGE_LAYER",
    "ContextBlock",
    "ContextBundle",
    "DroppedEntry",
    "assemble_context",
]

# The layer numbers; the user's message comes last, as MESSAGE_LAYER (10).
RULES, DATE, PERSONA, PROFILE, SESSIONS, MEMORIES, THREAD, COMPACTED, KNOWLEDGE = range(1, 10)
# Layers 1, 2 and the message always come; an agent may switch the others off.
SWITCHABLE_LAYERS = frozenset({PERSONA, PROFILE, SESSIONS, MEMORIES, THREAD, COMPACTED, KNOWLEDGE})
# The layers built from the user's own memory and conversations: none with memory off.
USER_LAYERS = frozenset({PROFILE, SESSIONS, MEMORIES, THREAD, COMPACTED})
RELEVANT_MEMORIES_K = 8
# Precision first: a memory this far from the message, without a shared rare word, stays out.
MIN_RELEVANCE = 0.3
MAX_BUDGET_TOKENS = 200_000
KNOWLEDGE_K = 3
# What the budget keeps longest (higher first). Rules and the message are never dropped.
PRIORITY = {
    "date": 1000,
    "persona": 990,
    "working_memory": 900,
    "thread_recent": 800,
    "memories": 700,
    "profile": 600,
    "thread_recalled": 500,
    "compacted_history": 400,
    "open_items": 350,
    "recent_sessions": 300,
    "knowledge": 200,
    "graph_insights": 150,
}


@dataclass(frozen=True)
class AgentSettings:
    """The per-agent memory settings that context assembly reads."""

    persona: str
    last_messages: int
    recall_top_k: int
    recall_message_range: int
    is_working_memory_enabled: bool
    token_budget: int
    disabled_layers: frozenset[int]

    @classmethod
    def of(cls, agent: Agent | None) -> AgentSettings:
        """The agent's settings; a personal key (no agent) gets the Agent model's defaults."""
        agent = agent or Agent()
        return cls(
            persona=agent.persona.strip(),
            last_messages=agent.last_messages,
            recall_top_k=agent.recall_top_k,
            recall_message_range=agent.recall_message_range,
            is_working_memory_enabled=agent.is_working_memory_enabled,
            token_budget=agent.token_budget,
            disabled_layers=_layer_numbers(agent.disabled_layers),
        )


def _layer_numbers(value: Any) -> frozenset[int]:
    # JSON an admin edits by hand: [6, 9] or ["6", "9"]; anything else is ignored.
    if not isinstance(value, list):
        return frozenset()
    return frozenset(int(v) for v in value if str(v).isdigit()) & SWITCHABLE_LAYERS


def _date_text(now: datetime) -> str:
    return f"Current date and time: {now:%A %d %B %Y, %H:%M} UTC."


def _list(layer: int, key: str, label: str, entries: Sequence[Entry], **kwargs: Any) -> ListLayer:
    return ListLayer(key, layer, label, tuple(entries), PRIORITY[key], **kwargs)


def _memories(layer: int, key: str, label: str, items: Sequence[MemoryItem]) -> ListLayer:
    return _list(layer, key, label, [layers.memory_entry(item) for item in items])


@dataclass(frozen=True)
class _LayerInputs:
    """What the user's own layers (4 to 8) are built from."""

    user: User
    mode: Mode
    session: Session | None
    message: str
    # The message's cues and the embedding of their text: the message with the names of the
    # people who speak in the user's memories replaced (speaker_cues.read_cues).
    cues: QueryCues
    vector: list[float]
    # The model that made `vector`: stored vectors of another model are not compared with it.
    vector_model: str
    cipher: UserCipher
    now: datetime
    agent_settings: AgentSettings
    enabled: frozenset[int]
    # What was known then (as_of.py), or None for now.
    as_of: datetime | None = None


def _user_layers(inputs: _LayerInputs, using: str) -> tuple[list[ListLayer], bool]:
    """Layers 4 to 8, read from one database; and whether the message starts the session."""
    user, mode, session, cipher = inputs.user, inputs.mode, inputs.session, inputs.cipher
    agent_settings, enabled = inputs.agent_settings, inputs.enabled
    lists: list[ListLayer] = []
    thread = None
    if session is not None and THREAD in enabled:
        thread = layers.thread_messages(
            session=session,
            cipher=cipher,
            message=inputs.message,
            message_vector=inputs.vector,
            vector_model=inputs.vector_model,
            last_messages=agent_settings.last_messages,
            top_k=agent_settings.recall_top_k,
            message_range=agent_settings.recall_message_range,
            using=using,
        )
    if session is None:
        is_start = True
    elif thread is not None:
        is_start = thread.is_session_start
    else:  # Thread layer off: count the messages, the current one perhaps among them.
        is_start = session.messages.using(using).count() <= 1
    shown: list[UUID] = []

    # Whether the user is heavy (their own index), asked once for the profile and the ranking.
    nearest = (
        nearest_candidates(
            user=user, mode=mode, recall_filter=RecallFilter(as_of=inputs.as_of), using=using
        )
        if PROFILE in enabled or MEMORIES in enabled
        else None
    )
    if PROFILE in enabled:
        profile = layers.profile_items(
            user=user,
            mode=mode,
            cipher=cipher,
            is_session_start=is_start,
            using=using,
            as_of=inputs.as_of,
            is_heavy=nearest is not None,
        )
        lists.append(_memories(PROFILE, "profile", "profile", profile))
        shown += [item.id for item in profile]
    if SESSIONS in enabled and is_start:
        summaries = layers.recent_summaries(
            user=user, mode=mode, cipher=cipher, session=session, using=using, as_of=inputs.as_of
        )
        items = layers.open_items(
            user=user, mode=mode, cipher=cipher, using=using, as_of=inputs.as_of
        )
        lists.append(_memories(SESSIONS, "recent_sessions", "session-summaries", summaries))
        lists.append(_memories(SESSIONS, "open_items", "open-items", items))
        shown += [item.id for item in (*summaries, *items)]
    compacted = None
    if session is not None and COMPACTED in enabled:
        compacted = layers.compaction_summary(
            user=user, mode=mode, cipher=cipher, session=session, using=using
        )
        if compacted is not None:
            shown.append(compacted.id)
    if MEMORIES in enabled:
        ranked = rank_memories(
            user=user,
            mode=mode,
            query=inputs.message,
            query_vector=inputs.vector,
            vector_model=inputs.vector_model,
            cues=inputs.cues,
            cipher=cipher,
            k=RELEVANT_MEMORIES_K,
            recall_filter=RecallFilter(exclude_ids=tuple(shown), as_of=inputs.as_of),
            now=inputs.now,
            using=using,
            nearest=nearest,
        )
        relevant = [r for r in ranked if r.score >= MIN_RELEVANCE]
        items = decrypt_ranked(relevant, cipher)
        if inputs.as_of is not None:
            items = items_as_of(items, cipher=cipher, as_of=inputs.as_of, using=using)
        lists.append(_memories(MEMORIES, "memories", "memories", items))
    if thread is not None and session is not None:
        if agent_settings.is_working_memory_enabled:
            lines = layers.working_memory_lines(session=session, cipher=cipher, now=inputs.now)
            entries = [Entry(key=f"working_memory:{n}", text=line) for n, line in enumerate(lines)]
            lists.append(_list(THREAD, "working_memory", "working-memory", entries))
        lists.append(_list(THREAD, "thread_recalled", "thread-recalled", thread.recalled))
        # The newest message is worth the most: first in value, last on the page.
        newest_first = list(reversed(thread.recent))
        lists.append(
            _list(THREAD, "thread_recent", "thread-recent", newest_first, is_reversed_on_page=True)
        )
    if compacted is not None:
        lists.append(_memories(COMPACTED, "compacted_history", "compacted-history", [compacted]))
    return lists, is_start


def _check_session(*, session: Session | None, user: User, mode: Mode, agent: Agent | None) -> None:
    if session is not None and (
        session.user_id != user.pk
        or session.mode_id != mode.pk
        or (agent is not None and session.agent_id not in (None, agent.pk))
    ):
        # Security invariant: another user's, mode's or agent's thread does not exist for you.
        raise NotFoundError(gettext_noop("session not found"))


def _trusted_blocks(
    *, user: User, agent_settings: AgentSettings, enabled: frozenset[int], now: datetime
) -> list[TrustedBlock]:
    """Layers 1 to 3: the platform's rules, the date, the agent's persona."""
    trusted = [
        TrustedBlock("platform_rules", RULES, user.workspace.platform_rules, 0, is_droppable=False),
        TrustedBlock("date", DATE, _date_text(now), PRIORITY["date"]),
    ]
    if PERSONA in enabled and agent_settings.persona:
        trusted.append(
            TrustedBlock("persona", PERSONA, agent_settings.persona, PRIORITY["persona"])
        )
    return trusted


def _workspace_layers(
    inputs: _LayerInputs, *, agent: Agent | None, actor: Actor, is_start: bool
) -> list[ListLayer]:
    """Layer 9, read from the primary like any other workspace data: knowledge, graph insights."""
    if KNOWLEDGE not in inputs.enabled:
        return []
    workspace = inputs.user.workspace
    lists = []
    if layers.is_question(inputs.message):
        passages = layers.knowledge_passages(
            workspace=workspace,
            query=inputs.message,
            query_vector=inputs.vector,
            vector_model=inputs.vector_model,
            k=KNOWLEDGE_K,
        )
        lists.append(_list(KNOWLEDGE, "knowledge", "knowledge", passages))
    # Security invariant: the insights hold other users' (scrubbed) questions. They are for
    # the workspace's agents; a personal key acts for one user and never gets them.
    if is_start and agent is not None:
        insights = layers.graph_insight_entries(workspace=workspace, actor=actor)
        lists.append(_list(KNOWLEDGE, "graph_insights", "graph-insights", insights))
    return lists


@traced("assemble_context", result_attributes=context_result_attributes)
def assemble_context(
    *,
    user: User,
    mode: Mode,
    agent: Agent | None,
    message: str,
    actor: Actor,
    embedder: Embedder,
    session: Session | None = None,
    budget_tokens: int | None = None,
    as_of: datetime | None = None,
) -> ContextBundle:
    """Build the layered context for answering `message`, fenced and fitted to the budget.

    With `as_of`, the context an agent would have had then (docs/history.md): the memories
    known then as they were, dated then; no thread (a session is refused) and no workspace
    knowledge, which keep no history.

    Raises InvalidInputError (empty or oversized message, bad budget), InvalidAsOfError,
    ContentTooLargeError, and NotFoundError when the session belongs to another user, mode
    or agent.
    """
    message = check_content(message, field="message")
    as_of = check_as_of(as_of)
    if as_of is not None and session is not None:
        raise InvalidAsOfError(
            gettext_noop("as_of cannot be combined with a session: threads keep no history")
        )
    agent_settings = AgentSettings.of(agent)
    budget = agent_settings.token_budget if budget_tokens is None else budget_tokens
    if not 0 <= budget <= MAX_BUDGET_TOKENS:
        raise InvalidInputError(
            gettext_noop("budget_tokens must be between 0 and {limit}"),
            limit=MAX_BUDGET_TOKENS,
        )
    _check_session(session=session, user=user, mode=mode, agent=agent)
    enabled = SWITCHABLE_LAYERS - agent_settings.disabled_layers
    if not is_memory_in_use(mode=mode, actor=actor):
        enabled -= USER_LAYERS  # The user turned memory off in this mode.
    if as_of is not None:
        enabled -= {KNOWLEDGE}  # Workspace documents and graph insights keep no history.
    now = as_of or timezone.now()
    cipher = cipher_for(user)
    cues = QueryCues(text=message)
    if MEMORIES in enabled:
        cues = read_for_user(
            user.pk,
            lambda using: read_cues(
                user=user, mode=mode, query=message, cipher=cipher, using=using
            ),
        )
    # One embedding serves every layer. A speaker's name is matched by who said each memory, so
    # it leaves the text; embedding the message as it is too, for the thread and the knowledge
    # layers, would cost every such request another query embedding (~5 ms here).
    inputs = _LayerInputs(
        user=user,
        mode=mode,
        session=session,
        message=message,
        vector=embedder.embed_query(cues.text),
        vector_model=embedder.name,
        cues=cues,
        cipher=cipher,
        now=now,
        agent_settings=agent_settings,
        enabled=enabled,
        as_of=as_of,
    )
    trusted = _trusted_blocks(user=user, agent_settings=agent_settings, enabled=enabled, now=now)
    # The user's own layers may come from a replica that has their last write.
    lists, is_start = read_for_user(user.pk, partial(_user_layers, inputs))
    lists += _workspace_layers(inputs, agent=agent, actor=actor, is_start=is_start)

    bundle = fit_context(trusted=trusted, lists=lists, message=message, budget=budget)
    used = [memory_id for block in bundle.blocks for memory_id in block.memory_ids]
    object_ids: list[object] = [*used, *([session.pk] if session is not None else [])]
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.CONTEXT_ASSEMBLE,
        object_ids=object_ids,
        mode=mode.slug,
    )
    if as_of is None:  # A look into the past is no use of a memory today.
        record_memory_access(used)
    return bundle
