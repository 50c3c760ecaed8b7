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
    calibrated_cosine,
    embedder_for,
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
