"""Every operation of the MemoryHub agent API, written once for the sync and async clients.

Each function here builds the `Call` of one operation, typed with its answer (`Call[MemoryOut]`);
`MemoryHub` and `AsyncMemoryHub` turn each into a method with the same parameters that sends
it and returns that answer (or an awaitable of it).

`OPERATIONS` names each function's HTTP method and path; tests in the MemoryHub repository fail
when it and the server's OpenAPI schema disagree (a missing operation, a path, a parameter or a
body field the other side does not know, or an answer whose TypedDict differs from its schema).
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from .responses import (
    AnswerOut,
    CandidateOut,
    CandidatePageOut,
    ContextOut,
    DecisionOut,
    DeletedOut,
    DeliveryOut,
    FeedbackOut,
    ForgetOut,
    ForgetTaskOut,
    GraphInsightsOut,
    HistoryOut,
    ImportOut,
    JournalListOut,
    JournalOut,
    KnowledgeCandidateOut,
    MemoryBatchOut,
    MemoryOut,
    MemoryPageOut,
    MessageOut,
    OpenItemsOut,
    ProfileOut,
    ReviewOut,
    SearchOut,
    SessionOut,
    UserLinkOut,
    UserOut,
    WebhookOut,
    WebhookSecretOut,
    WorkingMemoryOut,
)

JSON = dict[str, Any]
R = TypeVar("R")

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
    "memory_history": ("GET", "/memories/{memory_id}/history"),
    "export": ("GET", "/export"),
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
    "list_review_candidates": ("GET", "/review/candidates"),
    "get_review_candidate": ("GET", "/review/candidates/{candidate_id}"),
    "approve_candidate": ("POST", "/review/candidates/{candidate_id}/approve"),
    "reject_candidate": ("POST", "/review/candidates/{candidate_id}/reject"),
    "answer_for_user": ("POST", "/review/candidates/{candidate_id}/answer-for-user"),
    "leave_to_user": ("POST", "/review/candidates/{candidate_id}/needs-user"),
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
class Call(Generic[R]):
    """One API call, ready to send; R is the JSON its success answers with."""

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


def as_method(method: Callable[..., Any], build: Callable[..., Any]) -> None:
    """Give a client's method the name, docs and parameters of the function it sends."""
    method.__name__ = method.__qualname__ = build.__name__
    method.__doc__ = build.__doc__
    signature = inspect.signature(build)
    first = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[first, *signature.parameters.values()]
    )


def new_idempotency_key() -> str:
    return f"mhc-{uuid.uuid4()}"


def _call(
    operation: str,
    *,
    path: Mapping[str, Any] | None = None,
    query: Mapping[str, Any] | None = None,
    body: Any = None,
    is_repeatable: bool | None = None,
    files: dict[str, tuple[str, bytes, str]] | None = None,
) -> Call[Any]:
    method, template = OPERATIONS[operation]
    url = template.format(**{name: str(value) for name, value in (path or {}).items()})
    if is_repeatable is None:
        is_repeatable = method == "GET" or operation in IDEMPOTENT_WRITES
    return Call(operation, method, url, _present(query or {}), body, is_repeatable, files)


# Users


def create_user(external_id: str, *, display_name: str = "") -> Call[UserOut]:
    """Create an end user of the agent's workspace, or get the one with this external_id."""
    return _call("create_user", body={"external_id": external_id, "display_name": display_name})


def get_user(external_id: str = "me") -> Call[UserOut]:
    """One user by external_id or UUID; `me` is a personal key's own user."""
    return _call("get_user", path={"external_id": external_id})


def create_user_link(external_id: str, *, email: str) -> Call[UserLinkOut]:
    """A one-time link that lets the person's login reach this user."""
    return _call("create_user_link", path={"external_id": external_id}, body={"email": email})


# Memories


def remember(
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
) -> Call[MemoryOut]:
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
    return _call("remember", body=body, is_repeatable=True)


def remember_many(
    user: str | None,
    items: Sequence[JSON],
    *,
    mode: str = DEFAULT_MODE,
    idempotency_key: str | None = None,
) -> Call[MemoryBatchOut]:
    """Remember several items, all or none (idempotency key generated as for `remember`)."""
    body = _present(
        {
            "user": user,
            "mode": mode,
            "items": [_present(item) for item in items],
            "idempotency_key": idempotency_key or new_idempotency_key(),
        }
    )
    return _call("remember_many", body=body, is_repeatable=True)


