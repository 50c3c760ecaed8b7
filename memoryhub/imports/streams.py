"""Read a JSON file as a stream (ijson): the values at given places, dates, item checks.

Only the value being built is held in memory. Bad JSON is an ImportFileError naming its line.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, Protocol

import ijson
from django.utils.translation import gettext_noop

from .records import ImportFileError


class Readable(Protocol):
    """A binary stream ijson can read, closed by `with` (a file, or a sealed upload)."""

    def read(self, size: int = -1, /) -> bytes: ...
    def __enter__(self) -> Readable: ...
    def __exit__(self, *exc: object) -> None: ...


Opener = Callable[[], Readable]

_SCALARS = frozenset({"null", "boolean", "integer", "double", "number", "string"})


class _LineCounter:
    """A stream that counts the lines it has handed out."""

    def __init__(self, stream: Readable) -> None:
        self._stream = stream
        self.lines = 1

    def read(self, size: int = -1, /) -> bytes:
        block = self._stream.read(size)
        self.lines += block.count(b"\n")
        return block


def _line_of_error(opener: Opener) -> int:
    """The line of the first JSON error, found again with ijson's pure-Python backend.

    The C backend's errors carry no position. The Python one is read in small pieces through a
    line counter, so that the line it had reached when it failed is the error's (or the next).
    Only called on the error path; it reads the file once more, as a stream.
    """
    python_backend = ijson.get_backend("python")
    with opener() as stream:
        counter = _LineCounter(stream)
        try:
            for _ in python_backend.basic_parse(counter, buf_size=16):
                pass
        except ijson.JSONError as error:
            # "Unexpected symbol '@' at 123": a byte offset, so the exact line.
            words = str(error).rsplit(" ", 1)
            if len(words) == 2 and words[1].isdigit():
                return _line_at(opener, int(words[1]))
        return counter.lines


def _line_at(opener: Opener, offset: int) -> int:
    with opener() as stream:
        head = stream.read(offset) if offset < (1 << 20) else b""
        if len(head) == offset:
            return head.count(b"\n") + 1
    with opener() as stream:
        counter = _LineCounter(stream)
        while offset > 0:
            block = counter.read(min(offset, 1 << 16))
            if not block:
                break
            offset -= len(block)
        return counter.lines


def events_of(opener: Opener) -> Iterator[tuple[str, str, Any]]:
    """ijson's (prefix, event, value) of the file; bad JSON becomes ImportFileError with its line."""
    with opener() as stream:
        try:
            yield from ijson.parse(stream, use_float=True)
        except ijson.JSONError:
            pass
        else:
            return
    line = _line_of_error(opener)
    raise ImportFileError(
        gettext_noop("the file is not valid JSON: the error is near line {line}"), line=line
    )


def objects_at(
    events: Iterator[tuple[str, str, Any]], prefixes: frozenset[str]
) -> Iterator[tuple[str, Any]]:
    """Each value found at one of `prefixes`, built whole (only it is held in memory)."""
    builder: ijson.ObjectBuilder | None = None
    target = ""
    for prefix, event, value in events:
        if builder is not None:
            builder.event(event, value)
            if prefix == target and event in ("end_map", "end_array"):
                yield target, builder.value
                builder = None
        elif prefix in prefixes:
            if event in ("start_map", "start_array"):
                builder = ijson.ObjectBuilder()
                builder.event(event, value)
                target = prefix
            elif event in _SCALARS:
                yield prefix, value


def parse_when(value: Any, *, where: str) -> datetime | None:
    """An ISO 8601 string or a Unix time as an aware datetime (UTC if it names no zone)."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, int | float):
            return datetime.fromtimestamp(float(value), tz=UTC)
        if isinstance(value, str):
            moment = datetime.fromisoformat(value)
            return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        pass
    raise ImportFileError(
        gettext_noop("{where}: a date is neither ISO 8601 nor a Unix time"), where=where
    )


def content_key(prefix: str, *parts: Any) -> str:
    digest = hashlib.sha256("\x1f".join(str(part) for part in parts).encode("utf-8", "replace"))
    return f"{prefix}:sha256:{digest.hexdigest()[:40]}"


def source_id(value: Any) -> str | None:
    if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
        return str(value).strip()[:120]
    return None


def require_object(item: Any, where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ImportFileError(gettext_noop("{where} is not a JSON object"), where=where)
    return item
