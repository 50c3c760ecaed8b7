"""The pivot of every import: memories and past sessions as plain records, whatever the format."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class ImportFileError(ValueError):
    """The file is not JSON, or not a format we read, or an item in it is malformed.

    `code` is the API's error code; the message names the line or the item, never its text.
    Like a MemoryHubError's, a message marked with gettext_noop keeps its words apart, so
    that the upload page can say it in the reader's language (words.py); the item it names
    is passed as `where`.
    """

    def __init__(self, detail: str, *, code: str = "import_malformed", **words: object) -> None:
        super().__init__(detail.format(**words) if words else detail)
        self.code = code
        self.message = detail
        self.words = words


@dataclass(frozen=True)
class MessageRecord:
    role: str
    content: str
    created_at: datetime | None


@dataclass(frozen=True)
class SessionRecord:
    """A past conversation; `is_extracted` runs end-of-session extraction over it."""

    key: str
    label: str
    messages: tuple[MessageRecord, ...]
    started_at: datetime | None
    ended_at: datetime | None
    mode: str | None = None
    agent: str | None = None
    is_extracted: bool = True


@dataclass(frozen=True)
class VersionRecord:
    content: str
    changed_by: str
    reason: str
    changed_at: datetime | None


@dataclass(frozen=True)
class MemoryRecord:
    """A memory; `confidence` None means the source gave none (foreign formats)."""

    key: str
    label: str
    kind: str
    content: str
    confidence: str | None = None
    status: str = "active"
    source: str = "imported"
    importance: str = "normal"
    evidence_count: int = 1
    payload: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    occurred_at: datetime | None = None
    valid_to: datetime | None = None
    last_used_at: datetime | None = None
    mode: str | None = None
    session_key: str | None = None
    versions: tuple[VersionRecord, ...] = ()


@dataclass(frozen=True)
class SkippedRecord:
    """An item read but not imported, and why (the receipt lists it)."""

    key: str
    label: str
    reason: str


Record = MemoryRecord | SessionRecord | SkippedRecord
