"""Turn session transcripts into memories: the `Extractor` protocol and its implementations.

`offline.OfflineExtractor` is rule-based and needs no network; `anthropic.AnthropicExtractor`
asks Claude. Both return an `ExtractionResult` whose items the caller passes through
`split_grounded` before storing them.
"""

from .base import (
    ExtractedItem,
    ExtractionError,
    ExtractionResult,
    Extractor,
    SessionSummary,
    TokenUsage,
    Transcript,
    TranscriptMessage,
    is_grounded,
    split_grounded,
)

__all__ = [
    "ExtractedItem",
    "ExtractionError",
    "ExtractionResult",
    "Extractor",
    "SessionSummary",
    "TokenUsage",
    "Transcript",
    "TranscriptMessage",
    "is_grounded",
    "split_grounded",
]
