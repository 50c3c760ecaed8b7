"""A small typed Python client for the MemoryHub agent API (standard library only).

hub = MemoryHubClient("http://127.0.0.1:8000", key="mh_…")
hub.remember("alice", "Allergic to peanuts", kind="fact")
hub.search("alice", "what can't she eat?")
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from typing import Any

DEFAULT_MODE = "personal"


class ApiError(Exception):
    """An error answer of the API: HTTP status, stable `code` and human `detail`."""

    def __init__(
        self, status: int, code: str, detail: str, *, retry_after: int | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.retry_after = retry_after


@dataclass(frozen=True)
class Memory:
    id: str
    kind: str
    content: str
    confidence: str
    status: str
    importance: str
    is_flagged: bool
    created_at: datetime
    payload: dict[str, Any]

    @classmethod
    def of(cls, data: dict[str, Any]) -> Memory:
        return cls(
            id=data["id"],
            kind=data["kind"],
            content=data["content"],
            confidence=data["confidence"],
            status=data["status"],
            importance=data.get("importance", "normal"),
            is_flagged=data.get("is_flagged", False),
            created_at=datetime.fromisoformat(data["created_at"]),
            payload=data.get("payload") or {},
        )


@dataclass(frozen=True)
class MemoryPage:
    items: tuple[Memory, ...]
    next_cursor: str | None


@dataclass(frozen=True)
class SearchResult:
    id: str
    kind: str
    content: str
    score: float
    confidence: str
    created_at: datetime

    @classmethod
    def of(cls, data: dict[str, Any]) -> SearchResult:
        return cls(
            id=data["id"],
            kind=data["kind"],
            content=data["content"],
            score=float(data["score"]),
            confidence=data["confidence"],
            created_at=datetime.fromisoformat(data["created_at"]),
        )


@dataclass(frozen=True)
class Context:
    """Assembled context: `text` to put before the model's turn, and the memories it used."""

    text: str
    memory_ids: tuple[str, ...]
    raw: dict[str, Any]


@dataclass(frozen=True)
class UserLink:
    """A one-time link for the person (see MemoryHubClient.create_user_link)."""

    url: str
    expires_at: datetime


@dataclass(frozen=True)
class ForgetReceipt:
    forgotten: int
    counts: dict[str, int]
    memory_ids: tuple[str, ...]
    # Set when a large forget by query was queued: read its receipt with `forget_task`.
    task_id: str | None = None


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _without_none(body: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in body.items() if value is not None}