def list_memories(
    user: str | None = None,
    *,
    mode: str = DEFAULT_MODE,
    kind: Kind | None = None,
    status: str | None = None,
    cursor: str | None = None,
    limit: int | None = None,
    as_of: datetime | None = None,
) -> Call[MemoryPageOut]:
    """One page, newest first: `items` and `next_cursor` (see `iter_memories`).

    With `as_of`, what was remembered at that moment, as it was then."""
    query = {
        "user": user,
        "mode": mode,
        "kind": kind,
        "status": status,
        "cursor": cursor,
        "limit": limit,
        "as_of": as_of,
    }
    return _call("list_memories", query=query)


def get_memory(
    memory_id: str, *, user: str | None = None, mode: str = DEFAULT_MODE
) -> Call[MemoryOut]:
    return _call("get_memory", path={"memory_id": memory_id}, query={"user": user, "mode": mode})


def memory_history(
    memory_id: str, *, user: str | None = None, mode: str = DEFAULT_MODE
) -> Call[HistoryOut]:
    """Every version of a memory, oldest first, with who changed it, why and when."""
    return _call(
        "memory_history", path={"memory_id": memory_id}, query={"user": user, "mode": mode}
    )


def export(user: str | None = None, *, mode: str = DEFAULT_MODE) -> Call[JSON]:
    """Everything of the user as the dashboard's export document (read whole here).

    For a personal key, or an agent the user allowed to export (403 otherwise)."""
    return _call("export", query={"user": user, "mode": mode})


def edit_memory(
    memory_id: str,
    *,
    user: str | None = None,
    mode: str = DEFAULT_MODE,
    content: str | None = None,
    importance: Importance | None = None,
    payload: JSON | None = None,
) -> Call[MemoryOut]:
    """Change a memory's content, importance or payload (the previous content is kept)."""
    return _call(
        "edit_memory",
        path={"memory_id": memory_id},
        query={"user": user, "mode": mode},
        body=_present({"content": content, "importance": importance, "payload": payload}),
    )


def delete_memory(
    memory_id: str, *, user: str | None = None, mode: str = DEFAULT_MODE
) -> Call[DeletedOut]:
    return _call("delete_memory", path={"memory_id": memory_id}, query={"user": user, "mode": mode})


def forget(
    user: str | None = None,
    *,
    mode: str = DEFAULT_MODE,
    memory_ids: Sequence[str] | None = None,
    query: str | None = None,
    topic: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Call[ForgetOut | ForgetTaskOut]:
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
    return _call("forget", body=body)


def get_forget_task(
    task_id: str, *, user: str | None = None, mode: str = DEFAULT_MODE
) -> Call[ForgetTaskOut]:
    return _call("get_forget_task", path={"task_id": task_id}, query={"user": user, "mode": mode})


# Journal


def add_journal_entry(
    user: str | None,
    summary: str,
    *,
    type: Literal["alert", "recommendation", "action"],
    mode: str = DEFAULT_MODE,
    key: str = "",
) -> Call[JournalOut]:
    """Note what the agent told the user; an unresolved entry with the same key is reused."""
    body = {"user": user, "mode": mode, "summary": summary, "type": type, "key": key}
    return _call("add_journal_entry", body=_present(body))


def list_journal(
    user: str | None = None,
    *,
    mode: str = DEFAULT_MODE,
    since: datetime | None = None,
    unresolved: bool | None = None,
    limit: int | None = None,
) -> Call[JournalListOut]:
    query = {"user": user, "mode": mode, "since": since, "unresolved": unresolved}
    return _call("list_journal", query={**query, "limit": limit})


def resolve_journal_entry(
    entry_id: str, *, user: str | None = None, mode: str = DEFAULT_MODE
) -> Call[JournalOut]:
    return _call(
        "resolve_journal_entry", path={"entry_id": entry_id}, query={"user": user, "mode": mode}
    )


# Profile


def get_profile(
    user: str | None = None, *, mode: str = DEFAULT_MODE, as_of: datetime | None = None
) -> Call[ProfileOut]:
    """The profile; with `as_of`, as it was at that moment."""
    return _call("get_profile", query={"user": user, "mode": mode, "as_of": as_of})


def list_open_items(user: str | None = None, *, mode: str = DEFAULT_MODE) -> Call[OpenItemsOut]:
    return _call("list_open_items", query={"user": user, "mode": mode})


# Sessions


def start_session(
    user: str | None = None, *, mode: str = DEFAULT_MODE, incognito: bool = False
) -> Call[SessionOut]:
    body = {"user": user, "mode": mode, "incognito": incognito}
    return _call("start_session", body=_present(body))


def add_message(
    session_id: str, role: Literal["user", "assistant"], content: str
) -> Call[MessageOut]:
    return _call(
        "add_message",
        path={"session_id": session_id},
        body={"role": role, "content": content},
    )


def end_session(session_id: str) -> Call[SessionOut]:
    """End the session; its extraction is queued (ending it again changes nothing)."""
    return _call("end_session", path={"session_id": session_id})


def put_working_memory(session_id: str, data: JSON) -> Call[WorkingMemoryOut]:
    return _call("put_working_memory", path={"session_id": session_id}, body=data)


def get_working_memory(session_id: str) -> Call[WorkingMemoryOut]:
    return _call("get_working_memory", path={"session_id": session_id})


# Recall


def search(
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
    as_of: datetime | None = None,
) -> Call[SearchOut]:
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
        "as_of": as_of,
    }
    return _call("search", body=_present(body), is_repeatable=True)


