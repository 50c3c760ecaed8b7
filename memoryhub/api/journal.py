"""Agent API routes: the agent's own journal, so it never repeats itself to a user."""

from __future__ import annotations

from uuid import UUID

from django.http import HttpRequest
from django.utils.translation import gettext_noop
from ninja import P, PathEx, Query, Router, Status

from memoryhub.errors import PermissionDeniedError
from memoryhub.keyring import cipher_for
from memoryhub.models import Agent
from memoryhub.queries.journal import JournalItem, decrypt_journal_entry, list_journal
from memoryhub.services.journal import add_journal_entry, resolve_journal_entry

from .auth import Scope, resolve_scope
from .schemas import ERRORS, JournalIn, JournalListOut, JournalListQuery, JournalOut, ScopeIn

router = Router(tags=["journal"])
EntryId = PathEx[
    UUID, P(description="The journal entry's id, as POST /journal or GET /journal returned it.")
]


def journal_out(item: JournalItem) -> JournalOut:
    return JournalOut(
        id=item.id,
        type=item.entry_type,
        summary=item.summary,
        key=item.key,
        created_at=item.created_at,
        resolved_at=item.resolved_at,
        is_flagged=item.is_flagged,
    )


def _agent_of(scope: Scope) -> Agent:
    if scope.agent is None:
        raise PermissionDeniedError(
            gettext_noop("the journal belongs to an agent: use an agent key")
        )
    return scope.agent


@router.post(
    "/journal",
    summary="Record an alert, recommendation or action",
    response={200: JournalOut, 201: JournalOut, **ERRORS},
)
def add_entry(request: HttpRequest, payload: JournalIn) -> Status[JournalOut]:
    """Record an alert, recommendation or action; an unresolved entry with the same key is 200."""
    scope = resolve_scope(request, payload.user, payload.mode)
    entry, created = add_journal_entry(
        agent=_agent_of(scope),
        user=scope.user,
        mode=scope.mode,
        entry_type=payload.type,
        summary=payload.summary,
        key=payload.key,
        actor=scope.actor,
    )
    item = decrypt_journal_entry(entry, cipher_for(scope.user))
    return Status(201 if created else 200, journal_out(item))


@router.get(
    "/journal",
    summary="List what the agent already told the user",
    response={200: JournalListOut, **ERRORS},
)
def list_entries(request: HttpRequest, filters: Query[JournalListQuery]) -> JournalListOut:
    """What the agent already surfaced to the user in the mode, newest first, one per key."""
    scope = resolve_scope(request, filters.user, filters.mode)
    items = list_journal(
        agent=_agent_of(scope),
        user=scope.user,
        mode=scope.mode,
        actor=scope.actor,
        since=filters.since,
        is_unresolved_only=filters.unresolved,
        limit=filters.limit,
    )
    return JournalListOut(items=[journal_out(item) for item in items])


@router.post(
    "/journal/{entry_id}/resolve",
    summary="Resolve a journal entry",
    response={200: JournalOut, **ERRORS},
)
def resolve_entry(request: HttpRequest, entry_id: EntryId, scope_in: Query[ScopeIn]) -> JournalOut:
    """Mark an entry resolved, so it no longer shows with `unresolved=true`."""
    scope = resolve_scope(request, scope_in.user, scope_in.mode)
    entry = resolve_journal_entry(
        agent=_agent_of(scope),
        user=scope.user,
        mode=scope.mode,
        entry_id=entry_id,
        actor=scope.actor,
    )
    return journal_out(decrypt_journal_entry(entry, cipher_for(scope.user)))