class MemoryHubClient:
    """Calls /api/v1 with a bearer key; every method raises ApiError on an error answer."""

    def __init__(self, base_url: str, key: str, *, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/") + "/api/v1"
        self.key = key
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
    ) -> Any:
        """Send one request and return the decoded JSON answer."""
        url = self.base_url + path
        if params:
            url += "?" + urllib.parse.urlencode(_without_none(params), doseq=True)
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - http(s) only.
        request.add_header("Authorization", f"Bearer {self.key}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raise _api_error(error) from None

    # Users
    def create_user(self, external_id: str, *, display_name: str = "") -> dict[str, Any]:
        """Create the end user (or get the existing one with this external_id).

        Agents set no email or password: the person links their own login (create_user_link).
        """
        body = {"external_id": external_id, "display_name": display_name}
        result: dict[str, Any] = self.request("POST", "/users", body=body)
        return result

    def create_user_link(self, external_id: str, *, email: str) -> UserLink:
        """A one-time link to hand the person: opened while signed in to an account that
        confirmed `email` (the person's address), their login gets this user.

        It works once, for 24 hours; a new link replaces the unused one. ApiError 409 if the
        user already has a login, 403 if another agent created the user.
        """
        path = f"/users/{urllib.parse.quote(external_id, safe='')}/link"
        data = self.request("POST", path, body={"email": email})
        return UserLink(url=data["url"], expires_at=datetime.fromisoformat(data["expires_at"]))

    # Memories
    def remember(
        self,
        user: str,
        content: str,
        *,
        kind: str = "fact",
        mode: str = DEFAULT_MODE,
        importance: str = "normal",
        payload: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Memory:
        """Remember one item about the user.

        Send the same `idempotency_key` when retrying: the retry returns the first write.
        """
        body = {"user": user, "mode": mode, "kind": kind, "content": content}
        body |= _without_none(
            {"importance": importance, "payload": payload, "idempotency_key": idempotency_key}
        )
        return Memory.of(self.request("POST", "/memories", body=body))

    def remember_many(
        self,
        user: str,
        items: list[dict[str, Any]],
        *,
        mode: str = DEFAULT_MODE,
        idempotency_key: str | None = None,
    ) -> list[Memory]:
        """Remember several items at once: all of them or none (one idempotency key for all)."""
        body = {"user": user, "mode": mode, "items": items}
        body |= _without_none({"idempotency_key": idempotency_key})
        return [Memory.of(m) for m in self.request("POST", "/memories/batch", body=body)["items"]]

    def list_memories(
        self,
        user: str,
        *,
        mode: str = DEFAULT_MODE,
        kind: str | None = None,
        status: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> MemoryPage:
        """One newest-first page; pass `next_cursor` back for the next one."""
        params = {"user": user, "mode": mode, "kind": kind, "status": status, "cursor": cursor}
        data = self.request("GET", "/memories", params={**params, "limit": limit})
        return MemoryPage(tuple(Memory.of(m) for m in data["items"]), data["next_cursor"])

    def get_memory(self, user: str, memory_id: str, *, mode: str = DEFAULT_MODE) -> Memory:
        params = {"user": user, "mode": mode}
        return Memory.of(self.request("GET", f"/memories/{memory_id}", params=params))

    def edit_memory(
        self,
        user: str,
        memory_id: str,
        *,
        mode: str = DEFAULT_MODE,
        content: str | None = None,
        importance: str | None = None,
    ) -> Memory:
        body = _without_none({"content": content, "importance": importance})
        params = {"user": user, "mode": mode}
        return Memory.of(self.request("PATCH", f"/memories/{memory_id}", body=body, params=params))

    def delete_memory(self, user: str, memory_id: str, *, mode: str = DEFAULT_MODE) -> None:
        self.request("DELETE", f"/memories/{memory_id}", params={"user": user, "mode": mode})

    def search(
        self,
        user: str,
        query: str,
        *,
        mode: str = DEFAULT_MODE,
        k: int | None = None,
        kinds: list[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[SearchResult]:
        """The memories that best answer the query, best first."""
        body = {"user": user, "mode": mode, "query": query}
        body |= _without_none({"k": k, "kinds": kinds, "since": _iso(since), "until": _iso(until)})
        data = self.request("POST", "/search", body=body)
        return [SearchResult.of(r) for r in data["results"]]

    def forget(
        self,
        user: str,
        *,
        mode: str = DEFAULT_MODE,
        memory_ids: list[str] | None = None,
        query: str | None = None,
        topic: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> ForgetReceipt:
        """Forget for good what the criteria pick (they combine)."""
        body = {"user": user, "mode": mode, "memory_ids": memory_ids or []}
        body |= _without_none(
            {"query": query, "topic": topic, "since": _iso(since), "until": _iso(until)}
        )
        data = self.request("POST", "/forget", body=body)
        return ForgetReceipt(
            data["forgotten"], data["counts"], tuple(data["memory_ids"]), data.get("task_id")
        )

    def forget_task(self, user: str, task_id: str, *, mode: str = DEFAULT_MODE) -> dict[str, Any]:
        """A queued forget: {"status": "queued"}, then "done" with its counts and memory ids."""
        path = f"/forget/tasks/{task_id}"
        result: dict[str, Any] = self.request("GET", path, params={"user": user, "mode": mode})
        return result

    def profile(self, user: str, *, mode: str = DEFAULT_MODE) -> dict[str, list[Memory]]:
        """Active facts, preferences and procedures."""
        data = self.request("GET", "/profile", params={"user": user, "mode": mode})
        return {name: [Memory.of(m) for m in items] for name, items in data.items()}

    def open_items(self, user: str, *, mode: str = DEFAULT_MODE) -> list[Memory]:
        data = self.request("GET", "/open-items", params={"user": user, "mode": mode})
        return [Memory.of(m) for m in data["items"]]

    # Sessions and context
    def start_session(self, user: str, *, mode: str = DEFAULT_MODE) -> str:
        """Start a conversation; return its id."""
        session_id: str = self.request("POST", "/sessions", body={"user": user, "mode": mode})["id"]
        return session_id

    def add_message(self, session_id: str, role: str, content: str) -> dict[str, Any]:
        body = {"role": role, "content": content}
        result: dict[str, Any] = self.request("POST", f"/sessions/{session_id}/messages", body=body)
        return result

    def end_session(self, session_id: str) -> dict[str, Any]:
        """End the conversation; extraction of what to remember is queued."""
        result: dict[str, Any] = self.request("POST", f"/sessions/{session_id}/end")
        return result

    def context(
        self,
        user: str,
        message: str,
        *,
        mode: str = DEFAULT_MODE,
        session: str | None = None,
        budget_tokens: int | None = None,
    ) -> Context:
        """The memory context to answer `message` with."""
        body = {"user": user, "mode": mode, "message": message}
        body |= _without_none({"session": session, "budget_tokens": budget_tokens})
        data = self.request("POST", "/context", body=body)
        blocks = data.get("blocks", [])
        text = data.get("text") or "\n\n".join(block["text"] for block in blocks)
        used = data.get("memory_ids") or [
            i for block in blocks for i in block.get("memory_ids", [])
        ]
        return Context(text=text, memory_ids=tuple(dict.fromkeys(used)), raw=data)

    # Journal
    def note(
        self,
        user: str,
        summary: str,
        *,
        type: str = "action",
        key: str = "",
        mode: str = DEFAULT_MODE,
    ) -> dict[str, Any]:
        """Record in the agent's journal what it surfaced to the user."""
        body = {"user": user, "mode": mode, "summary": summary, "type": type, "key": key}
        result: dict[str, Any] = self.request("POST", "/journal", body=body)
        return result

    def journal(
        self,
        user: str,
        *,
        mode: str = DEFAULT_MODE,
        since: datetime | None = None,
        is_unresolved_only: bool = False,
    ) -> list[dict[str, Any]]:
        """What the agent already surfaced to the user, newest first, one per key."""
        params = {"user": user, "mode": mode, "since": _iso(since)}
        params["unresolved"] = "true" if is_unresolved_only else "false"
        items: list[dict[str, Any]] = self.request("GET", "/journal", params=params)["items"]
        return items

    def resolve_note(self, user: str, entry_id: str, *, mode: str = DEFAULT_MODE) -> dict[str, Any]:
        params = {"user": user, "mode": mode}
        result: dict[str, Any] = self.request("POST", f"/journal/{entry_id}/resolve", params=params)
        return result


def _api_error(error: urllib.error.HTTPError) -> ApiError:
    retry_after = error.headers.get("Retry-After")
    try:
        data = json.loads(error.read() or b"{}")
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    return ApiError(
        error.code,
        str(data.get("code", "error")),
        str(data.get("detail", error.reason)),
        retry_after=int(retry_after) if retry_after and retry_after.isdigit() else None,
    )
