"""Latency at scale and ingestion throughput: one real user among a million synthetic memories.

Needs Django and a database of its own (`manage.py bench_retrieval` makes one): it inserts
synthetic users and memories with random vectors, which must never reach a real database.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypedDict

import numpy as np
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.db import connection, transaction
from django.test import Client, override_settings
from tqdm import tqdm

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder
from memoryhub.keyring import cipher_for
from memoryhub.models import Agent, Memory, Mode, Session, User, Workspace
from memoryhub.queries.context import assemble_context
from memoryhub.queries.recall import decrypt_ranked, rank_memories, ranking_query, search_memories
from memoryhub.queries.speaker_cues import read_cues
from memoryhub.services.access import flush_memory_access
from memoryhub.services.agents import create_agent, get_or_create_workspace
from memoryhub.services.memories import NewMemory, remember, remember_many
from memoryhub.services.sessions import add_message, start_session
from memoryhub.services.users import create_user, ensure_mode

SYNTHETIC_WORKSPACE = "bench-synthetic"
# Synthetic rows reuse a pool of random vectors and token sets: their values never matter to
# the measured user's query, only their number and their place in the table and indexes.
POOL_SIZE = 1000
TOKENS_PER_ROW = 12
ROWS_PER_STATEMENT = 50_000
BATCH = 100


class Percentiles(TypedDict):
    n: int
    p50_ms: float
    p95_ms: float
    mean_ms: float


def percentiles(seconds: Sequence[float]) -> Percentiles:
    """p50, p95 and mean of timings given in seconds, in milliseconds."""
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return Percentiles(
        n=len(ordered),
        p50_ms=round(statistics.median(ordered) * 1000, 2),
        p95_ms=round(p95 * 1000, 2),
        mean_ms=round(statistics.fmean(ordered) * 1000, 2),
    )


def other_memories() -> int:
    """How many memories the synthetic users hold already (an estimate is not enough here)."""
    return Memory.all_owners.filter(user__workspace__slug=SYNTHETIC_WORKSPACE).count()


def populate_other_users(*, total: int, per_user: int = 1000, progress: bool = True) -> int:
    """Top the synthetic users' memories up to `total`; return how many rows were inserted."""
    missing = total - other_memories()
    if missing <= 0:
        return 0
    workspace = get_or_create_workspace(slug=SYNTHETIC_WORKSPACE)
    users = -(-missing // per_user)
    start = User.objects.filter(workspace=workspace).count()
    password = make_password(None)
    created = User.objects.bulk_create(
        User(workspace=workspace, external_id=f"synthetic-{start + n}", password=password)
        for n in range(users)
    )
    modes = Mode.objects.bulk_create(
        Mode(user=user, slug="personal", name="Personal") for user in created
    )
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((POOL_SIZE, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    tokens = [
        [f"{rng.integers(1 << 63):016x}" for _ in range(TOKENS_PER_ROW)] for _ in range(POOL_SIZE)
    ]
    # Random vectors, named after the deployment's model like every stored vector.
    template = Memory(
        kind="fact",
        content_ciphertext=b"\x01" + bytes(64),
        embedding_model=settings.MEMORYHUB_EMBEDDING_MODEL,
    )
    generated = {"id", "user_id", "mode_id", "embedding", "blind_tokens", "created_at"}
    fields = [f for f in Memory._meta.concrete_fields if f.column not in generated]
    columns = ", ".join(f"{f.column}" for f in fields)
    constants = [f.get_db_prep_save(getattr(template, f.attname), connection) for f in fields]
    table = Memory._meta.db_table
    inserted = 0
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMP TABLE IF NOT EXISTS bench_pool "
            "(i int PRIMARY KEY, v vector(384), toks varchar(16)[])"
        )
        cursor.execute("TRUNCATE bench_pool")
        cursor.executemany(
            "INSERT INTO bench_pool VALUES (%s, %s::vector, %s)",
            [
                (i, "[" + ",".join(f"{x:.6f}" for x in vectors[i]) + "]", tokens[i])
                for i in range(POOL_SIZE)
            ],
        )
        pairs = [(mode.user_id, mode.pk) for mode in modes]
        per_statement = max(1, ROWS_PER_STATEMENT // per_user)
        # Typed placeholders: a bare NULL in a SELECT list would be text, not the column's type.
        placeholders = ", ".join(f"%s::{f.db_type(connection)}" for f in fields)
        sql = f"""
            INSERT INTO {table}
                (id, user_id, mode_id, embedding, blind_tokens, created_at, {columns})
            SELECT gen_random_uuid(), o.user_id, o.mode_id, p.v, p.toks,
                   now() - random() * interval '365 days', {placeholders}
            FROM unnest(%s::uuid[], %s::int[]) AS o(user_id, mode_id)
            CROSS JOIN generate_series(1, %s) AS g(n)
            JOIN bench_pool p
                ON p.i = mod(abs(g.n::bigint * 7919 + hashtext(o.user_id::text)), {POOL_SIZE})
        """  # noqa: S608  # Our table and column names; values are parameters.
        with tqdm(
            total=missing, desc="synthetic memories", unit="row", disable=not progress
        ) as bar:
            for start_at in range(0, len(pairs), per_statement):
                chunk = pairs[start_at : start_at + per_statement]
                rows = min(per_user, missing - inserted)
                with transaction.atomic():
                    cursor.execute(
                        sql,
                        [*constants, [u for u, _ in chunk], [m for _, m in chunk], rows],
                    )
                inserted += cursor.rowcount
                bar.update(cursor.rowcount)
    # A database in service has long been vacuumed after its inserts; measuring while
    # autovacuum works through a million fresh rows would time the vacuum, not the search.
    # VACUUM cannot run inside a transaction (the smoke test's); ANALYZE alone can.
    command = "ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)"
    with connection.cursor() as cursor:
        cursor.execute(f"{command} {table}")
    return inserted


def _timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


@dataclass(frozen=True)
class ScaleUser:
    """The measured user: 1,000 real memories, an agent (and its key), a session with a thread."""

    user: User
    mode: Mode
    agent: Agent
    session: Session
    agent_key: str


def measure_ingestion(
    *, texts: Sequence[str], single: int, embedder: Embedder, workspace: Workspace
) -> tuple[dict[str, float], ScaleUser]:
    """Memories per second written one by one and in batches, next to the raw embedder.

    The batch run stores every text for the measured user, who is returned.
    """
    actor = Actor.system("bench")
    owner = create_user(workspace=workspace, external_id=f"scale-{time.time_ns()}")
    mode = ensure_mode(user=owner, slug="personal")
    scratch = ensure_mode(user=owner, slug="scratch", create=True)
    raw_seconds = batch_seconds = 0.0
    # Raw embedder and remember_many take turns on the same batches of 100 (the API's largest),
    # so a change in the machine's load hits both alike; who goes first alternates, as the
    # second to embed a batch finds torch's buffers for its shape already allocated.
    for number, start in enumerate(range(0, len(texts), BATCH)):
        batch = list(texts[start : start + BATCH])
        items = [NewMemory(kind="fact", content=text) for text in batch]
        raw = partial(embedder.embed, batch)
        store = partial(
            remember_many, user=owner, mode=mode, items=items, actor=actor, embedder=embedder
        )
        if number % 2:
            batch_seconds += _timed(store)
            raw_seconds += _timed(raw)
        else:
            raw_seconds += _timed(raw)
            batch_seconds += _timed(store)
    single_seconds = sum(
        _timed(
            partial(
                remember,
                user=owner,
                mode=scratch,
                item=NewMemory(kind="fact", content=text),
                actor=actor,
                embedder=embedder,
            )
        )
        for text in texts[:single]
    )
    agent, issued = create_agent(workspace=workspace, name=f"bench-{time.time_ns()}")
    session = start_session(user=owner, mode=mode, actor=actor, agent=agent)
    for n, text in enumerate(texts[:20]):
        add_message(
            session=session,
            role="user" if n % 2 == 0 else "assistant",
            content=text,
            actor=actor,
            embedder=embedder,
        )
    figures = {
        "raw_embedder_per_second": round(len(texts) / raw_seconds, 1),
        "batch_per_second": round(len(texts) / batch_seconds, 1),
        "single_per_second": round(single / single_seconds, 1),
        "batch_vs_raw": round(raw_seconds / batch_seconds, 3),
        "memories_batch": len(texts),
        "memories_single": single,
    }
    return figures, ScaleUser(
        user=owner, mode=mode, agent=agent, session=session, agent_key=issued.raw_key
    )


# The steps of search_memories in its order, each timed alone (`search_parts`).
SEARCH_PARTS = ("data_key", "cues", "embedding", "ranking", "decrypt", "audit")


def search_parts(*, scale_user: ScaleUser, query: str, embedder: Embedder) -> dict[str, float]:
    """Seconds each step of one search takes: where a search's time goes.

    The steps `search_memories` takes, one after another, on the primary: the user's data key,
    the speaker cues (a query naming no one skips the database), the query embedding, the
    ranking statement, decryption of the winners and the audit row (its commit waits for the
    WAL to reach disk). The buffered access counters are left out: they cost no query.
    """
    owner, mode = scale_user.user, scale_user.mode
    seconds: dict[str, float] = {}
    started = time.perf_counter()

    def lap(part: str) -> None:
        nonlocal started
        now = time.perf_counter()
        seconds[part] = now - started
        started = now

    cipher = cipher_for(owner)
    lap("data_key")
    cues = read_cues(user=owner, mode=mode, query=query, cipher=cipher)
    lap("cues")
    vector = embedder.embed_query(cues.text)
    lap("embedding")
    ranked = rank_memories(
        user=owner,
        mode=mode,
        query=query,
        cipher=cipher,
        k=10,
        cues=cues,
        query_vector=vector,
        vector_model=embedder.name,
    )
    lap("ranking")
    items = decrypt_ranked(ranked, cipher)
    lap("decrypt")
    record_access(
        actor=Actor.system("bench"),
        subject_user_id=owner.pk,
        action=AuditAction.MEMORY_SEARCH,
        object_ids=[item.id for item in items],
        mode=mode.slug,
    )
    lap("audit")
    return seconds


def measure_latency(
    *, scale_user: ScaleUser, queries: Sequence[str], embedder: Embedder, progress: bool = True
) -> dict[str, Any]:
    """Server time of search and of context assembly for each query (p50, p95, mean)."""
    actor = Actor.system("bench")
    owner, mode = scale_user.user, scale_user.mode

    def search(query: str) -> None:
        search_memories(user=owner, mode=mode, query=query, actor=actor, embedder=embedder)

    def context(query: str) -> None:
        assemble_context(
            user=owner,
            mode=mode,
            agent=scale_user.agent,
            message=query,
            actor=actor,
            embedder=embedder,
            session=scale_user.session,
        )

    # The same calls through the whole HTTP stack, in process (no network): middleware, key
    # lookup, rate-limit count, scope, JSON in and out. The limit is raised, not switched off,
    # so each request still pays for its count.
    client = Client(HTTP_AUTHORIZATION=f"Bearer {scale_user.agent_key}")
    scope = {"user": str(owner.pk), "mode": mode.slug}

    def post(path: str, body: dict[str, object]) -> None:
        response = client.post(path, {**scope, **body}, content_type="application/json")
        if response.status_code != 200:
            raise RuntimeError(f"{path} answered {response.status_code}: {response.content!r}")

    def search_http(query: str) -> None:
        post("/api/v1/search", {"query": query})

    def context_http(query: str) -> None:
        post("/api/v1/context", {"message": query, "session": str(scale_user.session.pk)})

    calls = {
        "search": search,
        "context": context,
        "search_http": search_http,
        "context_http": context_http,
    }
    with override_settings(
        ALLOWED_HOSTS=[*settings.ALLOWED_HOSTS, "testserver"],
        MEMORYHUB_RATE_LIMIT_PER_MINUTE=1_000_000,
    ):
        for query in queries[:10]:  # Warm the caches and the model first.
            for call in calls.values():
                call(query)
        times: dict[str, list[float]] = {"query_embedding": [], **{name: [] for name in calls}}
        parts: dict[str, list[float]] = {part: [] for part in SEARCH_PARTS}
        for query in tqdm(queries, desc="latency", unit="query", disable=not progress):
            times["query_embedding"].append(_timed(partial(embedder.embed, [query])))
            for name, call in calls.items():
                times[name].append(_timed(partial(call, query)))
            for part, seconds in search_parts(
                scale_user=scale_user, query=query, embedder=embedder
            ).items():
                parts[part].append(seconds)
    flush_memory_access()
    # Exactness at scale: asked for more than it holds, the ranking returns every memory.
    everything = rank_memories(
        user=owner,
        mode=mode,
        query=queries[0],
        embedder=embedder,
        cipher=cipher_for(owner),
        k=1_000_000,
    )
    return {
        "user_memories": Memory.objects.for_owner(user=owner, mode=mode).count(),
        "other_memories": other_memories(),
        **{name: percentiles(seconds) for name, seconds in times.items()},
        "search_parts": {part: percentiles(seconds) for part, seconds in parts.items()},
        "ranked_of_user_memories": len(everything),
        "plan": explain_ranking(scale_user, queries[0], embedder),
    }


def explain_ranking(scale_user: ScaleUser, query: str, embedder: Embedder) -> dict[str, Any]:
    """Which index the ranking query reads the user's rows through, and its execution time."""
    cipher = cipher_for(scale_user.user)
    cues = read_cues(user=scale_user.user, mode=scale_user.mode, query=query, cipher=cipher)
    sql, params = ranking_query(
        user=scale_user.user,
        mode=scale_user.mode,
        query=query,
        query_vector=embedder.embed_query(cues.text),
        vector_model=embedder.name,
        cipher=cipher,
        k=10,
        cues=cues,
    )
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0][0]
    indexes = sorted(_index_names(plan["Plan"]))
    return {
        "indexes": indexes,
        # The scope index, or the user's and the mode's indexes ANDed: a per-user read either way.
        "uses_scope_index": "memory_scope_idx" in indexes
        or any("user_id" in name for name in indexes),
        "execution_ms": round(float(plan["Execution Time"]), 2),
    }


def _index_names(node: dict[str, Any]) -> set[str]:
    names = {node["Index Name"]} if "Index Name" in node else set()
    for child in node.get("Plans", []):
        names |= _index_names(child)
    return names
