"""The `record_memories` tool an LLM fills in: its JSON schema and a strict parser of its input.

The parser accepts the whole tool input or nothing: a missing field or a wrong type raises
`ExtractionError`, so a run never stores half-understood output.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any, TypeVar, cast

from memoryhub import text_patterns

from .base import (
    EVENT_TYPES,
    IMPORTANCES,
    ITEM_KINDS,
    SINGLE_VALUED_SLOTS,
    EventType,
    ExtractedItem,
    ExtractionError,
    Importance,
    ItemKind,
    SessionSummary,
)

TOOL_NAME = "record_memories"

_NULLABLE_STRING = {"type": ["string", "null"]}
_REFS = {
    "type": "array",
    "items": {"type": "string"},
    "description": 'Refs of the messages the quote comes from, e.g. ["m3"].',
}

INPUT_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "summary": {
            "type": ["object", "null"],
            "description": (
                "At most 5 sentences on the whole session so far, within the character limit "
                "given with the transcript; null when nothing is worth recalling."
            ),
            "properties": {
                "text": {"type": "string"},
                "topic": {"type": "string", "description": "A few words."},
                "message_refs": _REFS,
            },
            "required": ["text", "topic", "message_refs"],
        },
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": list(ITEM_KINDS)},
                    "content": {
                        "type": "string",
                        "description": "One self-contained sentence, in the user's language.",
                    },
                    "quote": {
                        "type": "string",
                        "description": "Exact words copied from one message that support it.",
                    },
                    "message_refs": _REFS,
                    "slot": {
                        **_NULLABLE_STRING,
                        "description": "For single-valued facts: one of "
                        + ", ".join(sorted(SINGLE_VALUED_SLOTS))
                        + ', or "subject:attribute" (e.g. "sister:name").',
                    },
                    "value": {**_NULLABLE_STRING, "description": "The slot's value, e.g. Alice."},
                    "importance": {"type": "string", "enum": list(IMPORTANCES)},
                    "event_type": {"type": ["string", "null"], "enum": [*EVENT_TYPES, None]},
                    "event_date": {**_NULLABLE_STRING, "description": "YYYY-MM-DD"},
                    "due_date": {**_NULLABLE_STRING, "description": "YYYY-MM-DD"},
                    "topics": {"type": "array", "items": {"type": "string"}},
                    "is_explicit": {
                        "type": "boolean",
                        "description": 'The user asked to remember it ("remember that …").',
                    },
                    "is_declared": {
                        "type": "boolean",
                        "description": (
                            "The user said it outright about themself in the first person "
                            '("My name is …", "I prefer …", "Always …"); false when inferred.'
                        ),
                    },
                    "is_correction": {
                        "type": "boolean",
                        "description": "The user corrects something said or stored earlier.",
                    },
                },
                "required": ["kind", "content", "quote", "message_refs"],
            },
        },
    },
    "required": ["summary", "items"],
}

TOOL_DESCRIPTION = (
    "Record the session summary and the memories worth keeping from the transcript. "
    "Call it exactly once; an empty items list is a valid answer."
)

_GENERIC_SLOT = text_patterns.compile(r"^[^:\s][^:]*:[^:]*[^:\s]$")
_T = TypeVar("_T")


def parse_tool_input(
    data: object, refs: Mapping[str, str]
) -> tuple[SessionSummary | None, list[ExtractedItem]]:
    """Validate the tool input and map message refs back to message ids; raise ExtractionError."""
    root = _mapping(data, "input")
    summary_data = _field(root, "summary", "input")
    summary = None if summary_data is None else _parse_summary(summary_data, refs)
    items_data = _typed(_field(root, "items", "input"), list, "items")
    items = [_parse_item(entry, refs, f"items[{index}]") for index, entry in enumerate(items_data)]
    return summary, items


def _parse_summary(data: object, refs: Mapping[str, str]) -> SessionSummary:
    summary = _mapping(data, "summary")
    return SessionSummary(
        text=_text(summary, "text", "summary"),
        topic=_text(summary, "topic", "summary"),
        quote_message_ids=_message_ids(summary, refs, "summary"),
    )


def _parse_item(data: object, refs: Mapping[str, str], where: str) -> ExtractedItem:
    item = _mapping(data, where)
    kind = cast(ItemKind, _choice(item, "kind", ITEM_KINDS, where, required=True))
    importance = _choice(item, "importance", IMPORTANCES, where) or "normal"
    event_type = _choice(item, "event_type", EVENT_TYPES, where)
    topics = _typed(item.get("topics", []), list, f"{where}.topics")
    return ExtractedItem(
        kind=kind,
        content=_text(item, "content", where),
        quote=_text(item, "quote", where),
        message_ids=_message_ids(item, refs, where),
        slot=_slot(_optional_str(item, "slot", where)),
        value=_optional_str(item, "value", where),
        importance=cast(Importance, importance),
        event_type=cast(EventType | None, event_type),
        event_date=_date(item, "event_date", where),
        due_date=_date(item, "due_date", where),
        topics=tuple(_typed(topic, str, f"{where}.topics") for topic in topics),
        is_explicit=_typed(item.get("is_explicit", False), bool, f"{where}.is_explicit"),
        is_declared=_typed(item.get("is_declared", False), bool, f"{where}.is_declared"),
        is_correction=_typed(item.get("is_correction", False), bool, f"{where}.is_correction"),
    )


def _slot(raw: str | None) -> str | None:
    if raw is None or not raw.strip():
        return None
    slot = " ".join(raw.casefold().split())
    if slot in SINGLE_VALUED_SLOTS or _GENERIC_SLOT.match(slot):
        return slot
    # A bare attribute the model invented ("favourite_colour") is the user's.
    return f"user:{slot}"


def _message_ids(data: Mapping[str, Any], refs: Mapping[str, str], where: str) -> tuple[str, ...]:
    raw = _typed(_field(data, "message_refs", where), list, f"{where}.message_refs")
    # An unknown ref is kept as is: no message has that id, so grounding rejects the item.
    return tuple(
        refs.get(ref, ref) for ref in (_typed(r, str, f"{where}.message_refs") for r in raw)
    )


def _date(data: Mapping[str, Any], key: str, where: str) -> date | None:
    raw = _optional_str(data, key, where)
    if raw is None:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise ExtractionError(f"{where}.{key} is not a YYYY-MM-DD date") from None


def _choice(
    data: Mapping[str, Any],
    key: str,
    allowed: tuple[str, ...],
    where: str,
    *,
    required: bool = False,
) -> str | None:
    raw = _field(data, key, where) if required else data.get(key)
    if raw is None and not required:
        return None
    if raw not in allowed:
        raise ExtractionError(f"{where}.{key} is not one of {', '.join(allowed)}")
    return cast(str, raw)


def _text(data: Mapping[str, Any], key: str, where: str) -> str:
    text = _typed(_field(data, key, where), str, f"{where}.{key}").strip()
    if not text:
        raise ExtractionError(f"{where}.{key} is empty")
    return text


def _optional_str(data: Mapping[str, Any], key: str, where: str) -> str | None:
    raw = data.get(key)
    return None if raw is None else _typed(raw, str, f"{where}.{key}")


def _field(data: Mapping[str, Any], key: str, where: str) -> object:
    if key not in data:
        raise ExtractionError(f"{where}.{key} is missing")
    return data[key]


def _mapping(data: object, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ExtractionError(f"{where} is not an object")
    return cast(Mapping[str, Any], data)


def _typed(value: object, expected: type[_T], where: str) -> _T:
    # bool is an int in Python; a JSON true where a number or text belongs is still wrong.
    if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
        raise ExtractionError(f"{where} is not a {expected.__name__}")
    return value