def get_context(
    user: str | None,
    message: str,
    *,
    mode: str = DEFAULT_MODE,
    session: str | None = None,
    budget_tokens: int | None = None,
    as_of: datetime | None = None,
) -> Call[ContextOut]:
    """The assembled context for answering `message`: ordered blocks, untrusted ones fenced."""
    body = {
        "user": user,
        "mode": mode,
        "message": message,
        "session": session,
        "budget_tokens": budget_tokens,
        "as_of": as_of,
    }
    return _call("get_context", body=_present(body), is_repeatable=True)


# Answers


def report_answer(
    user: str | None,
    *,
    question: str,
    answer: str,
    signals: Mapping[str, float],
    mode: str = DEFAULT_MODE,
    session: str | None = None,
    context_ids: Sequence[str] | None = None,
    items: Sequence[JSON] | None = None,
) -> Call[AnswerOut]:
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
    return _call("report_answer", body=_present(body))


def answer_feedback(
    answer_id: str, value: Literal["up", "down"], *, comment: str | None = None
) -> Call[FeedbackOut]:
    return _call(
        "answer_feedback",
        path={"answer_id": answer_id},
        body=_present({"value": value, "comment": comment}),
    )


def propose_knowledge(
    user: str | None, statement: str, *, mode: str = DEFAULT_MODE
) -> Call[KnowledgeCandidateOut]:
    body = {"user": user, "mode": mode, "statement": statement}
    return _call("propose_knowledge", body=_present(body))


def graph_insights(*, limit: int | None = None) -> Call[GraphInsightsOut]:
    return _call("graph_insights", query={"limit": limit})


# Webhooks (the agent's workspace)


def list_webhooks() -> Call[list[WebhookOut]]:
    """The workspace's webhook endpoints, without their secrets."""
    return _call("list_webhooks")


def create_webhook(
    url: str,
    event_types: Sequence[str],
    *,
    include_text: bool = False,
    description: str = "",
) -> Call[WebhookSecretOut]:
    """Add an endpoint; the answer holds its `whsec_` secret, shown this once."""
    body = {
        "url": url,
        "event_types": list(event_types),
        "include_text": include_text,
        "description": description,
    }
    return _call("create_webhook", body=body)


def rotate_webhook_secret(webhook_id: str) -> Call[WebhookSecretOut]:
    """A new secret; the old one keeps signing beside it for a grace period."""
    return _call("rotate_webhook_secret", path={"webhook_id": webhook_id})


def disable_webhook(webhook_id: str) -> Call[WebhookOut]:
    return _call("disable_webhook", path={"webhook_id": webhook_id})


def enable_webhook(webhook_id: str) -> Call[WebhookOut]:
    return _call("enable_webhook", path={"webhook_id": webhook_id})


