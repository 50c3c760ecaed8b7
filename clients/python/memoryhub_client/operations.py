"""Every operation of the MemoryHub agent API, written once for the sync and async clients.

`OPERATIONS` names each method's HTTP method and path; a test in the MemoryHub repository
fails when it and the server's OpenAPI schema disagree (a missing operation, a path, a
parameter or a body field the other side does not know).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

JSON = dict[str, Any]
T = TypeVar("T")

DEFAULT_MODE = "personal"
Kind = Literal[
    "fact", "preference", "procedure", "episode", "session_summary", "open_item", "theme"
]
Importance = Literal["low", "normal", "high", "critical"]

OPERATIONS: dict[str, tuple[str, str]] = {
    "create_user": ("POST", "/users"),
    "get_user": ("GET", "/users/{external_id}"),
    "create_user_link": ("POST", "/users/{external_id}/link"),
    "remember": ("POST", "/memories"),
    "remember_many": ("POST", "/memories/batch"),
    "list_memories": ("GET", "/memories"),
    "get_memory": ("GET", "/memories/{memory_id}"),
    "edit_memory": ("PATCH", "/memories/{memory_id}"),
    "delete_memory": ("DELETE", "/memories/{memory_id}"),
    "forget": ("POST", "/forget"),
    "get_forget_task": ("GET", "/forget/tasks/{task_id}"),
    "add_journal_entry": ("POST", "/journal"),
    "list_journal": ("GET", "/journal"),
    "resolve_journal_entry": ("POST", "/journal/{entry_id}/resolve"),
    "get_profile": ("GET", "/profile"),
    "list_open_items": ("GET", "/open-items"),
    "start_session": ("POST", "/sessions"),
    "add_message": ("POST", "/sessions/{session_id}/messages"),
    "end_session": ("POST", "/sessions/{session_id}/end"),
    "put_working_memory": ("PUT", "/sessions/{session_id}/working-memory"),
    "get_working_memory": ("GET", "/sessions/{session_id}/working-memory"),
    "search": ("POST", "/search"),
    "get_context": ("POST", "/context"),
    "report_answer": ("POST", "/answers"),
    "answer_feedback": ("POST", "/answers/{answer_id}/feedback"),
    "propose_knowledge": ("POST", "/knowledge/candidates"),
    "graph_insights": ("GET", "/graph/insights"),
    "list_webhooks": ("GET", "/webhooks"),
    "create_webhook": ("POST", "/webhooks"),
    "rotate_webhook_secret": ("POST", "/webhooks/{webhook_id}/rotate"),
    "disable_webhook": ("POST", "/webhooks/{webhook_id}/disable"),
    "enable_webhook": ("POST", "/webhooks/{webhook_id}/enable"),
    "list_webhook_deliveries": ("GET", "/webhooks/{webhook_id}/deliveries"),
    "replay_webhook_delivery": ("POST", "/webhooks/deliveries/{delivery_id}/replay"),
    "import_file": ("POST", "/imports"),
    "get_import": ("GET", "/imports/{import_id}"),
    "keep_imported": ("POST", "/imports/{import_id}/keep"),
    "discard_imported": ("POST", "/imports/{import_id}/discard"),
}
# Writes that are safe to send twice as they are: the server treats a repeat as the same call.
IDEMPOTENT_WRITES = frozenset(
    {"create_user", "end_session", "put_working_memory", "resolve_journal_entry"}
)


@dataclass(frozen=True)
class Call:
    """One API call, ready to send."""

    operation: str
    method: str
    path: str
    query: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    # True when sending it twice does no harm, so a broken connection may be retried too.
    is_repeatable: bool = False
    # Multipart files ({field: (filename, bytes, content type)}), sent instead of a JSON body.
    files: dict[str, tuple[str, bytes, str]] | None = None


def _present(values: Mapping[str, Any]) -> dict[str, Any]:
    return {
        name: value.isoformat() if isinstance(value, datetime) else value
        for name, value in values.items()
        if value is not None
    }


def new_idempotency_key() -> str:
    return f"mhc-{uuid.uuid4()}"


class Operations(Generic[T]):
    """The API's operations; subclasses send a `Call` and return T (a result, or an awaitable)."""

    def _send(self, call: Call) -> T:
        raise NotImplementedError

    def _call(
        self,
        operation: str,
        *,
        path: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        is_repeatable: bool | None = None,
        files: dict[str, tuple[str, bytes, str]] | None = None,
    ) -> T:
        method, template = OPERATIONS[operation]
        url = template.format(**{name: str(value) for name, value in (path or {}).items()})
        if is_repeatable is None:
            is_repeatable = method == "GET" or operation in IDEMPOTENT_WRITES
        return self._send(
            Call(operation, method, url, _present(query or {}), body, is_repeatable, files)
        )

    # Users

    def create_user(self, external_id: str, *, display_name: str = "") -> T:
        """Create an end user of the agent's workspace, or get the one with this external_id."""
        return self._call(
            "create_user", body={"external_id": external_id, "display_name": display_name}
        )

    def get_user(self, external_id: str = "me") -> T:
        """One user by external_id or UUID; `me` is a personal key's own user."""
        return self._call("get_user", path={"external_id": external_id})

    def create_user_link(self, external_id: str, *, email: str) -> T:
        """A one-time link that lets the person's login reach this user."""
        return self._call(
            "create_user_link", path={"external_id": external_id}, body={"email": email}
        )

    # Memories

    def remember(
        self,
        user: str | None,
        content: str,
        *,
        kind: Kind = "fact",
        mode: str = DEFAULT_MODE,
        importance: Importance = "normal",
        source: str | None = None,
        payload: JSON | None = None,
        occurred_at: datetime | None = None,
        idempotency_key: str | None = None,
    ) -> T:
        """Remember one item. An idempotency key is generated when none is given, so a retry
        after a lost answer returns the first write instead of storing it twice."""
        body = _present(
            {
                "user": user,
                "mode": mode,
                "kind": kind,
                "content": content,
                "importance": importance,
                "source": source,
                "payload": payload,
                "occurred_at": occurred_at,
                "idempotency_key": idempotency_key or new_idempotency_key(),
            }
        )
        return self._call("remember", body=body, is_repeatable=True)

    def remember_many(
        self,
        user: str | None,
        items: Sequence[JSON],
        *,
        mode: str = DEFAULT_MODE,
        idempotency_key: str | None = None,
    ) -> T:
        """Remember several items, all or none (idempotency key generated as for `remember`)."""
        body = _present(
            {
                "user": user,
                "mode": mode,
                "items": [_present(item) for item in items],
                "idempotency_key": idempotency_key or new_idempotency_key(),
            }
        )
        return self._call("remember_many", body=body, is_repeatable=True)

    def list_memories(
        self,
        user: str | None = None,
        *,
        mode: str = DEFAULT_MODE,
        kind: Kind | None = None,
        status: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> T:
        """One page, newest first: `items` and `next_cursor` (see `iter_memories`)."""
        query = {
            "user": user,
            "mode": mode,
            "kind": kind,
            "status": status,
            "cursor": cursor,
            "limit": limit,
        }
        return self._call("list_memories", query=query)

    def get_memory(self, memory_id: str, *, user: str | None = None, mode: str = DEFAULT_MODE) -> T:
        return self._call(
            "get_memory", path={"memory_id": memory_id}, query={"user": user, "mode": mode}
        )

    def edit_memory(
        self,
        memory_id: str,
        *,
        user: str | None = None,
        mode: str = DEFAULT_MODE,
        content: str | None = None,
        importance: Importance | None = None,
        payload: JSON | None = None,
    ) -> T:
        """Change a memory's content, importance or payload (the previous content is kept)."""
        return self._call(
            "edit_memory",
            path={"memory_id": memory_id},
            query={"user": user, "mode": mode},
            body=_present({"content": content, "importance": importance, "payload": payload}),
        )

    def delete_memory(
        self, memory_id: str, *, user: str | None = None, mode: str = DEFAULT_MODE
    ) -> T:
        return self._call(
            "delete_memory", path={"memory_id": memory_id}, query={"user": user, "mode": mode}
        )

    def forget(
        self,
        user: str | None = None,
        *,
        mode: str = DEFAULT_MODE,
        memory_ids: Sequence[str] | None = None,
        query: str | None = None,
        topic: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> T:
        """Forget for good by ids, query, topic or period; a large one comes back as a task."""
        body = _present(
            {
                "user": user,
                "mode": mode,
                "memory_ids": list(memory_ids) if memory_ids else None,
                "query": query,
                "topic": topic,
                "since": since,
                "until": until,
            }
        )
        return self._call("forget", body=body)

    def get_forget_task(
        self, task_id: str, *, user: str | None = None, mode: str = DEFAULT_MODE
    ) -> T:
        return self._call(
            "get_forget_task", path={"task_id": task_id}, query={"user": user, "mode": mode}
        )

    # Journal

    def add_journal_entry(
        self,
        user: str | None,
        summary: str,
        *,
        type: Literal["alert", "recommendation", "action"],
        mode: str = DEFAULT_MODE,
        key: str = "",
    ) -> T:
        """Note what the agent told the user; an unresolved entry with the same key is reused."""
        body = {"user": user, "mode": mode, "summary": summary, "type": type, "key": key}
        return self._call("add_journal_entry", body=_present(body))

    def list_journal(
        self,
        user: str | None = None,
        *,
        mode: str = DEFAULT_MODE,
        since: datetime | None = None,
        unresolved: bool | None = None,
        limit: int | None = None,
    ) -> T:
        query = {"user": user, "mode": mode, "since": since, "unresolved": unresolved}
        return self._call("list_journal", query={**query, "limit": limit})

    def resolve_journal_entry(
        self, entry_id: str, *, user: str | None = None, mode: str = DEFAULT_MODE
    ) -> T:
        return self._call(
            "resolve_journal_entry", path={"entry_id": entry_id}, query={"user": user, "mode": mode}
        )

    # Profile

    def get_profile(self, user: str | None = None, *, mode: str = DEFAULT_MODE) -> T:
        return self._call("get_profile", query={"user": user, "mode": mode})

    def list_open_items(self, user: str | None = None, *, mode: str = DEFAULT_MODE) -> T:
        return self._call("list_open_items", query={"user": user, "mode": mode})

    # Sessions

    def start_session(
        self, user: str | None = None, *, mode: str = DEFAULT_MODE, incognito: bool = False
    ) -> T:
        body = {"user": user, "mode": mode, "incognito": incognito}
        return self._call("start_session", body=_present(body))

    def add_message(self, session_id: str, role: Literal["user", "assistant"], content: str) -> T:
        return self._call(
            "add_message",
            path={"session_id": session_id},
            body={"role": role, "content": content},
        )

    def end_session(self, session_id: str) -> T:
        """End the session; its extraction is queued (ending it again changes nothing)."""
        return self._call("end_session", path={"session_id": session_id})

    def put_working_memory(self, session_id: str, data: JSON) -> T:
        return self._call("put_working_memory", path={"session_id": session_id}, body=data)

    def get_working_memory(self, session_id: str) -> T:
        return self._call("get_working_memory", path={"session_id": session_id})

    # Recall

    def search(
        self,
        user: str | None,
        query: str,
        *,
        mode: str = DEFAULT_MODE,
        k: int | None = None,
        kinds: Sequence[Kind] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        topics: Sequence[str] | None = None,
        min_score: float | None = None,
    ) -> T:
        body = {
            "user": user,
            "mode": mode,
            "query": query,
            "k": k,
            "kinds": list(kinds) if kinds else None,
            "since": since,
            "until": until,
            "topics": list(topics) if topics else None,
            "min_score": min_score,
        }
        return self._call("search", body=_present(body), is_repeatable=True)

    def get_context(
        self,
        user: str | None,
        message: str,
        *,
        mode: str = DEFAULT_MODE,
        session: str | None = None,
        budget_tokens: int | None = None,
    ) -> T:
        """The assembled context for answering `message`: ordered blocks, untrusted ones fenced."""
        body = {
            "user": user,
            "mode": mode,
            "message": message,
            "session": session,
            "budget_tokens": budget_tokens,
        }
        return self._call("get_context", body=_present(body), is_repeatable=True)

    # Answers

    def report_answer(
        self,
        user: str | None,
        *,
        question: str,
        answer: str,
        signals: Mapping[str, float],
        mode: str = DEFAULT_MODE,
        session: str | None = None,
        context_ids: Sequence[str] | None = None,
        items: Sequence[JSON] | None = None,
    ) -> T:
        """Report an answer with the agent's signals (retrieval, policy, completeness, memory)."""
        body = {
            "user": user,
            "mode": mode,
            "session": session,
            "question": question,
            "answer": answer,
            "signals": dict(signals),
            "context_ids": list(context_ids) if context_ids else None,
            "items": list(items) if items else None,
        }
        return self._call("report_answer", body=_present(body))

    def answer_feedback(
        self, answer_id: str, value: Literal["up", "down"], *, comment: str | None = None
    ) -> T:
        return self._call(
            "answer_feedback",
            path={"answer_id": answer_id},
            body=_present({"value": value, "comment": comment}),
        )

    def propose_knowledge(self, user: str | None, statement: str, *, mode: str = DEFAULT_MODE) -> T:
        body = {"user": user, "mode": mode, "statement": statement}
        return self._call("propose_knowledge", body=_present(body))

    def graph_insights(self, *, limit: int | None = None) -> T:
        return self._call("graph_insights", query={"limit": limit})

    # Webhooks (the agent's workspace)

    def list_webhooks(self) -> T:
        """The workspace's webhook endpoints, without their secrets."""
        return self._call("list_webhooks")

    def create_webhook(
        self,
        url: str,
        event_types: Sequence[str],
        *,
        include_text: bool = False,
        description: str = "",
    ) -> T:
        """Add an endpoint; the answer holds its `whsec_` secret, shown this once."""
        body = {
            "url": url,
            "event_types": list(event_types),
            "include_text": include_text,
            "description": description,
        }
        return self._call("create_webhook", body=body)

    def rotate_webhook_secret(self, webhook_id: str) -> T:
        """A new secret; the old one keeps signing beside it for a grace period."""
        return self._call("rotate_webhook_secret", path={"webhook_id": webhook_id})

    def disable_webhook(self, webhook_id: str) -> T:
        return self._call("disable_webhook", path={"webhook_id": webhook_id})

    def enable_webhook(self, webhook_id: str) -> T:
        return self._call("enable_webhook", path={"webhook_id": webhook_id})

    def list_webhook_deliveries(
        self,
        webhook_id: str,
        *,
        status: Literal["pending", "delivered", "failed", "dead"] | None = None,
        limit: int | None = None,
    ) -> T:
        """The endpoint's delivery log, newest first."""
        return self._call(
            "list_webhook_deliveries",
            path={"webhook_id": webhook_id},
            query={"status": status, "limit": limit},
        )

    def replay_webhook_delivery(self, delivery_id: int) -> T:
        """Send a failed or dead delivery again, with the same webhook-id."""
        return self._call("replay_webhook_delivery", path={"delivery_id": delivery_id})

    # Imports

    def import_file(
        self,
        file: bytes,
        *,
        user: str | None = None,
        mode: str = DEFAULT_MODE,
        format: str | None = None,
        trust: bool = False,
    ) -> T:
        """Upload a file to import (MemoryHub export, Mem0, ChatGPT or Claude conversations.json).

        The same file twice is the same import: it is safe to send again.
        """
        return self._call(
            "import_file",
            query={"user": user, "mode": mode, "format": format, "trust": trust},
            files={"file": ("import.json", file, "application/json")},
            is_repeatable=True,
        )

    def get_import(self, import_id: str, *, user: str | None = None, mode: str = DEFAULT_MODE) -> T:
        """An import's progress and receipt (counts by kind, items skipped and why)."""
        return self._call(
            "get_import", path={"import_id": import_id}, query={"user": user, "mode": mode}
        )

    def keep_imported(
        self,
        import_id: str,
        *,
        user: str | None = None,
        mode: str = DEFAULT_MODE,
        memory_ids: Sequence[str] | None = None,
    ) -> T:
        """Keep the import's memories waiting for review: all, or the ones named."""
        body = {"user": user, "mode": mode, "memory_ids": list(memory_ids) if memory_ids else None}
        return self._call("keep_imported", path={"import_id": import_id}, body=_present(body))

    def discard_imported(
        self,
        import_id: str,
        *,
        user: str | None = None,
        mode: str = DEFAULT_MODE,
        memory_ids: Sequence[str] | None = None,
    ) -> T:
        """Delete the import's memories waiting for review: all, or the ones named."""
        body = {"user": user, "mode": mode, "memory_ids": list(memory_ids) if memory_ids else None}
        return self._call("discard_imported", path={"import_id": import_id}, body=_present(body))
