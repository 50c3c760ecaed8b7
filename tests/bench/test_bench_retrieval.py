"""Smoke test of the retrieval benchmark's pieces on tiny synthetic data (no LoCoMo, no 1M rows)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.db import connection

from bench.load_stack import base_database_url, database_url
from bench.locomo import Conversation, Question, Turn
from bench.memoryhub_retriever import CachedEmbedder
from bench.retrieval import format_report, run_locomo, speed_probe, token_economy, write_report
from bench.scale import (
    SEARCH_PARTS,
    measure_ingestion,
    measure_latency,
    other_memories,
    percentiles,
    populate_other_users,
)
from bench.web_memory import measure_web_memory, resident_megabytes
from memoryhub.models import Memory
from tests import factories

LINES = [
    ("Ana", "I adopted a puppy called Rex last week."),
    ("Ben", "Lovely! I started learning the cello."),
    ("Ana", "My sister moved to Montreal in March."),
    ("Ben", "I ran the Berlin marathon in 2019."),
]


def _conversation() -> Conversation:
    day = datetime(2023, 5, 8, tzinfo=UTC)
    turns = tuple(
        Turn("c1", f"D1:{n}", 1, speaker, f"{speaker}: {text}", day)
        for n, (speaker, text) in enumerate(LINES, 1)
    )
    questions = (
        Question("c1", "What is the name of Ana's puppy?", 4, ("D1:1",), "Rex"),
        Question("c1", "Where did Ana's sister move?", 1, ("D1:3",), "Montreal"),
        Question("c1", "Which instrument does Ben play?", 5, ("D1:2",), ""),
    )
    return Conversation(id="c1", speakers=("Ana", "Ben"), turns=turns, questions=questions)


def test_locomo_runs_memoryhub_beside_both_baselines_on_the_same_questions(db, embedder):
    conversation = _conversation()
    result, memoryhub = run_locomo([conversation], embedder=embedder, progress=False)
    assert set(result["retrievers"]) == {"memoryhub", "bm25", "minilm"}
    headline = result["retrievers"]["memoryhub"]["groups"]["1-4"]
    assert headline["n"] == 2
    assert headline["metrics"]["recall_at_10"] == 1.0  # Four turns: everything is in the top 10.
    assert headline["metrics"]["mrr_at_10"] == 1.0
    user, mode = memoryhub.scopes["c1"]
    assert Memory.objects.for_owner(user=user, mode=mode).count() == len(LINES)

    economy = token_economy([conversation], memoryhub, embedder=embedder, progress=False)
    assert economy["questions"] == 2
    assert economy["median_context_tokens"] > 0
    assert economy["evidence_in_context"] == 1.0


def test_scale_pieces_measure_a_real_user_among_synthetic_ones(db, embedder, tmp_path):
    assert populate_other_users(total=1500, per_user=500, progress=False) == 1500
    assert other_memories() == 1500
    assert populate_other_users(total=1500, per_user=500, progress=False) == 0
    texts = [text for _, text in LINES] * 3
    figures, scale_user = measure_ingestion(
        texts=texts, single=2, embedder=embedder, workspace=factories.make_workspace()
    )
    assert figures["memories_batch"] == len(texts)
    assert figures["batch_per_second"] > 0
    latency = measure_latency(
        scale_user=scale_user,
        queries=["Who moved to Montreal?"] * 3,
        embedder=embedder,
        progress=False,
    )
    assert latency["user_memories"] == len(texts)
    assert latency["ranked_of_user_memories"] == len(texts)
    assert latency["search"]["n"] == 3
    assert latency["search_http"]["n"] == latency["context_http"]["n"] == 3
    assert list(latency["search_parts"]) == list(SEARCH_PARTS)
    assert all(figures["n"] == 3 for figures in latency["search_parts"].values())

    probe = speed_probe(round_trips=5)
    assert probe["cpu_loop_ms"] > 0
    assert probe["db_round_trip_ms"] > 0
    report = {"latency": latency, "ingestion": figures, "speed_probe": {"start": probe}}
    text = format_report(report)
    assert "Latency: a user with 12 memories among 1,500" in text
    assert "search, step by step" in text
    assert f"start CPU loop {probe['cpu_loop_ms']:.1f} ms" in text
    path = write_report(report, tmp_path)
    assert json.loads(path.read_text())["ingestion"]["memories_single"] == 2
    assert (tmp_path / "retrieval-latest.json").exists()
    # A growth-only run keeps its own latest, and leaves the full run's alone.
    growth = write_report({"growth": {}}, tmp_path, name="retrieval-growth")
    assert growth.name.startswith("retrieval-growth-")
    assert json.loads((tmp_path / "retrieval-latest.json").read_text())["ingestion"]
    assert (tmp_path / "retrieval-growth-latest.json").exists()


def test_percentiles_are_in_milliseconds():
    figures = percentiles([0.010, 0.020, 0.030, 0.040, 1.0])
    assert figures["p50_ms"] == pytest.approx(30.0)
    assert figures["p95_ms"] == pytest.approx(1000.0)
    assert figures["n"] == 5


def test_the_embedding_cache_gives_the_same_vectors_from_disk_and_holds_no_text(embedder, tmp_path):
    texts = [text for _, text in LINES]
    path = tmp_path / "vectors.npz"
    first = CachedEmbedder(embedder, path=path)
    computed = first.embed(texts)
    first.save()

    class Refusing:
        name = embedder.name
        dimensions = embedder.dimensions

        def embed(self, batch):
            raise AssertionError(f"embedded again: {batch}")

        def embed_query(self, text):
            raise AssertionError(f"embedded again: {text}")

    again = CachedEmbedder(Refusing(), path=path)  # type: ignore[arg-type]
    assert again.embed(list(reversed(texts))) == list(reversed(computed))
    raw = path.read_bytes()  # numpy keeps strings as UTF-32: look for both encodings.
    for word in ("puppy", "cello", "Montreal", "Berlin"):
        assert word.encode() not in raw
        assert word.encode("utf-32-le") not in raw


def test_resident_memory_is_read_from_proc_status_in_megabytes():
    status = "Name:\tpython\nVmHWM:\t  500000 kB\nVmRSS:\t  300000 kB\nThreads:\t4\n"
    assert resident_megabytes(status) == {"rss_mb": 307.2, "peak_rss_mb": 512.0}


@pytest.mark.django_db(transaction=True)
def test_a_fresh_web_process_serves_search_and_context_then_reports_its_memory(embedder):
    # Committed rows (transaction=True): the probe is another process on the same database.
    user = factories.make_user(external_id="rss-probe")
    _, key = factories.make_agent(user.workspace)
    factories.make_memory(user, factories.mode_of(user), "I adopted a puppy called Rex last week.")
    url = database_url(base_database_url(), connection.settings_dict["NAME"])

    figures = measure_web_memory(
        database_url=url, agent_key=key, user="rss-probe", mode="personal", query="Who is Rex?"
    )

    assert 50 < figures["rss_mb"] <= figures["peak_rss_mb"] < 5000
    assert figures["runtime"] == "onnx"
    with pytest.raises(RuntimeError, match="answered"):
        measure_web_memory(
            database_url=url, agent_key="mh_wrong", user="rss-probe", mode="personal", query="x"
        )
