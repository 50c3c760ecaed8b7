"""Agent API routes: remember, list, read, edit, delete and forget memories.

Each route resolves the scope and calls one operation function; the MCP tools call the same
operation functions, so both channels share one implementation.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.http import HttpRequest
from django.utils.translation import gettext_noop
from ninja import P, PathEx, Query, Router, Status

from memoryhub.embeddings import Embedder
from memoryhub.errors import (
    ContentTooLargeError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
)
from memoryhub.memory_rows import MemoryItem
from memoryhub.models import ForgetTask, MemorySource, MemoryStatus
from memoryhub.queries.forget_tasks import get_forget_task
from memoryhub.queries.memories import get_memory, list_memories
from memoryhub.services.agents import key_owner
from memoryhub.services.forget import ForgetSelector
from memoryhub.services.forget_tasks import forget_or_queue
from memoryhub.services.idempotency import IdempotencyKey, remember_once
from memoryhub.services.memories import NewMemory, delete_memories, edit_memory
from memoryhub.services.repeats import remember_unless_repeated
from memoryhub.services.write_checks import check_batch_content

from .auth import Scope, resolve_scope
from .schemas import (
    ERRORS,
    DeletedOut,
    ForgetIn,
    ForgetOut,
    ForgetTaskOut,
    MemoryBatchIn,
    MemoryBatchOut,
    MemoryFields,
    MemoryIn,
    MemoryListQuery,
    MemoryOut,
    MemoryPageOut,
    MemoryPatchIn,
    ScopeIn,
)

router = Router(tags=["memories"])
ForgetTaskId = PathEx[
    UUID, P(description="The queued forget's task_id, from the 202 answer of POST /forget.")
]
MemoryId = PathEx[
    UUID, P(description="The memory's id (UUID); another user's or mode's memory is 404.")
]

PAGE_SIZE = 50


def _check_payload(payload: dict[str, Any] | None) -> None:
    if payload is None:
        return
    size = len(json.dumps(payload).encode())
    if size > settings.MEMORYHUB_MAX_CONTENT_BYTES:
        raise ContentTooLargeError(
            gettext_noop("payload is {size} bytes; the limit is {limit} bytes"),
            size=size,
            limit=settings.MEMORYHUB_MAX_CONTENT_BYTES,
        )


def new_memory(fields: MemoryFields) -> NewMemory:
    """Turn an agent's memory fields into a NewMemory (tagged when sealed, memory_rows.py)."""
    _check_payload(fields.payload)
    return NewMemory(
        kind=fields.kind,
        content=fields.content,
        importance=fields.importance,
        source=fields.source,
        payload=fields.payload,
        occurred_at=fields.occurred_at,
    )


def _new_items(scope: Scope, items: list[MemoryFields]) -> list[NewMemory]:
    # Security invariant: user provenance (shown as said by the user, confidence high) comes
    # only from the user: the dashboard or their personal key, never an agent's key.
    if scope.agent is not None and any(f.source == "user" for f in items):
        raise PermissionDeniedError(
            gettext_noop('an agent key cannot write source "user": use "agent" or "explicit"')
        )
    return [new_memory(fields) for fields in items]


def _out(items: list[MemoryItem]) -> list[MemoryOut]:
    return [MemoryOut.of(item) for item in items]


def remember_items(
    scope: Scope, items: list[MemoryFields], *, embedder: Embedder
) -> list[MemoryOut]:
    """Store the items for the scope's user and mode, all or nothing; an exact repeat of a
    live memory adds evidence to it instead (its evidence_count is then above 1).

    Raises PermissionDeniedError when an agent key claims the user's own word (source "user").
    """
    stored = remember_unless_repeated(
        user=scope.user,
        mode=scope.mode,
        items=_new_items(scope, items),
        actor=scope.actor,
        embedder=embedder,
        agent_id=scope.agent.pk if scope.agent else None,
    )
    return _out(stored)


def remember_items_once(
    scope: Scope,
    items: list[MemoryFields],
    *,
    embedder: Embedder,
    idempotency_key: str | None,
    is_batch: bool,
) -> tuple[list[MemoryOut], bool]:
    """`remember_items`, and with an idempotency key a retry returns the first write (True).

    Raises IdempotencyKeyReusedError when the key came with another request before.
    """
    if idempotency_key is None:
        return remember_items(scope, items, embedder=embedder), False
    fields = set(MemoryFields.model_fields)
    request = {
        "batch": is_batch,
        "items": [item.model_dump(mode="json", include=fields) for item in items],
    }
    result = remember_once(
        user=scope.user,
        mode=scope.mode,
        items=_new_items(scope, items),
        actor=scope.actor,
        embedder=embedder,
        idempotency=IdempotencyKey(owner=key_owner(scope.api_key), key=idempotency_key),
        request=request,
        agent_id=scope.agent.pk if scope.agent else None,
    )
    return _out(result.memories), result.is_replay


