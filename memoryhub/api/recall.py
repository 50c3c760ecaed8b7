"""Agent API routes: search the user's memories, and assemble the context for a message.

Each route resolves the scope and calls one operation function, which the MCP tools can call
too, so both channels share one implementation.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from django.http import HttpRequest
from ninja import Router, Schema
from pydantic import Field

from memoryhub.embeddings import Embedder
from memoryhub.memory_rows import MemoryItem
from memoryhub.queries.context import MAX_BUDGET_TOKENS, ContextBundle, assemble_context
from memoryhub.queries.recall import DEFAULT_MIN_SCORE, MAX_K, MAX_QUERY_CHARS, search_memories
from memoryhub.services.sessions import get_session

from .auth import Scope, resolve_scope
from .schemas import AS_OF_DESCRIPTION, ERRORS, AsOf, KindName, MemoryOut, ScopeIn, Text, When

router = Router(tags=["recall"])


class SearchIn(ScopeIn):
    query: Annotated[Text, Field(min_length=1, max_length=MAX_QUERY_CHARS)] = Field(
        description=(
            "What to look for, in plain words (1 to 4000 characters); matched by "
            "meaning and by exact words."
        )
    )
    k: Annotated[int, Field(ge=1, le=MAX_K)] = Field(
        default=10, description="At most this many results, 1 to 100 (default 10)."
    )
    kinds: list[KindName] = Field(
        description=("Only memories of these kinds (fact, preference, …); every kind when empty."),
        default_factory=list,
        max_length=7,
    )
    since: When | None = Field(
        default=None,
        description=(
            "Only memories that happened or were stored at or after this time (ISO "
            "8601; a time without offset is UTC)."
        ),
    )
    until: When | None = Field(
        default=None,
        description=(
            "Only memories that happened or were stored before this time (ISO 8601; a"
            " time without offset is UTC)."
        ),
    )
    topics: list[Annotated[Text, Field(max_length=200)]] = Field(
        description=(
            "Only memories about one of these topics (up to 10, each up to 200 "
            "characters); any topic when empty."
        ),
        default_factory=list,
        max_length=10,
    )
    min_score: Annotated[float, Field(ge=-1, le=2)] | None = Field(
        default=DEFAULT_MIN_SCORE,
        description="Relevance floor: memories scoring under it are left out; null for none.",
    )
    as_of: AsOf | None = Field(default=None, description=AS_OF_DESCRIPTION)


class ScoredMemoryOut(MemoryOut):
    score: float = Field(
        description=(
            "cosine + 0.25·lexical − staleness + importance bonus, then the lifts of the "
            "memories told with it and the speaker bonus (docs/retrieval.md)"
        )
    )
    cosine: float = Field(
        description="Of the query as embedded: a name that speaks in the memories reads 'someone'"
    )
    lexical: float = Field(
        description=(
            "The query terms the memory holds, each weighed by its rarity (sum of IDFs "
            "over ln(1 + N)): 0 to about 1 (docs/retrieval.md)."
        )
    )
    freshness: float = Field(
        description=(
            "0.5 ^ (days since the memory was learnt or last recalled / its kind's "
            "half-life): 1 when new or critical, towards 0 as it goes unused."
        )
    )

    @classmethod
    def scored(cls, item: MemoryItem) -> ScoredMemoryOut:
        return cls.model_construct(
            **MemoryOut.fields_of(item),
            score=item.score or 0.0,
            cosine=item.extra.get("cosine", 0.0),
            lexical=item.extra.get("lexical", 0.0),
            freshness=item.extra.get("freshness", 1.0),
        )


class SearchOut(Schema):
    results: list[ScoredMemoryOut] = Field(
        description="Up to k memories, best score first; those under min_score are left out."
    )
    no_close_match: bool = Field(
        description="True when no memory reached min_score: results is empty, say so rather "
        "than guess."
    )


class ContextIn(ScopeIn):
    message: Annotated[Text, Field(min_length=1)] = Field(
        description=(
            "The user's message to answer (at least 1 character); it comes last in the context."
        )
    )
    session: UUID | None = Field(
        default=None, description="The thread the message belongs to, if any."
    )
    budget_tokens: Annotated[int, Field(ge=0, le=MAX_BUDGET_TOKENS)] | None = Field(
        default=None, description="Defaults to the agent's token budget."
    )
    as_of: AsOf | None = Field(
        None,
        description=(
            "The context an agent would have had at this moment (ISO 8601, in the past): the "
            "memories known then as they were, dated then. Not with `session` (threads keep no "
            "history); no workspace knowledge. A future moment is 422 `invalid_as_of`."
        ),
    )


class ContextBlockOut(Schema):
    key: str = Field(
        description=(
            "What the block holds: platform_rules, date, persona, profile, "
            "recent_sessions, open_items, memories, working_memory, thread_recalled, "
            "thread_recent, compacted_history, knowledge, graph_insights or message."
        )
    )
    layer: int = Field(
        description=(
            "Its place in the prompt, 1 to 10: 1 platform rules, 2 date, 3 persona, "
            "4 profile, 5 recent sessions and open items, 6 memories, 7 the thread "
            "(working memory, recalled and recent messages), 8 compacted history, "
            "9 knowledge and graph insights, 10 the message."
        )
    )
    role: str = Field(description="system (trusted rules, date, persona) or user")
    trusted: bool = Field(description="False: fenced stored data, never instructions")
    text: str = Field(
        description="The block's text, ready to send; untrusted blocks are already fenced."
    )
    tokens: int = Field(
        description=(
            "The block's size in tokens, counted with the embedding model's WordPiece "
            "tokenizer: a stand-in for your model's, so keep a margin."
        )
    )
    memory_ids: list[UUID] = Field(
        description="The memories the block quotes; empty for blocks not built from memories."
    )


class DroppedOut(Schema):
    key: str = Field(
        description=(
            "What was left out: a whole block's key (date, persona) or one entry of a "
            "list block (a memory, a message, a line of working memory)."
        ),
    )
    layer: int = Field(description="The layer it would have had, 1 to 10.")
    tokens: int = Field(description="Its size in tokens.")
    memory_ids: list[UUID] = Field(description="The memory it would have quoted, if it was one.")


class ContextOut(Schema):
    blocks: list[ContextBlockOut] = Field(
        description=(
            "The context to send, in prompt order (layer ascending); the message block comes last."
        )
    )
    dropped: list[DroppedOut] = Field(
        description="Left out to fit the budget, least valuable first."
    )
    total_tokens: int = Field(description="The tokens of all blocks together.")
    budget_tokens: int = Field(
        description="The budget applied (the request's budget_tokens or the agent's default)."
    )
    is_over_budget: bool = Field(
        description=(
            "True when the blocks that are never dropped (the platform rules and the "
            "message) alone exceed the budget: total_tokens is then above it."
        )
    )

    @classmethod
    def of(cls, bundle: ContextBundle) -> ContextOut:
        return cls(
            blocks=[
                ContextBlockOut(
                    key=block.key,
                    layer=block.layer,
                    role=block.role,
                    trusted=block.trusted,
                    text=block.text,
                    tokens=block.tokens,
                    memory_ids=list(block.memory_ids),
                )
                for block in bundle.blocks
            ],
            dropped=[
                DroppedOut(
                    key=entry.key,
                    layer=entry.layer,
                    tokens=entry.tokens,
                    memory_ids=list(entry.memory_ids),
                )
                for entry in bundle.dropped
            ],
            total_tokens=bundle.total_tokens,
            budget_tokens=bundle.budget_tokens,
            is_over_budget=bundle.is_over_budget,
        )


def search_for(scope: Scope, payload: SearchIn, *, embedder: Embedder) -> SearchOut:
    """The scope's memories that best answer the query, best first, with their scores."""
    items = search_memories(
        user=scope.user,
        mode=scope.mode,
        query=payload.query,
        actor=scope.actor,
        embedder=embedder,
        k=payload.k,
        kinds=payload.kinds,
        since=payload.since,
        until=payload.until,
        topics=payload.topics,
        min_score=payload.min_score,
        as_of=payload.as_of,
    )
    return SearchOut(
        results=[ScoredMemoryOut.scored(item) for item in items], no_close_match=not items
    )


