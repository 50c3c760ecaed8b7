"""Read each import format as a stream of records, with bounded memory (ijson).

One conversation or one memory is held at a time, never the whole file. Every reader raises
ImportFileError naming the line (bad JSON) or the item (a wrong shape); no text is quoted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, Protocol

import ijson

from memoryhub.models import ImportFormat

from .records import (
    ImportFileError,
    MemoryRecord,
    MessageRecord,
    Record,
    SessionRecord,
    SkippedRecord,
    VersionRecord,
)


class Readable(Protocol):
    """A binary stream ijson can read, closed by `with` (a file, or a sealed upload)."""

    def read(self, size: int = -1, /) -> bytes: ...
    def __enter__(self) -> Readable: ...
    def __exit__(self, *exc: object) -> None: ...


Opener = Callable[[], Readable]

MEMORYHUB_FORMAT = "memoryhub-export/1"
# How far into the file detection looks before it gives up.
DETECTION_EVENTS = 2000
_SCALARS = frozenset({"null", "boolean", "integer", "double", "number", "string"})
_MEM0_PREFERENCE_CATEGORIES = frozenset({"user_preferences", "preferences"})
_CHATGPT_ROLES = {"user": "user", "assistant": "assistant"}
# Exports have written the sender as "human", "Human" and "user" over time.
_CLAUDE_SENDERS = {"human": "user", "user": "user", "assistant": "assistant"}


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


def _events(opener: Opener) -> Iterator[tuple[str, str, Any]]:
    """ijson's (prefix, event, value) of the file; bad JSON becomes ImportFileError with its line."""
    with opener() as stream:
        try:
            yield from ijson.parse(stream, use_float=True)
        except ijson.JSONError:
            pass
        else:
            return
    line = _line_of_error(opener)
    raise ImportFileError(f"the file is not valid JSON: the error is near line {line}")


