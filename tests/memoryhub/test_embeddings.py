"""The offline MiniLM embedder gives real, normalised 384-d sentence vectors."""

from __future__ import annotations

import math

from memoryhub.embeddings import MiniLMEmbedder, default_embedder


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_embeddings_are_384_dimensional_unit_vectors(embedder):
    [vector] = embedder.embed(["The user lives in Lyon."])
    assert len(vector) == 384
    assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-4)


def test_similar_sentences_are_closer_than_unrelated_ones(embedder):
    city, town, food = embedder.embed(
        ["I live in Paris.", "My home is in the French capital.", "Peanut butter sandwiches"]
    )
    assert _cosine(city, town) > _cosine(city, food) + 0.2


def test_batch_encoding_matches_single_encoding(embedder):
    texts = ["alpha release", "beta launch", "gamma rays"]
    batch = embedder.embed(texts)
    single = [embedder.embed([t])[0] for t in texts]
    for b, s in zip(batch, single, strict=True):
        assert _cosine(b, s) > 0.999


def test_the_model_loads_lazily_and_once_per_process():
    fresh = MiniLMEmbedder()
    assert fresh._model is None  # nothing loaded at construction
    assert default_embedder() is default_embedder()


def test_an_empty_batch_needs_no_model():
    fresh = MiniLMEmbedder()
    assert fresh.embed([]) == []
    assert fresh._model is None


def test_one_text_gets_the_same_vector_as_the_model_encode_gives():
    # A fresh embedder whose first call is the one-text path: the model must already be in
    # inference mode (dropout off), and a text past 256 tokens is truncated as encode does.
    fresh = MiniLMEmbedder()
    texts = ["Where did Alice go on holiday last summer?", "word " * 400]
    singles = [fresh.embed([text])[0] for text in texts]
    encoded = fresh._load().encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    for single, reference in zip(singles, encoded, strict=True):
        assert max(abs(a - b) for a, b in zip(single, reference.tolist(), strict=True)) < 1e-5
    assert fresh.embed([texts[0]]) == singles[:1]  # deterministic