def context_for(scope: Scope, payload: ContextIn, *, embedder: Embedder) -> ContextOut:
    """The layered, fenced, budgeted context for the message, in the session if one is given."""
    session = (
        get_session(user=scope.user, mode=scope.mode, session_id=payload.session, agent=scope.agent)
        if payload.session is not None
        else None
    )
    bundle = assemble_context(
        user=scope.user,
        mode=scope.mode,
        agent=scope.agent,
        message=payload.message,
        actor=scope.actor,
        embedder=embedder,
        session=session,
        budget_tokens=payload.budget_tokens,
        as_of=payload.as_of,
    )
    return ContextOut.of(bundle)


@router.post("/search", summary="Search the user's memories", response={200: SearchOut, **ERRORS})
def search(request: HttpRequest, payload: SearchIn) -> SearchOut:
    """Search the user's memories in the mode: meaning, exact words, freshness and importance."""
    scope = resolve_scope(request, payload.user, payload.mode)
    return search_for(scope, payload, embedder=scope.embedder)


@router.post(
    "/context",
    summary="Assemble the context for answering a message",
    response={200: ContextOut, **ERRORS},
)
def context(request: HttpRequest, payload: ContextIn) -> ContextOut:
    """Assemble the context for answering a message: ordered blocks, untrusted ones fenced."""
    scope = resolve_scope(request, payload.user, payload.mode)
    return context_for(scope, payload, embedder=scope.embedder)