def _objects_at(
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


def detect_format(opener: Opener) -> str:
    """Tell the format from the first items of the file; raise ImportFileError if none fits."""
    top_keys: set[str] = set()
    item_keys: set[str] = set()
    for count, (prefix, event, value) in enumerate(_events(opener)):
        if prefix == "format" and event == "string" and value == MEMORYHUB_FORMAT:
            return ImportFormat.MEMORYHUB
        if prefix == "" and event == "map_key":
            top_keys.add(value)
            if value == "results":
                return ImportFormat.MEM0
        if prefix in ("item", "results.item") and event == "map_key":
            item_keys.add(value)
        if (prefix == "item" and event == "end_map") or count > DETECTION_EVENTS:
            break
    if "mapping" in item_keys:
        return ImportFormat.CHATGPT
    if "chat_messages" in item_keys:
        return ImportFormat.CLAUDE
    if "memory" in item_keys:
        return ImportFormat.MEM0
    raise ImportFileError(
        "the file is none of the formats we read (a MemoryHub export, Mem0 memories, or a "
        "ChatGPT or Claude conversations.json)",
        code="import_unrecognised",
    )


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
    raise ImportFileError(f"{where}: a date is neither ISO 8601 nor a Unix time")


def _content_key(prefix: str, *parts: Any) -> str:
    digest = hashlib.sha256("\x1f".join(str(part) for part in parts).encode("utf-8", "replace"))
    return f"{prefix}:sha256:{digest.hexdigest()[:40]}"


def _source_id(value: Any) -> str | None:
    if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
        return str(value).strip()[:120]
    return None


def _require(item: Any, where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ImportFileError(f"{where} is not a JSON object")
    return item


# MemoryHub's own export (memoryhub/queries/export.py).


def _memoryhub_session(raw: Any, mode: str, where: str) -> SessionRecord:
    item = _require(raw, where)
    source_id = _source_id(item.get("id"))
    messages_raw = item.get("messages") or []
    if source_id is None or not isinstance(messages_raw, list):
        raise ImportFileError(f"{where} has no id or its messages are not a list")
    messages = []
    for index, message in enumerate(messages_raw):
        entry = _require(message, f"{where}, message {index}")
        if not isinstance(entry.get("content"), str) or entry.get("role") not in (
            "user",
            "assistant",
        ):
            raise ImportFileError(f"{where}, message {index} has no role or no text")
        messages.append(
            MessageRecord(
                role=entry["role"],
                content=entry["content"],
                created_at=parse_when(entry.get("created_at"), where=f"{where}, message {index}"),
            )
        )
    return SessionRecord(
        key=f"memoryhub:session:{source_id}",
        label=f"session {source_id}",
        messages=tuple(messages),
        started_at=parse_when(item.get("started_at"), where=where),
        ended_at=parse_when(item.get("ended_at"), where=where),
        mode=mode,
        agent=item.get("agent") if isinstance(item.get("agent"), str) else None,
        # Its memories are in the export: extracting it again would make them twice.
        is_extracted=False,
    )


def _memoryhub_memory(raw: Any, mode: str, where: str) -> MemoryRecord:
    item = _require(raw, where)
    source_id = _source_id(item.get("id"))
    if source_id is None or not isinstance(item.get("content"), str):
        raise ImportFileError(f"{where} has no id or no content")
    versions = []
    for index, version in enumerate(item.get("previous_versions") or []):
        entry = _require(version, f"{where}, version {index}")
        if not isinstance(entry.get("content"), str):
            raise ImportFileError(f"{where}, version {index} has no content")
        versions.append(
            VersionRecord(
                content=entry["content"],
                changed_by=str(entry.get("changed_by") or "import")[:16],
                reason=str(entry.get("reason") or "edit")[:32],
                changed_at=parse_when(entry.get("changed_at"), where=f"{where}, version {index}"),
            )
        )
    details = item.get("details")
    session_id = _source_id(item.get("session_id"))
    return MemoryRecord(
        key=f"memoryhub:memory:{source_id}",
        label=f"memory {source_id}",
        kind=str(item.get("kind")),
        content=item["content"],
        confidence=str(item["confidence"]) if item.get("confidence") else None,
        status=str(item.get("status") or "active"),
        source=str(item.get("source") or "imported"),
        importance=str(item.get("importance") or "normal"),
        evidence_count=max(1, int(item.get("evidence_count") or 1)),
        payload=details if isinstance(details, dict) else {},
        created_at=parse_when(item.get("created_at"), where=where),
        updated_at=parse_when(item.get("updated_at"), where=where),
        occurred_at=parse_when(item.get("occurred_at"), where=where),
        valid_to=parse_when(item.get("valid_to"), where=where),
        last_used_at=parse_when(item.get("last_used_at"), where=where),
        mode=mode,
        session_key=f"memoryhub:session:{session_id}" if session_id else None,
        versions=tuple(versions),
    )


def _read_memoryhub(opener: Opener) -> Iterator[Record]:
    # Two passes: every session first, so that a memory finds the session it came from.
    for wanted in ("sessions", "memories"):
        mode = "personal"
        counter = 0
        prefixes = frozenset({"modes.item.slug", f"modes.item.{wanted}.item"})
        for prefix, value in _objects_at(_events(opener), prefixes):
            if prefix == "modes.item.slug":
                mode, counter = str(value), 0
                continue
            where = f"mode {mode}, {wanted[:-1]} {counter}"
            counter += 1
            if wanted == "sessions":
                yield _memoryhub_session(value, mode, where)
            else:
                yield _memoryhub_memory(value, mode, where)


# Mem0: get_all (a list, or {"results": [...]}) and the self-hosted server's memories list.


def _mem0_memory(raw: Any, where: str) -> Record:
    item = _require(raw, where)
    text = item.get("memory")
    if not isinstance(text, str):
        raise ImportFileError(f"{where} has no 'memory' text")
    source_id = _source_id(item.get("id"))
    key = f"mem0:{source_id}" if source_id else _content_key("mem0", text)
    label = f"memory {source_id}" if source_id else where
    if not text.strip():
        return SkippedRecord(key=key, label=label, reason="empty memory")
    categories = item.get("categories")
    categories = [str(c) for c in categories] if isinstance(categories, list) else []
    metadata = item.get("metadata")
    kind = "preference" if _MEM0_PREFERENCE_CATEGORIES & set(categories) else "fact"
    payload: dict[str, Any] = {"imported_from": "mem0", "categories": categories}
    if source_id:
        payload["mem0_id"] = source_id
    if isinstance(metadata, dict) and metadata:
        payload["metadata"] = metadata
    if isinstance(item.get("user_id"), str):
        payload["mem0_user_id"] = item["user_id"]
    created_at = parse_when(item.get("created_at"), where=label)
    return MemoryRecord(
        key=key,
        label=label,
        kind=kind,
        content=text,
        payload=payload,
        created_at=created_at,
        updated_at=parse_when(item.get("updated_at"), where=label) or created_at,
    )


def _read_mem0(opener: Opener) -> Iterator[Record]:
    prefixes = frozenset({"item", "results.item"})
    for index, (_, value) in enumerate(_objects_at(_events(opener), prefixes)):
        yield _mem0_memory(value, f"item {index}")


# ChatGPT's data export: conversations.json, a list of conversations whose messages form a tree
# ("mapping": node id -> {message, parent, children}); the branch shown is current_node's.


def _chatgpt_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts")
    if isinstance(parts, list):
        # Images and files are objects among the parts: only the text comes in.
        return "\n".join(part for part in parts if isinstance(part, str)).strip()
    text = content.get("text")
    return text.strip() if isinstance(text, str) else ""


def _chatgpt_branch(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The nodes from the root to the current one; without current_node, the whole tree in time."""
    if isinstance(current, str) and current in mapping:
        branch = []
        node_id: Any = current
        seen: set[str] = set()
        while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            node = mapping[node_id]
            branch.append(node if isinstance(node, dict) else {})
            node_id = node.get("parent") if isinstance(node, dict) else None
        return branch[::-1]
    nodes = [node for node in mapping.values() if isinstance(node, dict)]
    return sorted(nodes, key=lambda node: _message_time(node.get("message")) or 0.0)


def _message_time(message: Any) -> float | None:
    if isinstance(message, dict) and isinstance(message.get("create_time"), int | float):
        return float(message["create_time"])
    return None


def _chatgpt_conversation(raw: Any, where: str) -> Record:
    item = _require(raw, where)
    mapping = item.get("mapping")
    source_id = _source_id(item.get("conversation_id") or item.get("id"))
    if not isinstance(mapping, dict):
        raise ImportFileError(f"{where} has no 'mapping' of messages")
    label = f"conversation {source_id}" if source_id else where
    messages = []
    for node in _chatgpt_branch(mapping, item.get("current_node")):
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        author = message.get("author")
        role = _CHATGPT_ROLES.get(str(author.get("role"))) if isinstance(author, dict) else None
        text = _chatgpt_text(message)
        if role is None or not text:  # System prompts, tool calls, images only.
            continue
        when = _message_time(message)
        messages.append(
            MessageRecord(
                role=role,
                content=text,
                created_at=parse_when(when, where=label) if when is not None else None,
            )
        )
    key = f"chatgpt:{source_id}" if source_id else _content_key("chatgpt", *messages)
    if not messages:
        return SkippedRecord(key=key, label=label, reason="no text messages")
    started = parse_when(item.get("create_time"), where=label) or messages[0].created_at
    ended = parse_when(item.get("update_time"), where=label) or messages[-1].created_at
    return SessionRecord(
        key=key, label=label, messages=tuple(messages), started_at=started, ended_at=ended
    )


def _claude_conversation(raw: Any, where: str) -> Record:
    item = _require(raw, where)
    chat = item.get("chat_messages")
    source_id = _source_id(item.get("uuid"))
    if not isinstance(chat, list):
        raise ImportFileError(f"{where} has no list of 'chat_messages'")
    label = f"conversation {source_id}" if source_id else where
    messages = []
    for index, raw_message in enumerate(chat):
        message = _require(raw_message, f"{label}, message {index}")
        role = _CLAUDE_SENDERS.get(str(message.get("sender")).lower())
        text = message.get("text")
        if not isinstance(text, str) or not text.strip():
            blocks = message.get("content")
            text = "\n".join(
                block["text"]
                for block in (blocks if isinstance(blocks, list) else [])
                if isinstance(block, dict) and isinstance(block.get("text"), str)
            )
        if role is None or not text.strip():
            continue
        messages.append(
            MessageRecord(
                role=role,
                content=text.strip(),
                created_at=parse_when(message.get("created_at"), where=f"{label}, message {index}"),
            )
        )
    key = f"claude:{source_id}" if source_id else _content_key("claude", *messages)
    if not messages:
        return SkippedRecord(key=key, label=label, reason="no text messages")
    started = parse_when(item.get("created_at"), where=label) or messages[0].created_at
    ended = parse_when(item.get("updated_at"), where=label) or messages[-1].created_at
    return SessionRecord(
        key=key, label=label, messages=tuple(messages), started_at=started, ended_at=ended
    )


def _read_conversations(opener: Opener, read_one: Callable[[Any, str], Record]) -> Iterator[Record]:
    for index, (_, value) in enumerate(_objects_at(_events(opener), frozenset({"item"}))):
        yield read_one(value, f"conversation {index}")


def read_records(opener: Opener, file_format: str) -> Iterator[Record]:
    """The file's records in a stable order (a resumed import skips the first ones)."""
    if file_format == ImportFormat.MEMORYHUB:
        return _read_memoryhub(opener)
    if file_format == ImportFormat.MEM0:
        return _read_mem0(opener)
    if file_format == ImportFormat.CHATGPT:
        return _read_conversations(opener, _chatgpt_conversation)
    if file_format == ImportFormat.CLAUDE:
        return _read_conversations(opener, _claude_conversation)
    raise ImportFileError(f"unknown format {file_format!r}", code="import_unrecognised")
