"""The embedding model is a setting: the multilingual model puts French next to English."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memoryhub.embeddings import (
    MINILM,
    MODELS,
    MULTILINGUAL_E5,
    PROJECTION_PATH,
    USE_MAX_CHARS,
    USE_MULTILINGUAL,
    calibrated_cosine,
    embedder_for,
)
from memoryhub.management.commands.fit_embedding_projection import (
    catalogue_paths,
    corpus_texts,
    fit_projection,
)

REPO = Path(__file__).resolve().parents[2]


def _cosine(a, b) -> float:
    return float(np.asarray(a) @ np.asarray(b))


def test_each_known_model_has_its_embedder_and_an_unknown_one_is_refused():
    for model in MODELS:
        assert embedder_for(model).name == model
    with pytest.raises(ValueError, match="word2vec"):
        embedder_for("word2vec")


def test_an_unknown_model_in_the_environment_stops_the_settings():
    completed = subprocess.run(  # Our own interpreter and settings module.
        [sys.executable, "-c", "import memoryhub.settings"],
        env={**os.environ, "DEBUG": "true", "MEMORYHUB_EMBEDDING_MODEL": "word2vec"},
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode != 0
    assert "MEMORYHUB_EMBEDDING_MODEL must be" in completed.stderr


def test_the_multilingual_model_puts_a_french_question_next_to_the_english_memory():
    e5 = embedder_for(MULTILINGUAL_E5)
    memory, other = e5.embed(["My sister lives in Lyon.", "The meeting moved to Friday."])
    question = e5.embed_query("Où habite ma sœur ?")
    right = calibrated_cosine(_cosine(question, memory), MULTILINGUAL_E5)
    wrong = calibrated_cosine(_cosine(question, other), MULTILINGUAL_E5)
    assert right > wrong + 0.2
    # A question is embedded unlike a stored text ("query: " and "passage: ").
    assert _cosine(question, e5.embed(["Où habite ma sœur ?"])[0]) < 0.99


def test_minilm_does_not_bridge_the_two_languages():
    minilm = embedder_for(MINILM)
    memory = minilm.embed(["My sister lives in Lyon."])[0]
    french = minilm.embed_query("Où habite ma sœur ?")
    english = minilm.embed_query("Where does my sister live?")
    assert _cosine(english, memory) > _cosine(french, memory) + 0.2


def test_the_universal_sentence_encoder_puts_french_and_english_in_one_space():
    use = embedder_for(USE_MULTILINGUAL)
    memory, other = use.embed(["My sister lives in Lyon.", "The meeting moved to Friday."])
    french_memory = use.embed(["Ma sœur habite à Lyon."])[0]
    question = use.embed_query("Où habite ma sœur ?")
    assert _cosine(question, memory) > _cosine(question, other) + 0.2
    assert _cosine(question, french_memory) > _cosine(question, other) + 0.2
    assert _cosine(use.embed_query("Where does my sister live?"), french_memory) > 0.3
    # 384 unit-length dimensions, the columns' size; no prefixes: a question is a text.
    assert len(memory) == 384
    assert abs(float(np.linalg.norm(memory)) - 1.0) < 1e-5
    assert np.allclose(question, use.embed(["Où habite ma sœur ?"])[0])
    assert use.embed([]) == []


def test_the_universal_sentence_encoder_reads_a_long_text_from_its_start():
    use = embedder_for(USE_MULTILINGUAL)
    start = "Je suis infirmière à Lyon et je joue du violoncelle le dimanche. " * 40
    long_text = start + "a" * 32768
    assert len(start) > USE_MAX_CHARS
    [whole] = use.embed([long_text])
    [first] = use.embed([long_text[:USE_MAX_CHARS]])
    assert np.allclose(whole, first)
    assert abs(float(np.linalg.norm(use.embed(["é" * 32768])[0])) - 1.0) < 1e-5


def test_the_projection_keeps_the_models_own_cosines():
    use = embedder_for(USE_MULTILINGUAL)
    texts = [
        "I moved to Montreal last spring.",
        "J'ai déménagé à Montréal au printemps dernier.",
        "My daughter plays the violin.",
        "Ma fille joue du violon.",
        "The car needs new tyres.",
        "We adopted a cat named Filou.",
    ]
    native = use.embed_native(texts)
    projected = np.asarray(use.embed(texts))
    pairs = np.triu_indices(len(texts), 1)
    assert np.abs((native @ native.T)[pairs] - (projected @ projected.T)[pairs]).max() < 0.05


def test_the_shipped_projection_is_what_the_fitting_command_computes():
    texts = corpus_texts(catalogue_paths())
    assert len(texts) > 2000
    assert any("Mot de passe" in text for text in texts)  # French translations are in
    native = embedder_for(USE_MULTILINGUAL).embed_native(texts)
    refitted = fit_projection(native)
    with np.load(PROJECTION_PATH) as saved:
        shipped = saved["matrix"]
    assert shipped.shape == refitted.shape == (512, 384)
    # Compared by what they do (the cosines they give), which a BLAS that orders two nearly
    # equal singular vectors the other way round would not change.
    sample = native[::7]
    assert np.abs(_cosines(sample, shipped) - _cosines(sample, refitted)).max() < 1e-3


def _cosines(vectors, matrix):
    projected = vectors @ matrix
    projected /= np.linalg.norm(projected, axis=1, keepdims=True)
    return projected @ projected.T
