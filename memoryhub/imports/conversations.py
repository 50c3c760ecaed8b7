"""ChatGPT's and Claude's conversations.json, read one conversation at a time into sessions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from django.utils.translation import gettext_noop

from .records import ImportFileError, MessageRecord, Record, SessionRecord, SkippedRecord
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

_CHATGPT_ROLES = {"user": "user", "assistant": "assistant"}
# Exports have written the sender as "human", "Human" and "user" over time.
_CLAUDE_SENDERS = {"human": "user", "user": "user", "assistant": "assistant"}


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


def chatgpt_conversation(raw: Any, where: str) -> Record:
    item = require_object(raw, where)
    mapping = item.get("mapping")
    source_id = id_of(item.get("conversation_id") or item.get("id"))
    if not isinstance(mapping, dict):
        raise ImportFileError(gettext_noop("{where} has no 'mapping' of messages"), where=where)
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
    key = f"chatgpt:{source_id}" if source_id else content_key("chatgpt", *messages)
    if not messages:
        return SkippedRecord(key=key, label=label, reason="no text messages")
    started = parse_when(item.get("create_time"), where=label) or messages[0].created_at
    ended = parse_when(item.get("update_time"), where=label) or messages[-1].created_at
    return SessionRecord(
        key=key, label=label, messages=tuple(messages), started_at=started, ended_at=ended
    )


def claude_conversation(raw: Any, where: str) -> Record:
    item = require_object(raw, where)
    chat = item.get("chat_messages")
    source_id = id_of(item.get("uuid"))
    if not isinstance(chat, list):
        raise ImportFileError(gettext_noop("{where} has no list of 'chat_messages'"), where=where)
    label = f"conversation {source_id}" if source_id else where
    messages = []
    for index, raw_message in enumerate(chat):
        message = require_object(raw_message, f"{label}, message {index}")
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
    key = f"claude:{source_id}" if source_id else content_key("claude", *messages)
    if not messages:
        return SkippedRecord(key=key, label=label, reason="no text messages")
    started = parse_when(item.get("created_at"), where=label) or messages[0].created_at
    ended = parse_when(item.get("updated_at"), where=label) or messages[-1].created_at
    return SessionRecord(
        key=key, label=label, messages=tuple(messages), started_at=started, ended_at=ended
    )


def read_conversations(opener: Opener, read_one: Callable[[Any, str], Record]) -> Iterator[Record]:
    for index, (_, value) in enumerate(objects_at(events_of(opener), frozenset({"item"}))):
        yield read_one(value, f"conversation {index}")
