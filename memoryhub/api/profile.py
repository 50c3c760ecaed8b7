"""Agent API routes: the user's profile and open items in one mode."""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from ninja import Query, Router

from memoryhub.queries.profile import get_profile, list_open_items

from .auth import Scope, resolve_scope
from .schemas import ERRORS, MemoryOut, OpenItemsOut, ProfileOut, ProfileQuery, ScopeIn

router = Router(tags=["profile"])


def read_profile(scope: Scope, *, as_of: datetime | None = None) -> ProfileOut:
    profile = get_profile(user=scope.user, mode=scope.mode, actor=scope.actor, as_of=as_of)
    return ProfileOut(
        facts=[MemoryOut.of(item) for item in profile.facts],
        preferences=[MemoryOut.of(item) for item in profile.preferences],
        procedures=[MemoryOut.of(item) for item in profile.procedures],
    )


def read_open_items(scope: Scope) -> OpenItemsOut:
    items = list_open_items(user=scope.user, mode=scope.mode, actor=scope.actor)
    return OpenItemsOut(items=[MemoryOut.of(item) for item in items])


@router.get(
    "/profile",
    summary="Read the user's profile: facts, preferences, procedures",
    response={200: ProfileOut, **ERRORS},
)
def profile(request: HttpRequest, scope_in: Query[ProfileQuery]) -> ProfileOut:
    """The active facts, preferences and procedures about the user in the mode.

    With `as_of`, the profile as it was at that moment (docs/history.md).
    """
    scope = resolve_scope(request, scope_in.user, scope_in.mode)
    return read_profile(scope, as_of=scope_in.as_of)


@router.get(
    "/open-items", summary="List the user's open items", response={200: OpenItemsOut, **ERRORS}
)
def open_items(request: HttpRequest, scope_in: Query[ScopeIn]) -> OpenItemsOut:
    """What is still open for the user in the mode (to-dos, follow-ups)."""
    return read_open_items(resolve_scope(request, scope_in.user, scope_in.mode))
