"""Write a JSON document whose large arrays are iterators, a piece at a time, never whole.

The text is exactly `json.dumps(document, cls=DjangoJSONEncoder, ensure_ascii=False, indent=2)`
of the same document with each `Streamed` turned into a list: a streamed export is the same
file as the one built in memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

INDENT = "  "
# Pieces are joined up to about this many characters before they are handed on: one HTTP
# body chunk each, rather than one per comma.
PIECE_CHARS = 64 * 1024


class Streamed:
    """A JSON array written item by item as its iterable yields them."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items


def _holds_stream(value: Any) -> bool:
    if isinstance(value, Streamed):
        return True
    if isinstance(value, dict):
        return any(_holds_stream(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_stream(item) for item in value)
    return False


def _whole(value: Any, level: int) -> str:
    text = json.dumps(value, cls=DjangoJSONEncoder, ensure_ascii=False, indent=len(INDENT))
    # Strings never hold a raw newline in JSON: every newline here is indentation.
    return text.replace("\n", "\n" + INDENT * level)


def _array(items: Iterable[Any], level: int) -> Iterator[str]:
    is_empty = True
    for item in items:
        yield ("[" if is_empty else ",") + "\n" + INDENT * (level + 1)
        yield from _encode(item, level + 1)
        is_empty = False
    yield "[]" if is_empty else "\n" + INDENT * level + "]"


def _encode(value: Any, level: int) -> Iterator[str]:
    if isinstance(value, Streamed):
        yield from _array(value.items, level)
    elif isinstance(value, list) and _holds_stream(value):
        yield from _array(value, level)
    elif isinstance(value, dict) and _holds_stream(value):
        for n, (key, item) in enumerate(value.items()):
            yield ("{" if n == 0 else ",") + "\n" + INDENT * (level + 1) + _whole(key, 0) + ": "
            yield from _encode(item, level + 1)
        yield "\n" + INDENT * level + "}"
    else:
        yield _whole(value, level)


def json_pieces(document: Any) -> Iterator[str]:
    """The document's JSON text in pieces of about PIECE_CHARS characters."""
    buffer: list[str] = []
    size = 0
    for part in _encode(document, 0):
        buffer.append(part)
        size += len(part)
        if size >= PIECE_CHARS:
            yield "".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer)