def encode_cursor(item: MemoryItem) -> str:
    raw = f"{item.created_at.isoformat()}|{item.id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    """Parse a cursor from `encode_cursor`; anything else is an input error."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        created_at, memory_id = raw.split("|")
        when = datetime.fromisoformat(created_at)
        if when.tzinfo is None:
            raise ValueError("naive cursor")
        return when, UUID(memory_id)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidInputError(
            gettext_noop("cursor is not valid: pass back a next_cursor value")
        ) from None


def page_memories(
    scope: Scope,
    *,
    kind: str | None = None,
    status: str | None = None,
    cursor: str | None = None,
    limit: int = PAGE_SIZE,
    as_of: datetime | None = None,
) -> MemoryPageOut:
    """One newest-first page of the scope's memories, active ones unless a status is named.

    With `as_of`, the memories as they were then, by the status they had then.
    """
    before, before_id = decode_cursor(cursor) if cursor else (None, None)
    items = list_memories(
        user=scope.user,
        mode=scope.mode,
        actor=scope.actor,
        kinds=[kind] if kind else (),
        statuses=[status or MemoryStatus.ACTIVE],
        limit=limit + 1,
        before=before,
        before_id=before_id,
        as_of=as_of,
    )
    page = items[:limit]
    next_cursor = encode_cursor(page[-1]) if len(items) > limit else None
    # Constructed, not validated: the items are MemoryOut already, and validating the page
    # walked every field of every item again (a third of this function's Python).
    return MemoryPageOut.model_construct(
        items=[MemoryOut.of(item) for item in page], next_cursor=next_cursor
    )


def read_memory(scope: Scope, memory_id: UUID) -> MemoryOut:
    item = get_memory(user=scope.user, mode=scope.mode, memory_id=memory_id, actor=scope.actor)
    if item.status == MemoryStatus.FORGOTTEN:
        raise NotFoundError(gettext_noop("memory not found"))
    return MemoryOut.of(item)


def forget_memories(
    scope: Scope, payload: ForgetIn, *, embedder: Embedder
) -> ForgetOut | ForgetTaskOut:
    """Forget for good what the selector picks, and what was derived from it.

    A query that picks many memories is queued instead: the answer is the task, whose receipt
    GET /forget/tasks/{id} shows once it ran.
    """
    result = forget_or_queue(
        user=scope.user,
        mode=scope.mode,
        selector=ForgetSelector(
            memory_ids=tuple(payload.memory_ids),
            since=payload.since,
            until=payload.until,
            topic=payload.topic,
            query=payload.query,
        ),
        actor=scope.actor,
        embedder=embedder,
    )
    if isinstance(result, ForgetTask):
        return ForgetTaskOut.of(result)
    return ForgetOut(
        forgotten=len(result.memory_ids),
        counts=result.counts,
        memory_ids=list(result.memory_ids),
        deleted_at=result.deleted_at,
    )


@router.post(
    "/memories", summary="Remember one memory", response={200: MemoryOut, 201: MemoryOut, **ERRORS}
)
def create_memory(request: HttpRequest, payload: MemoryIn) -> Status[MemoryOut]:
    """Remember one item for the user in the mode (confidence medium or above).

    A retry with the same idempotency_key returns the first write with 200. An exact repeat of
    a current item (same kind, content, payload and occurred_at) stores no copy: that item
    gains evidence (evidence_count, then confidence) and comes back with 200.
    """
    scope = resolve_scope(request, payload.user, payload.mode)
    items, is_replay = remember_items_once(
        scope,
        [payload],
        embedder=scope.embedder,
        idempotency_key=payload.idempotency_key,
        is_batch=False,
    )
    is_repeat = items[0].evidence_count > 1  # A new memory has one piece of evidence.
    return Status(200 if is_replay or is_repeat else 201, items[0])


