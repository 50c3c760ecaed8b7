"""The extraction contract: transcript and result types, the `Extractor` protocol, grounding."""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal, Protocol

Role = Literal["user", "assistant"]
ItemKind = Literal["fact", "preference", "procedure", "episode", "open_item"]
Importance = Literal["low", "normal", "high", "critical"]
EventType = Literal["decision", "milestone", "commitment", "event"]

ITEM_KINDS: tuple[ItemKind, ...] = ("fact", "preference", "procedure", "episode", "open_item")
IMPORTANCES: tuple[Importance, ...] = ("low", "normal", "high", "critical")
EVENT_TYPES: tuple[EventType, ...] = ("decision", "milestone", "commitment", "event")

# Attributes a user has one value of at a time: a new value contradicts the old one.
SINGLE_VALUED_SLOTS = frozenset(
    {"name", "role", "employer", "location", "timezone", "language", "birthday"}
)

# A shorter quote ("I", "yes") appears in almost any transcript and proves nothing.
MIN_QUOTE_CHARS = 8

# Facts about the user must be the user's own words; an assistant line is not evidence.
_USER_ONLY_KINDS = frozenset({"fact", "preference"})

_STRAIGHT_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2039": '"',
        "\u203a": '"',
    }
)


class ExtractionError(Exception):
    """Extraction failed as a whole (API error, timeout, malformed output); retry the run.

    `usage` is what the failed attempt still spent (replies received before the failure, or
    the malformed reply itself): those tokens count against the budget like any others.
    """

    def __init__(self, message: str, *, usage: TokenUsage | None = None) -> None:
        super().__init__(message)
        self.usage = usage if usage is not None else TokenUsage()


@dataclass(frozen=True)
class TranscriptMessage:
    id: str
    role: Role
    content: str
    created_at: datetime


@dataclass(frozen=True)
class Transcript:
    session_id: str
    messages: tuple[TranscriptMessage, ...]
    user_display_name: str | None = None


@dataclass(frozen=True)
class ExtractedItem:
    kind: ItemKind
    content: str
    quote: str
    message_ids: tuple[str, ...]
    slot: str | None = None
    value: str | None = None
    importance: Importance = "normal"
    event_type: EventType | None = None
    event_date: date | None = None
    due_date: date | None = None
    topics: tuple[str, ...] = ()
    # The user asked to remember it ("remember that …"): applied at once, high importance.
    is_explicit: bool = False
    # A first-person statement about the user, said outright ("My name is …", "I prefer …",
    # "Always …"): the user's own word, so it is trusted (medium) without being heard twice.
    is_declared: bool = False
    is_correction: bool = False


@dataclass(frozen=True)
class SessionSummary:
    text: str
    topic: str
    quote_message_ids: tuple[str, ...]


@dataclass(frozen=True)
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_creation_tokens=self.cache_creation_tokens + other.cache_creation_tokens,
        )


@dataclass(frozen=True)
class ExtractionResult:
    summary: SessionSummary | None
    items: tuple[ExtractedItem, ...]
    extractor: str
    usage: TokenUsage = TokenUsage()
    # The model behind an LLM extractor ("" for rule-based ones), recorded with the run.
    model: str = ""


class Extractor(Protocol):
    name: str

    def extract(self, transcript: Transcript) -> ExtractionResult:
        """Turn a session transcript into a summary and memory items; raise ExtractionError."""
        ...


def normalise_text(text: str) -> str:
    """Return `text` casefolded, NFKC-normalised, with straight quotes and single spaces."""
    text = unicodedata.normalize("NFKC", text).translate(_STRAIGHT_QUOTES).casefold()
    return " ".join(text.split())


def is_grounded(item: ExtractedItem, transcript: Transcript) -> bool:
    """Say whether the item's quote really appears in the messages it cites (or any, if none)."""
    quote = normalise_text(item.quote)
    if len(quote) < MIN_QUOTE_CHARS:
        return False
    messages_by_id = {message.id: message for message in transcript.messages}
    if item.message_ids:
        # A cited id that does not exist is itself a hallucination, whatever else matches.
        if any(message_id not in messages_by_id for message_id in item.message_ids):
            return False
        cited = [messages_by_id[message_id] for message_id in item.message_ids]
    else:
        cited = list(transcript.messages)
    if item.kind in _USER_ONLY_KINDS:
        cited = [message for message in cited if message.role == "user"]
    return any(quote in normalise_text(message.content) for message in cited)


def unique_items(items: Iterable[ExtractedItem]) -> list[ExtractedItem]:
    """Drop repeats of an item (same kind and normalised content), keeping the first."""
    seen: set[tuple[str, str]] = set()
    unique = []
    for item in items:
        key = (item.kind, normalise_text(item.content))
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique


def split_grounded(
    result: ExtractionResult, transcript: Transcript
) -> tuple[ExtractionResult, list[ExtractedItem]]:
    """Split off the items whose quote is not in the transcript (rejected hallucinations)."""
    grounded: list[ExtractedItem] = []
    rejected: list[ExtractedItem] = []
    for item in result.items:
        (grounded if is_grounded(item, transcript) else rejected).append(item)
    summary = result.summary
    if summary is not None:
        known_ids = {message.id for message in transcript.messages}
        summary = dataclasses.replace(
            summary,
            quote_message_ids=tuple(i for i in summary.quote_message_ids if i in known_ids),
        )
    return dataclasses.replace(result, summary=summary, items=tuple(grounded)), rejected
