"""Tell an import file's format, and read MemoryHub exports, Mem0 and OpenMemory memories.

One memory or one conversation is held at a time, never the whole file (ijson, streams.py).
Every reader raises ImportFileError naming the line (bad JSON) or the item (a wrong shape); no
text of the file is quoted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.utils.translation import gettext_noop

from memoryhub.models import ImportFormat

from .conversations import chatgpt_conversation, claude_conversation, read_conversations
from .records import (
    ImportFileError,
    MemoryRecord,
    MessageRecord,
    Record,
    SessionRecord,
    SkippedRecord,
    VersionRecord,
)
from .streams import (
    Opener,
    content_key,
    events_of,
    objects_at,
    parse_when,
    require_object,
)
from .streams import (
    source_id as id_of,
)

__all__ = ["Opener", "detect_format", "read_records"]

MEMORYHUB_FORMAT = "memoryhub-export/1"
ZIP_MAGIC = b"PK\x03\x04"
# How far into the file detection looks before it gives up.
DETECTION_EVENTS = 2000
_MEM0_PREFERENCE_CATEGORIES = frozenset({"user_preferences", "preferences"})


def detect_format(opener: Opener) -> str:
    """Tell the format from the first items of the file; raise ImportFileError if none fits."""
    with opener() as stream:
        if stream.read(4) == ZIP_MAGIC:
            raise ImportFileError(
                gettext_noop(
                    "the file is a zip archive: unzip it first (from OpenMemory's backup, upload "
                    "its memories.json)"
                ),
                code="import_unrecognised",
            )
    top_keys: set[str] = set()
    item_keys: set[str] = set()
    for count, (prefix, event, value) in enumerate(events_of(opener)):
        if prefix == "format" and event == "string" and value == MEMORYHUB_FORMAT:
            return ImportFormat.MEMORYHUB
        if prefix == "" and event == "map_key":
            top_keys.add(value)
            if value == "results":
                return ImportFormat.MEM0
            # OpenMemory's backup (memories.json of its export zip) opens with user, then apps.
            if value == "export_meta" or {"user", "apps"} <= top_keys:
                return ImportFormat.OPENMEMORY
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
        gettext_noop(
            "the file is none of the formats we read (a MemoryHub export, Mem0 memories, "
            "OpenMemory's memories.json, or a ChatGPT or Claude conversations.json)"
        ),
        code="import_unrecognised",
    )


# MemoryHub's own export (memoryhub/queries/export.py).


def _memoryhub_session(raw: Any, mode: str, where: str) -> SessionRecord:
    item = require_object(raw, where)
    source_id = id_of(item.get("id"))
    messages_raw = item.get("messages") or []
    if source_id is None or not isinstance(messages_raw, list):
        raise ImportFileError(
            gettext_noop("{where} has no id or its messages are not a list"), where=where
        )
    messages = []
    for index, message in enumerate(messages_raw):
        entry = require_object(message, f"{where}, message {index}")
        if not isinstance(entry.get("content"), str) or entry.get("role") not in (
            "user",
            "assistant",
        ):
            raise ImportFileError(
                gettext_noop("{where} has no role or no text"), where=f"{where}, message {index}"
            )
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
    item = require_object(raw, where)
    source_id = id_of(item.get("id"))
    if source_id is None or not isinstance(item.get("content"), str):
        raise ImportFileError(gettext_noop("{where} has no id or no content"), where=where)
    versions = []
    for index, version in enumerate(item.get("previous_versions") or []):
        entry = require_object(version, f"{where}, version {index}")
        if not isinstance(entry.get("content"), str):
            raise ImportFileError(
                gettext_noop("{where} has no content"), where=f"{where}, version {index}"
            )
        versions.append(
            VersionRecord(
                content=entry["content"],
                changed_by=str(entry.get("changed_by") or "import")[:16],
                reason=str(entry.get("reason") or "edit")[:32],
                changed_at=parse_when(entry.get("changed_at"), where=f"{where}, version {index}"),
            )
        )
    details = item.get("details")
    session_id = id_of(item.get("session_id"))
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


# How an error names one item of a list ("mode work, memory 3"; words.py puts it into words).
_ITEM_NOUN = {"sessions": "session", "memories": "memory"}


def _read_memoryhub(opener: Opener) -> Iterator[Record]:
    # Two passes: every session first, so that a memory finds the session it came from.
    for wanted in ("sessions", "memories"):
        mode = "personal"
        counter = 0
        prefixes = frozenset({"modes.item.slug", f"modes.item.{wanted}.item"})
        for prefix, value in objects_at(events_of(opener), prefixes):
            if prefix == "modes.item.slug":
                mode, counter = str(value), 0
                continue
            where = f"mode {mode}, {_ITEM_NOUN[wanted]} {counter}"
            counter += 1
            if wanted == "sessions":
                yield _memoryhub_session(value, mode, where)
            else:
                yield _memoryhub_memory(value, mode, where)


# Mem0: get_all (a list, or {"results": [...]}) and the self-hosted server's memories list.


def _mem0_memory(raw: Any, where: str) -> Record:
    item = require_object(raw, where)
    text = item.get("memory")
    if not isinstance(text, str):
        raise ImportFileError(gettext_noop("{where} has no 'memory' text"), where=where)
    source_id = id_of(item.get("id"))
    key = f"mem0:{source_id}" if source_id else content_key("mem0", text)
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
    for index, (_, value) in enumerate(objects_at(events_of(opener), prefixes)):
        yield _mem0_memory(value, f"item {index}")


# OpenMemory (mem0's self-hosted server): memories.json of the zip its backup route exports:
# {"user", "apps", "categories": [{id, name}], "memories": [{id, content, metadata, state,
# created_at, updated_at, category_ids}], "status_history", ...}.

# Archived and deleted memories were put away by their owner: not brought back.
_OPENMEMORY_PUT_AWAY = {"archived": "archived in OpenMemory", "deleted": "deleted in OpenMemory"}


def _openmemory_memory(raw: Any, categories: dict[str, str], where: str) -> Record:
    item = require_object(raw, where)
    text = item.get("content")
    if not isinstance(text, str):
        raise ImportFileError(gettext_noop("{where} has no 'content' text"), where=where)
    source_id = id_of(item.get("id"))
    key = f"openmemory:{source_id}" if source_id else content_key("openmemory", text)
    label = f"memory {source_id}" if source_id else where
    state = str(item.get("state") or "active")
    if state in _OPENMEMORY_PUT_AWAY:
        return SkippedRecord(key=key, label=label, reason=_OPENMEMORY_PUT_AWAY[state])
    if not text.strip():
        return SkippedRecord(key=key, label=label, reason="empty memory")
    ids = item.get("category_ids")
    names = [categories.get(str(i), str(i)) for i in ids] if isinstance(ids, list) else []
    payload: dict[str, Any] = {"imported_from": "openmemory", "categories": names}
    if source_id:
        payload["openmemory_id"] = source_id
    metadata = item.get("metadata")
    if isinstance(metadata, dict) and metadata:
        payload["metadata"] = metadata
    created_at = parse_when(item.get("created_at"), where=label)
    return MemoryRecord(
        key=key,
        label=label,
        kind="preference" if _MEM0_PREFERENCE_CATEGORIES & set(names) else "fact",
        content=text,
        payload=payload,
        created_at=created_at,
        updated_at=parse_when(item.get("updated_at"), where=label) or created_at,
    )


def _read_openmemory(opener: Opener) -> Iterator[Record]:
    # Two passes: the category names (a short list) first, then one memory at a time.
    categories: dict[str, str] = {}
    for _, value in objects_at(events_of(opener), frozenset({"categories.item"})):
        if isinstance(value, dict) and value.get("id") is not None:
            categories[str(value["id"])] = str(value.get("name") or value["id"])
    memories = objects_at(events_of(opener), frozenset({"memories.item"}))
    for index, (_, value) in enumerate(memories):
        yield _openmemory_memory(value, categories, f"memory {index}")


def read_records(opener: Opener, file_format: str) -> Iterator[Record]:
    """The file's records in a stable order (a resumed import skips the first ones)."""
    if file_format == ImportFormat.MEMORYHUB:
        return _read_memoryhub(opener)
    if file_format == ImportFormat.MEM0:
        return _read_mem0(opener)
    if file_format == ImportFormat.CHATGPT:
        return read_conversations(opener, chatgpt_conversation)
    if file_format == ImportFormat.CLAUDE:
        return read_conversations(opener, claude_conversation)
    if file_format == ImportFormat.OPENMEMORY:
        return _read_openmemory(opener)
    raise ImportFileError(
        gettext_noop("unknown format {file_format!r}"),
        file_format=file_format,
        code="import_unrecognised",
    )