@router.post(
    "/memories/batch",
    summary="Remember up to 100 memories at once",
    response={200: MemoryBatchOut, 201: MemoryBatchOut, **ERRORS},
)
def create_memories(request: HttpRequest, payload: MemoryBatchIn) -> Status[MemoryBatchOut]:
    """Remember several items at once: all of them, or none if any is invalid.

    A retry with the same idempotency_key returns the first write with 200.
    """
    scope = resolve_scope(request, payload.user, payload.mode)
    check_batch_content([item.content for item in payload.items])
    items, is_replay = remember_items_once(
        scope,
        list(payload.items),
        embedder=scope.embedder,
        idempotency_key=payload.idempotency_key,
        is_batch=True,
    )
    return Status(200 if is_replay else 201, MemoryBatchOut(items=items))


@router.get(
    "/memories",
    summary="List memories, newest first, by pages",
    response={200: MemoryPageOut, **ERRORS},
)
def list_memories_route(request: HttpRequest, filters: Query[MemoryListQuery]) -> MemoryPageOut:
    """List what is remembered about the user in the mode, newest first, by pages.

    With `as_of`, what was remembered at that moment, as it was then (docs/history.md).
    """
    scope = resolve_scope(request, filters.user, filters.mode)
    return page_memories(
        scope,
        kind=filters.kind,
        status=filters.status,
        cursor=filters.cursor,
        limit=filters.limit,
        as_of=filters.as_of,
    )


@router.get("/memories/{memory_id}", summary="Read one memory", response={200: MemoryOut, **ERRORS})
def get_memory_route(
    request: HttpRequest, memory_id: MemoryId, scope_in: Query[ScopeIn]
) -> MemoryOut:
    """One memory; another user's or mode's memory is 404."""
    scope = resolve_scope(request, scope_in.user, scope_in.mode)
    return read_memory(scope, memory_id)


@router.patch("/memories/{memory_id}", summary="Edit a memory", response={200: MemoryOut, **ERRORS})
def edit_memory_route(
    request: HttpRequest, memory_id: MemoryId, scope_in: Query[ScopeIn], payload: MemoryPatchIn
) -> MemoryOut:
    """Change a memory's content, importance or payload (the previous content is kept)."""
    scope = resolve_scope(request, scope_in.user, scope_in.mode)
    if payload.content is None and payload.importance is None and payload.payload is None:
        raise InvalidInputError(
            gettext_noop("nothing to change: send content, importance or payload")
        )
    _check_payload(payload.payload)
    item = edit_memory(
        user=scope.user,
        mode=scope.mode,
        memory_id=memory_id,
        actor=scope.actor,
        embedder=scope.embedder,
        content=payload.content,
        importance=payload.importance,
        payload=payload.payload,
        # The new words are the editor's: an agent's (even over the user's), or the user's own
        # through their personal key.
        source=MemorySource.AGENT if scope.agent else MemorySource.USER,
        agent_id=scope.agent.pk if scope.agent else None,
    )
    return MemoryOut.of(item)


@router.delete(
    "/memories/{memory_id}", summary="Delete a memory", response={200: DeletedOut, **ERRORS}
)
def delete_memory_route(
    request: HttpRequest, memory_id: MemoryId, scope_in: Query[ScopeIn]
) -> DeletedOut:
    """Delete one memory for good."""
    scope = resolve_scope(request, scope_in.user, scope_in.mode)
    deleted = delete_memories(
        user=scope.user, mode=scope.mode, memory_ids=[memory_id], actor=scope.actor
    )
    if not deleted:
        raise NotFoundError(gettext_noop("memory not found"))
    return DeletedOut(deleted=deleted)


@router.post(
    "/forget",
    summary="Forget memories by ids, period, topic or query",
    response={200: ForgetOut, 202: ForgetTaskOut, **ERRORS},
)
def forget_route(request: HttpRequest, payload: ForgetIn) -> Status[ForgetOut | ForgetTaskOut]:
    """Forget memories by ids, period, topic or query (criteria combine); gone from every read.

    202 with a task when a query picks more memories than MEMORYHUB_FORGET_IN_BACKGROUND_ABOVE.
    """
    scope = resolve_scope(request, payload.user, payload.mode)
    result = forget_memories(scope, payload, embedder=scope.embedder)
    return Status(202 if isinstance(result, ForgetTaskOut) else 200, result)


@router.get(
    "/forget/tasks/{task_id}",
    summary="Read a queued forget's status and receipt",
    response={200: ForgetTaskOut, **ERRORS},
)
def forget_task_route(
    request: HttpRequest, task_id: ForgetTaskId, scope_in: Query[ScopeIn]
) -> ForgetTaskOut:
    """A queued forget: "queued", or "done" with its receipt."""
    scope = resolve_scope(request, scope_in.user, scope_in.mode)
    return ForgetTaskOut.of(get_forget_task(user=scope.user, mode=scope.mode, task_id=task_id))
