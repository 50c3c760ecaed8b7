"""Agent API route: a memory's history, every text it has had with who changed it and why."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import Field

from memoryhub.queries.history import MemoryHistory, get_memory_history

from .auth import Scope, resolve_scope
from .memories import MemoryId
from .schemas import ERRORS, ScopeIn

router = Router(tags=["history"])


class VersionOut(Schema):
    version: int = Field(description="1 for the first text, counting up; the last is current.")
    content: str = Field(description="The memory's text in this version, decrypted.")
    payload: dict[str, Any] = Field(description="The memory's details in this version.")
    kind: str | None = Field(
        description="fact, preference, …; null on versions kept before kinds were recorded."
    )
    confidence: str | None = Field(
        description=(
            "candidate, medium or high while this version was current; null on versions kept "
            "before confidence was recorded."
        )
    )
    status: str | None = Field(
        description="active, candidate or superseded while this version was current, or null."
    )
    changed_by_type: str = Field(
        description="Who made this version: agent, user, reviewer, admin or system."
    )
    changed_by_id: str = Field(
        description=(
            "Their id: an agent's UUID or personal-key:<id>, the user's UUID, `extraction` for "
            "what was learnt from a conversation; empty when not known."
        )
    )
    reason: str = Field(
        description=(
            "Why: created, edit (new text or details), confidence (a new confidence alone), "
            "confirm (the user confirmed it), evidence (heard again: a step up the confidence "
            "ladder), regenerate (a summary rewritten)."
        )
    )
    valid_from: datetime = Field(description="When this version became the memory's text.")
    valid_to: datetime | None = Field(
        description="When it stopped being so (the next version, or the memory superseded)."
    )


class HistoryOut(Schema):
    memory_id: UUID = Field(description="The memory whose history this is.")
    status: str = Field(description="Its status today: active or superseded.")
    supersedes: UUID | None = Field(
        description="The memory this one replaced (a contradicted value), if it still exists."
    )
    superseded_by: list[UUID] = Field(
        description="The memories that replaced this one; ask their history for what came next."
    )
    versions: list[VersionOut] = Field(description="Every version, oldest first.")

    @classmethod
    def of(cls, history: MemoryHistory) -> HistoryOut:
        return cls(
            memory_id=history.memory_id,
            status=history.status,
            supersedes=history.supersedes,
            superseded_by=list(history.superseded_by),
            versions=[
                VersionOut(
                    version=entry.version,
                    content=entry.content,
                    payload=entry.payload,
                    kind=entry.kind,
                    confidence=entry.confidence,
                    status=entry.status,
                    changed_by_type=entry.changed_by_type,
                    changed_by_id=entry.changed_by_id,
                    reason=entry.reason,
                    valid_from=entry.valid_from,
                    valid_to=entry.valid_to,
                )
                for entry in history.entries
            ],
        )


def read_history(scope: Scope, memory_id: UUID) -> HistoryOut:
    history = get_memory_history(
        user=scope.user, mode=scope.mode, memory_id=memory_id, actor=scope.actor
    )
    return HistoryOut.of(history)


@router.get(
    "/memories/{memory_id}/history",
    summary="List every version of a memory",
    response={200: HistoryOut, **ERRORS},
)
def history(request: HttpRequest, memory_id: MemoryId, scope_in: Query[ScopeIn]) -> HistoryOut:
    """Every version of a memory, oldest first: its text, kind and confidence, who changed it
    (agent, user, reviewer or system), why, and when.

    A superseded memory keeps its history; a forgotten one has none (404), nor does a
    candidate for an agent, nor anything in a mode whose memory the user turned off.
    """
    return read_history(resolve_scope(request, scope_in.user, scope_in.mode), memory_id)
