"""The growth curve's pieces (bench/growth.py) on a tiny table: no LoCoMo, no million rows."""

from __future__ import annotations

import numpy as np

from bench.growth import format_growth, measure_growth, noisy_copies, recall_at
from memoryhub.models import Memory
from memoryhub.services.nearest_index import indexed_users
from memoryhub.services.term_counts import counted_users
from memoryhub.vector_search import index_name

TEXTS = [
    "Ana: I adopted a puppy called Rex last week.",
    "Ben: Lovely! I started learning the cello.",
    "Ana: My sister moved to Montreal in March.",
    "Ben: I ran the Berlin marathon in 2019.",
]


def test_noisy_copies_are_unit_vectors_near_their_base_row():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((4, 384)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    copies = noisy_copies(base, 10, noise=0.025, rng=rng)
    assert copies.shape == (10, 384)
    assert np.allclose(np.linalg.norm(copies, axis=1), 1.0, atol=1e-5)
    cosines = (copies * base[np.arange(10) % 4]).sum(axis=1)
    assert (cosines > 0.8).all()
    assert (cosines < 0.999).all()


def test_recall_at_counts_the_exact_top_k_found():
    assert recall_at([1, 2, 3], [3, 2, 1]) == 1.0
    assert recall_at(list(range(10)), [*range(9), 99]) == 0.9
    assert recall_at(list(range(20)), list(range(5, 25))) == 0.5
    assert recall_at([], [1]) == 1.0


def test_measure_growth_adds_each_user_once_and_reports_the_curve(db, embedder, settings):
    settings.MEMORYHUB_NEAREST_FROM = 20
    vectors = np.asarray(embedder.embed(TEXTS), dtype=np.float32)
    queries = ["Where did the sister move?", "What is the puppy called?"]

    def measure():
        return measure_growth(
            texts=TEXTS,
            vectors=vectors,
            queries=queries,
            embedder=embedder,
            sizes=(10, 30),
            candidates=10,
            progress=False,
        )

    growth = measure()
    assert Memory.all_owners.count() == 40
    assert measure()["curve"].keys() == {"10", "30"}
    assert Memory.all_owners.count() == 40  # The second run reuses both users.
    small, large = growth["curve"]["10"], growth["curve"]["30"]
    assert (small["memories"], small["path"]) == (10, "exact")
    assert (large["memories"], large["path"]) == (30, "nearest")
    assert small["recall_at_10"] == 1.0  # Ten candidates: all of the small user's memories.
    assert 0.0 <= large["recall_at_10"] <= 1.0
    assert large["search"]["n"] == len(queries)
    assert len(indexed_users()) == 1  # The user past the threshold only.
    assert counted_users() == indexed_users()  # Their counts kept, as index_heavy_users does.
    assert "ranking_nearest_counted_live" in large["variants"]
    assert large["context_start_layers"]["n"] == len(queries)
    store = growth["storage"]
    assert store["rows"] == 40
    assert store["total_bytes"] >= store["heap_bytes"] + store["index_bytes"]
    assert any(name == index_name(user) for user in indexed_users() for name in store["indexes"])
    text = format_growth(growth)
    assert "Growth curve" in text
    assert "recall@10" in text
    assert "per memory" in text
