"""Growth curve: what a user with 1,000, 10,000 and 100,000 memories costs in a table of 1,000,000.

Needs Django and the bench database (`manage.py bench_retrieval`), which already holds the
million synthetic memories of bench/scale.py. Each growth user is added once and kept with the
database (`--keep-db`): their memories are LoCoMo turns sealed like any memory, each turn
stored many times over, its vector moved a little each time (a heavy user says similar things
again and again: near-duplicates are the hard case for an approximate index), dated across a
year in groups of twenty told together. The LoCoMo text stays in the bench database.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import partial
from typing import Any

import numpy as np
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, transaction
from django.test.utils import override_settings
from django.utils import timezone
from tqdm import tqdm

from bench.scale import percentiles
from memoryhub.actors import Actor
from memoryhub.embeddings import Embedder
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.memory_rows import seal_content
from memoryhub.models import Memory, Mode, User
from memoryhub.queries import context_layers
from memoryhub.queries.context import assemble_context
from memoryhub.queries.recall import rank_memories, search_memories
from memoryhub.queries.speaker_cues import read_cues
from memoryhub.services.agents import get_or_create_workspace
from memoryhub.services.nearest_index import create_nearest_index, drop_nearest_index
from memoryhub.services.term_counts import counted_users, drop_term_counts, keep_term_counts
from memoryhub.services.users import create_user, ensure_mode
from memoryhub.vector_search import has_own_index, index_name

GROWTH_WORKSPACE = "bench-growth"
GROWTH_SIZES = (1_000, 10_000, 100_000)
# How far a copy's vector moves from its turn's: cosine about 0.9 between the two.
COPY_NOISE = 0.025
GROUP = 20
INSERT_BATCH = 2_000
# Enough for the build of one user's index to stay in memory (100,000 rows: about 200 MB).
INDEX_BUILD_MEMORY = "512MB"
# Heavy paths ranked beside the served one, query by query, for the side-by-side: each with
# the settings it overrides and the arguments it passes to `rank_memories`. "Counted live" is
# the heavy path before the kept counts (services/term_counts.py): its IDF counted per search.
VARIANTS: dict[str, tuple[dict[str, int], dict[str, Any]]] = {
    "ranking_nearest_counted_live": ({}, {"kept_counts": False}),
}


def noisy_copies(
    base: np.ndarray, count: int, *, noise: float, rng: np.random.Generator
) -> np.ndarray:
    """`count` unit vectors: the base rows in turn, each moved by Gaussian noise per component."""
    rows = base[np.arange(count) % len(base)]
    moved = rows + rng.normal(0.0, noise, size=rows.shape).astype(np.float32)
    unit: np.ndarray = (moved / np.linalg.norm(moved, axis=1, keepdims=True)).astype(np.float32)
    return unit


def recall_at(exact: Sequence[Any], found: Sequence[Any], k: int = 10) -> float:
    """Share of the exact ranking's top k that the other ranking's top k also holds."""
    expected = list(exact)[:k]
    if not expected:
        return 1.0
    return len(set(expected) & set(list(found)[:k])) / len(expected)


def growth_user(size: int) -> tuple[User, Mode] | None:
    """The growth user of this size, if the bench database holds them with all their memories."""
    user = User.objects.filter(
        workspace__slug=GROWTH_WORKSPACE, external_id=f"growth-{size}"
    ).first()
    if user is None:
        return None
    mode = Mode.objects.get(user=user, slug="personal")
    if Memory.objects.for_owner(user=user, mode=mode).count() < size:
        return None
    return user, mode


def populate_growth_user(
    size: int, *, texts: Sequence[str], vectors: np.ndarray, model: str, progress: bool = True
) -> tuple[User, Mode]:
    """Create the growth user of this size with `size` memories, unless already there."""
    existing = growth_user(size)
    if existing is not None:
        return existing
    workspace = get_or_create_workspace(slug=GROWTH_WORKSPACE)
    # A half-built user from an interrupted run is replaced.
    User.objects.filter(workspace=workspace, external_id=f"growth-{size}").delete()
    user = create_user(workspace=workspace, external_id=f"growth-{size}")
    mode = ensure_mode(user=user, slug="personal")
    cipher = cipher_for(user)
    rng = np.random.default_rng(size)
    copies = noisy_copies(vectors, size, noise=COPY_NOISE, rng=rng)
    start = timezone.now() - timedelta(days=365)
    step = timedelta(days=365) / size
    for first in tqdm(
        range(0, size, INSERT_BATCH), desc=f"growth user {size:,}", disable=not progress
    ):
        rows = []
        for n in range(first, min(size, first + INSERT_BATCH)):
            created = start + n * step
            memory = Memory(
                id=uuid.uuid4(),
                user=user,
                mode=mode,
                kind="fact",
                created_at=created,
                updated_at=created,
                valid_from=created,
                occurred_at=start + (n // GROUP) * GROUP * step,
            )
            seal_content(
                memory,
                cipher=cipher,
                content=texts[n % len(texts)],
                embedding=copies[n].tolist(),
                embedding_model=model,
            )
            rows.append(memory)
        with transaction.atomic():
            Memory.all_owners.bulk_create(rows)
    # VACUUM cannot run inside a transaction (the smoke test's); ANALYZE alone can.
    command = "ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)"
    with connection.cursor() as cursor:
        cursor.execute(f"{command} {Memory._meta.db_table}")
    return user, mode


def build_index(user: User) -> float:
    """Build the user's own vector index if missing; the seconds it took."""
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [index_name(user.pk)])
        if cursor.fetchone():
            # Indexed by a run before the kept counts and the profile index.
            create_nearest_index(user_id=user.pk, concurrently=not connection.in_atomic_block)
            if user.pk not in counted_users():
                keep_term_counts(user_id=user.pk)
            return 0.0
        cursor.execute("SET maintenance_work_mem = %s", [INDEX_BUILD_MEMORY])
        in_transaction = connection.in_atomic_block
        if in_transaction:  # The smoke test's: no foreign-key check may still be pending.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    create_nearest_index(user_id=user.pk, concurrently=not in_transaction)
    keep_term_counts(user_id=user.pk)  # As `index_heavy_users` does with the index.
    return round(time.perf_counter() - started, 1)