def list_webhook_deliveries(
    webhook_id: str,
    *,
    status: Literal["pending", "delivered", "failed", "dead"] | None = None,
    limit: int | None = None,
) -> Call[list[DeliveryOut]]:
    """The endpoint's delivery log, newest first."""
    return _call(
        "list_webhook_deliveries",
        path={"webhook_id": webhook_id},
        query={"status": status, "limit": limit},
    )


def replay_webhook_delivery(delivery_id: int) -> Call[DeliveryOut]:
    """Send a failed or dead delivery again, with the same webhook-id."""
    return _call("replay_webhook_delivery", path={"delivery_id": delivery_id})


# Review (a reviewer key, minted on the review pages)


def list_review_candidates(
    *,
    kind: Literal["answer", "fact"] | None = None,
    failure_class: str | None = None,
    page: int | None = None,
    per_page: int | None = None,
) -> Call[CandidatePageOut]:
    """Waiting low-confidence answers and proposed facts, most urgent first, a page."""
    query = {"kind": kind, "failure_class": failure_class, "page": page, "per_page": per_page}
    return _call("list_review_candidates", query=query)


def get_review_candidate(candidate_id: str) -> Call[CandidateOut]:
    return _call("get_review_candidate", path={"candidate_id": candidate_id})


def approve_candidate(
    candidate_id: str,
    *,
    question: str | None = None,
    answer: str | None = None,
    apply_to_group: bool = False,
) -> Call[DecisionOut]:
    """Publish it (as edited) to the knowledge base; 409 when already decided."""
    body = {"question": question, "answer": answer, "apply_to_group": apply_to_group}
    return _call("approve_candidate", path={"candidate_id": candidate_id}, body=_present(body))


def reject_candidate(
    candidate_id: str, reason: str, *, apply_to_group: bool = False
) -> Call[DecisionOut]:
    """Reject it with a reason; 409 when already decided."""
    body = {"reason": reason, "apply_to_group": apply_to_group}
    return _call("reject_candidate", path={"candidate_id": candidate_id}, body=body)


def answer_for_user(candidate_id: str, answer: str) -> Call[DecisionOut]:
    """Write the right answer into the user's memory, for them to confirm (409 if paused)."""
    return _call("answer_for_user", path={"candidate_id": candidate_id}, body={"answer": answer})


def leave_to_user(candidate_id: str) -> Call[DecisionOut]:
    """Leave a question only the user can answer to them, as an open item (409 if paused)."""
    return _call("leave_to_user", path={"candidate_id": candidate_id})


# Imports


def import_file(
    file: bytes,
    *,
    user: str | None = None,
    mode: str = DEFAULT_MODE,
    format: str | None = None,
    trust: bool = False,
) -> Call[ImportOut]:
    """Upload a file to import (MemoryHub export, Mem0, ChatGPT or Claude conversations.json).

    The same file twice is the same import: it is safe to send again.
    """
    return _call(
        "import_file",
        query={"user": user, "mode": mode, "format": format, "trust": trust},
        files={"file": ("import.json", file, "application/json")},
        is_repeatable=True,
    )


def get_import(
    import_id: str, *, user: str | None = None, mode: str = DEFAULT_MODE
) -> Call[ImportOut]:
    """An import's progress and receipt (counts by kind, items skipped and why)."""
    return _call("get_import", path={"import_id": import_id}, query={"user": user, "mode": mode})


def keep_imported(
    import_id: str,
    *,
    user: str | None = None,
    mode: str = DEFAULT_MODE,
    memory_ids: Sequence[str] | None = None,
) -> Call[ReviewOut]:
    """Keep the import's memories waiting for review: all, or the ones named."""
    body = {"user": user, "mode": mode, "memory_ids": list(memory_ids) if memory_ids else None}
    return _call("keep_imported", path={"import_id": import_id}, body=_present(body))


def discard_imported(
    import_id: str,
    *,
    user: str | None = None,
    mode: str = DEFAULT_MODE,
    memory_ids: Sequence[str] | None = None,
) -> Call[ReviewOut]:
    """Delete the import's memories waiting for review: all, or the ones named."""
    body = {"user": user, "mode": mode, "memory_ids": list(memory_ids) if memory_ids else None}
    return _call("discard_imported", path={"import_id": import_id}, body=_present(body))
