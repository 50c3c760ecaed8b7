"""MemoryHub's retrieval benchmark: LoCoMo recall beside the baselines, token economy, and the
latency and ingestion figures of bench/scale.py, printed as tables and saved as one JSON file.

Needs Django and a database of its own: run it through `manage.py bench_retrieval`.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db import connection
from tqdm import tqdm

from bench.baselines import BM25Retriever, MiniLMCosineRetriever, Retriever
from bench.growth import format_growth
from bench.locomo import HEADLINE_CODES, Conversation, run_benchmark
from bench.memoryhub_retriever import CachedEmbedder, MemoryHubRetriever
from bench.metrics import BenchmarkResult
from memoryhub.actors import Actor
from memoryhub.embeddings import Embedder
from memoryhub.queries.context import assemble_context
from memoryhub.tokens import count_tokens

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def run_locomo(
    conversations: Sequence[Conversation],
    *,
    embedder: Embedder,
    progress: bool = True,
    with_baselines: bool = True,
    embedding_cache: Path | None = None,
) -> tuple[BenchmarkResult, MemoryHubRetriever]:
    """MemoryHub, BM25 and MiniLM cosine on the same LoCoMo turns and questions.

    With `embedding_cache`, the turn and question vectors are read from and saved to that file,
    so a run after the first embeds nothing (a recall experiment takes a minute, not ten).
    """
    # MemoryHub and the MiniLM baseline embed each text once.
    cached = CachedEmbedder(embedder, path=embedding_cache)
    memoryhub = MemoryHubRetriever(embedder=cached)
    retrievers: list[Retriever] = [memoryhub]
    if with_baselines:
        retrievers += [BM25Retriever(), MiniLMCosineRetriever(cached)]
    result = run_benchmark(conversations, retrievers, progress=progress)
    cached.save()
    return result, memoryhub


def token_economy(
    conversations: Sequence[Conversation],
    retriever: MemoryHubRetriever,
    *,
    embedder: Embedder,
    progress: bool = True,
) -> dict[str, Any]:
    """Median context tokens per LoCoMo question next to the tokens of the whole conversation.

    The context is `assemble_context` for the question with the default agent settings and no
    session: rules, date, and the memories relevant to the question, within the 2,000 budget.
    """
    actor = Actor.system("bench")
    contexts: list[int] = []
    histories: list[int] = []
    shares: list[float] = []
    hits: list[bool] = []
    questions = [
        (c, q)
        for c in conversations
        for q in c.questions
        if q.evidence and q.category in HEADLINE_CODES
    ]
    history_of = {c.id: count_tokens("\n".join(t.text for t in c.turns)) for c in conversations}
    for conversation, question in tqdm(
        questions, desc="token economy", unit="query", disable=not progress
    ):
        user, mode = retriever.scopes[conversation.id]
        bundle = assemble_context(
            user=user,
            mode=mode,
            agent=None,
            message=question.question,
            actor=actor,
            embedder=embedder,
        )
        history = history_of[conversation.id]
        contexts.append(bundle.total_tokens)
        histories.append(history)
        shares.append(bundle.total_tokens / history)
        shown = {retriever.turn_of.get(m) for b in bundle.blocks for m in b.memory_ids}
        hits.append(bool(shown & set(question.evidence)))
    return {
        "questions": len(contexts),
        "median_context_tokens": statistics.median(contexts),
        "median_history_tokens": statistics.median(histories),
        "median_share": round(statistics.median(shares), 4),
        "p90_context_tokens": sorted(contexts)[int(0.9 * (len(contexts) - 1))],
        # Questions whose context holds at least one of their evidence turns.
        "evidence_in_context": round(sum(hits) / len(hits), 4),
    }


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def speed_probe(*, round_trips: int = 200) -> dict[str, float]:
    """How fast the machine runs now, the same work every time: compare it between runs.

    The same code has measured 2.5 to 4 times slower on a slow spell of the VM; this says
    whether a run had one. A fixed pure-Python loop (median of 5) and the round trip of
    `SELECT 1` to the database (median of `round_trips`), in ms.
    """
    loops = []
    for _ in range(5):
        started = time.perf_counter()
        sum(number * number for number in range(200_000))
        loops.append(time.perf_counter() - started)
    trips = []
    with connection.cursor() as cursor:
        for _ in range(round_trips):
            started = time.perf_counter()
            cursor.execute("SELECT 1")
            cursor.fetchone()
            trips.append(time.perf_counter() - started)
    return {
        "cpu_loop_ms": round(statistics.median(loops) * 1000, 2),
        "db_round_trip_ms": round(statistics.median(trips) * 1000, 3),
    }


def _percentile_row(name: str, figures: dict[str, Any]) -> str:
    return (
        f"{name:<18}{figures['n']:>6}{figures['p50_ms']:>10.1f}"
        f"{figures['p95_ms']:>10.1f}{figures['mean_ms']:>10.1f}"
    )


def format_report(report: dict[str, Any]) -> str:
    """The scale, ingestion and token figures as plain text (LoCoMo has its own table)."""
    lines: list[str] = []
    probes = report.get("speed_probe")
    if probes:
        lines.append(
            "\nMachine speed (the same work every run: lower is faster): "
            + "; ".join(
                f"{when} CPU loop {probe['cpu_loop_ms']:.1f} ms, "
                f"database round trip {probe['db_round_trip_ms']:.3f} ms"
                for when, probe in probes.items()
            )
        )
    scale = report.get("latency")
    if scale:
        lines.append(
            f"\nLatency: a user with {scale['user_memories']:,} memories among "
            f"{scale['other_memories']:,} memories of other users (server time, ms)"
        )
        lines.append(f"{'':<18}{'n':>6}{'p50':>10}{'p95':>10}{'mean':>10}")
        for name in ("query_embedding", "search", "context", "search_http", "context_http"):
            lines.append(_percentile_row(name, scale[name]))
        lines.append("(*_http: the same through the HTTP API in process: auth, rate limit, JSON)")
        parts = scale.get("search_parts")
        if parts:
            lines.append("search, step by step (the same queries, each step timed alone):")
            lines += [_percentile_row(f"  {name}", figures) for name, figures in parts.items()]
        plan = scale["plan"]
        lines.append(
            f"ranking reads {', '.join(plan['indexes']) or 'no index'}; "
            f"{scale['ranked_of_user_memories']:,} of the user's memories ranked (exact)"
        )
    growth = report.get("growth")
    if growth:
        lines.append(format_growth(growth).rstrip("\n"))
    memory = report.get("web_memory")
    if memory:
        lines.append(
            f"\nWeb process after a search and a context assembly ({memory['runtime']}): "
            f"{memory['rss_mb']:.0f} MB resident, peak {memory['peak_rss_mb']:.0f} MB"
        )
    ingestion = report.get("ingestion")
    if ingestion:
        lines.append("\nIngestion (memories per second)")
        lines.append(f"raw embedder batch {ingestion['raw_embedder_per_second']:>10.1f}")
        lines.append(
            f"remember_many      {ingestion['batch_per_second']:>10.1f}"
            f"  ({ingestion['batch_vs_raw']:.0%} of the raw embedder)"
        )
        lines.append(f"remember one by one{ingestion['single_per_second']:>10.1f}")
    tokens = report.get("token_economy")
    if tokens:
        lines.append(
            f"\nToken economy ({tokens['questions']} LoCoMo questions, codes 1-4): median context "
            f"{tokens['median_context_tokens']} tokens vs {tokens['median_history_tokens']} for "
            f"the whole conversation ({tokens['median_share']:.1%}); an evidence turn is in "
            f"the context for {tokens['evidence_in_context']:.1%} of them"
        )
    return "\n".join(lines) + "\n"


def write_report(
    report: dict[str, Any], directory: Path = RESULTS_DIR, *, name: str = "retrieval"
) -> Path:
    """Save the report as JSON: a dated file `<name>-<UTC time>.json`, and `<name>-latest.json`
    beside it (a growth-only run is `retrieval-growth`: it leaves the full run's latest alone)."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    text = json.dumps(report, indent=2, default=str) + "\n"
    path = directory / f"{name}-{stamp}.json"
    path.write_text(text, encoding="utf-8")
    (directory / f"{name}-latest.json").write_text(text, encoding="utf-8")
    return path