def storage() -> dict[str, Any]:
    """The memory table on disk: heap, each index, TOAST; in bytes, and per row."""
    table = Memory._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT pg_relation_size(c.oid), pg_indexes_size(c.oid),
                coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0),
                pg_total_relation_size(c.oid), (SELECT count(*) FROM memoryhub_memory)
            FROM pg_class c WHERE c.relname = %s
            """,
            [table],
        )
        heap, indexes, toast, total, rows = cursor.fetchone()
        cursor.execute(
            "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) "
            "FROM pg_index WHERE indrelid = %s::regclass ORDER BY 2 DESC",
            [table],
        )
        each = dict(cursor.fetchall())
    nearest = {
        name: size
        for name, size in each.items()
        if name.startswith(("memory_nearest_", "memory_profile_"))
    }
    return {
        "rows": rows,
        "heap_bytes": heap,
        "index_bytes": indexes,
        "toast_bytes": toast,
        "total_bytes": total,
        "per_memory": {
            "heap": round(heap / rows),
            "indexes": round(indexes / rows),
            "toast": round(toast / rows),
            "total": round(total / rows),
        },
        "indexes": each,
        "heavy_user_index_bytes": nearest,
    }


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _start_layers(user: User, mode: Mode, cipher: UserCipher, *, is_heavy: bool) -> None:
    """The layers a context reads at session start besides the ranking (4 and 5)."""
    context_layers.profile_items(
        user=user, mode=mode, cipher=cipher, is_session_start=True, is_heavy=is_heavy
    )
    context_layers.recent_summaries(user=user, mode=mode, cipher=cipher, session=None)
    context_layers.open_items(user=user, mode=mode, cipher=cipher)


def measure_user(
    user: User,
    mode: Mode,
    *,
    queries: Sequence[str],
    embedder: Embedder,
    candidates: int,
    progress: bool = True,
) -> dict[str, Any]:
    """Search and context as served, and the ranking exact and through the index, per query.

    recall@10: the top 10 through the index against the exact ranking's top 10 (the same
    query vector and moment for both).
    """
    actor = Actor.system("bench")
    cipher = cipher_for(user)
    times: dict[str, list[float]] = {
        "search": [],
        "context": [],
        "context_start_layers": [],
        "ranking_exact": [],
        "ranking_nearest": [],
        **{name: [] for name in VARIANTS},
    }
    recalls: dict[str, list[float]] = {name: [] for name in ("ranking_nearest", *VARIANTS)}
    # As context assembly asks it (queries/context.py): the profile of a heavy user is read
    # along the scope index.
    is_heavy = has_own_index(user_id=user.pk, using=DEFAULT_DB_ALIAS)
    for query in queries[:5]:  # Warm the caches and the model.
        search_memories(user=user, mode=mode, query=query, actor=actor, embedder=embedder)
    for query in tqdm(queries, desc=f"growth {user.external_id}", disable=not progress):
        times["search"].append(
            _timed(
                partial(
                    search_memories,
                    user=user,
                    mode=mode,
                    actor=actor,
                    embedder=embedder,
                    query=query,
                )
            )
        )
        times["context"].append(
            _timed(
                partial(
                    assemble_context,
                    user=user,
                    mode=mode,
                    actor=actor,
                    embedder=embedder,
                    message=query,
                    agent=None,
                )
            )
        )
        times["context_start_layers"].append(
            _timed(partial(_start_layers, user, mode, cipher, is_heavy=is_heavy))
        )
        cues = read_cues(user=user, mode=mode, query=query, cipher=cipher)
        rank = partial(
            rank_memories,
            user=user,
            mode=mode,
            query=query,
            cipher=cipher,
            k=10,
            cues=cues,
            query_vector=embedder.embed_query(cues.text),
            vector_model=embedder.name,
            now=timezone.now(),
        )
        ranked: dict[str, list[Any]] = {}
        runs: list[tuple[str, int | None, dict[str, int], dict[str, Any]]] = [
            ("ranking_exact", None, {}, {}),
            ("ranking_nearest", candidates, {}, {}),
            *((name, candidates, *variant) for name, variant in VARIANTS.items()),
        ]
        for name, nearest, changed, arguments in runs:
            with override_settings(**changed):
                started = time.perf_counter()
                ranked[name] = [entry.id for entry in rank(nearest=nearest, **arguments)]
                times[name].append(time.perf_counter() - started)
        for name, found in recalls.items():
            found.append(recall_at(ranked["ranking_exact"], ranked[name]))
    return {
        "memories": Memory.objects.for_owner(user=user, mode=mode).count(),
        "path": "nearest" if has_own_index(user_id=user.pk, using=DEFAULT_DB_ALIAS) else "exact",
        **{name: percentiles(seconds) for name, seconds in times.items()},
        "recall_at_10": round(float(np.mean(recalls["ranking_nearest"])), 4),
        "recall_at_10_min": round(min(recalls["ranking_nearest"]), 2),
        "variants": {
            name: {
                **changed,
                **arguments,
                "recall_at_10": round(float(np.mean(recalls[name])), 4),
                "recall_at_10_min": round(min(recalls[name]), 2),
            }
            for name, (changed, arguments) in VARIANTS.items()
        },
        "queries": len(queries),
    }


def measure_growth(
    *,
    texts: Sequence[str],
    vectors: np.ndarray,
    queries: Sequence[str],
    embedder: Embedder,
    sizes: Sequence[int] = GROWTH_SIZES,
    candidates: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """The growth curve: each size's user added once, then measured; the table's storage."""
    candidates = candidates or settings.MEMORYHUB_NEAREST_CANDIDATES
    users = {}
    index_seconds = {}
    for size in sizes:
        users[size] = populate_growth_user(
            size, texts=texts, vectors=vectors, model=embedder.name, progress=progress
        )
        # A user as large as the threshold gets their index, as `index_heavy_users` gives it.
        threshold = settings.MEMORYHUB_NEAREST_FROM
        if threshold and size >= threshold:
            index_seconds[size] = build_index(users[size][0])
        else:  # Left by an earlier run with a lower threshold.
            drop_nearest_index(user_id=users[size][0].pk, concurrently=False)
            drop_term_counts(user_id=users[size][0].pk)
    curve = {
        str(size): measure_user(
            user,
            mode,
            queries=queries,
            embedder=embedder,
            candidates=candidates,
            progress=progress,
        )
        for size, (user, mode) in users.items()
    }
    return {
        "nearest_from": settings.MEMORYHUB_NEAREST_FROM,
        "nearest_candidates": candidates,
        "index_build_seconds": {str(size): s for size, s in index_seconds.items()},
        "curve": curve,
        "storage": storage(),
    }


def format_growth(growth: dict[str, Any]) -> str:
    """The growth curve and the table's storage as plain text."""
    lines = [
        f"\nGrowth curve ({growth['storage']['rows']:,} memories in the table; ms; heavy path "
        f"from {growth['nearest_from']:,} memories, {growth['nearest_candidates']} candidates)",
        f"{'memories':>9} {'path':>8} {'search p50/p95':>15} {'context p50/p95':>16} "
        f"{'exact p50/p95':>14} {'nearest p50/p95':>16} {'recall@10':>10}",
    ]
    for figures in growth["curve"].values():
        cells = [
            f"{figures[name]['p50_ms']:.1f}/{figures[name]['p95_ms']:.1f}"
            for name in ("search", "context", "ranking_exact", "ranking_nearest")
        ]
        lines.append(
            f"{figures['memories']:>9,} {figures['path']:>8} {cells[0]:>15} {cells[1]:>16} "
            f"{cells[2]:>14} {cells[3]:>16} {figures['recall_at_10']:>10.3f}"
        )
    lines.append("(exact / nearest: the ranking statement alone, every candidate / the index's)")
    for figures in growth["curve"].values():
        start = figures.get("context_start_layers")
        if start:
            lines.append(
                f"{figures['memories']:>9,} context's profile, summaries and open items: "
                f"{start['p50_ms']:.1f}/{start['p95_ms']:.1f} ms"
            )
    for figures in growth["curve"].values():
        for name, variant in figures.get("variants", {}).items():
            lines.append(
                f"{figures['memories']:>9,} {name}: {figures[name]['p50_ms']:.1f}/"
                f"{figures[name]['p95_ms']:.1f} ms, recall@10 {variant['recall_at_10']:.3f}"
            )
    store = growth["storage"]
    per = store["per_memory"]
    lines.append(
        f"Storage: {store['total_bytes'] / 2**20:,.0f} MB in all; per memory {per['total']} bytes "
        f"(heap {per['heap']}, indexes {per['indexes']}, TOAST {per['toast']}); heavy users' "
        f"indexes {sum(store['heavy_user_index_bytes'].values()) / 2**20:,.1f} MB"
    )
    return "\n".join(lines) + "\n"
