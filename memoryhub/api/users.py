"""Agent API routes: the end users of the agent's workspace."""

from __future__ import annotations

import uuid

from django.http import HttpRequest
from django.urls import reverse
from django.utils.translation import gettext_noop
from ninja import P, PathEx, Router, Status

from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import ConflictError, InvalidInputError, PermissionDeniedError
from memoryhub.http import client_ip
from memoryhub.models import ApiKey, Channel, Mode, User
from memoryhub.services.user_links import has_login, issue_user_link
from memoryhub.services.users import create_user

from .auth import actor_for_key, request_key, resolve_scope, scope_for_key
from .schemas import ERRORS, UserIn, UserLinkIn, UserLinkOut, UserOut

router = Router(tags=["users"])
UserPathRef = PathEx[
    str,
    P(description="The user's external_id or MemoryHub UUID; `me` is a personal key's own user."),
]

EMAIL_REFUSED = gettext_noop(
    "email is not accepted: agents do not set a user's login. To let the person reach this "
    "user's memory, hand them the link from POST /users/{external_id}/link"
)


def user_out(user: User, *, shows_login: bool = False) -> UserOut:
    """The user as the API shows them. Their login email only to their own personal keys: it
    belongs to the person, and an agent that never set it has no use for it (`has_login`)."""
    return UserOut(
        id=user.pk,
        external_id=user.external_id,
        email=user.email if shows_login else None,
        display_name=user.display_name,
        is_memory_paused=user.is_memory_paused,
        has_login=has_login(user),
        modes=list(Mode.objects.filter(user=user).values_list("slug", flat=True)),
    )


def _is_another_users_id(workspace_id: int, external_id: str) -> bool:
    # A user reference is a UUID or an external id (api/auth.py tries the UUID first): an
    # external id spelling another user's UUID would name that user, never this one.
    try:
        user_id = uuid.UUID(external_id)
    except ValueError:
        return False
    return User.objects.filter(workspace_id=workspace_id, pk=user_id).exists()


def create_or_get_user_for_key(
    api_key: ApiKey, payload: UserIn, *, channel: Channel, ip: str | None
) -> tuple[UserOut, bool]:
    """Create an end user of the key's workspace, or find the one with this external_id.

    True when created. Raises PermissionDeniedError for a personal key, InvalidInputError
    for an email or a blank external_id, ConflictError for an external_id that is another
    user's UUID, AgentBlockedError when the existing user blocked the agent.
    """
    if api_key.agent is None:
        raise PermissionDeniedError(gettext_noop("only agent keys can create users"))
    # Security invariant: an agent never sets a login identity, so an email it sends is refused
    # unread: the answer is the same whether or not anyone on the hub uses that address.
    if payload.email is not None:
        raise InvalidInputError(EMAIL_REFUSED)
    workspace = api_key.agent.workspace
    external_id = payload.external_id.strip()
    if not external_id:
        raise InvalidInputError(gettext_noop("external_id must not be blank"))
    existing = User.objects.filter(workspace=workspace, external_id=external_id).first()
    if existing is not None:
        # The same scope rules as every other route: a user who blocked this agent is a 403,
        # not their modes.
        scope = scope_for_key(api_key, str(existing.pk), channel=channel, ip=ip)
        record_access(actor=scope.actor, subject_user_id=existing.pk, action=AuditAction.USER_READ)
        return user_out(existing), False
    if _is_another_users_id(workspace.pk, external_id):
        raise ConflictError(gettext_noop("external_id is the id of another user of this workspace"))
    actor = actor_for_key(api_key, channel=channel, ip=ip)
    # No email, no password: nobody can sign in as this user until a person follows a link.
    user = create_user(
        workspace=workspace,
        external_id=external_id,
        display_name=payload.display_name.strip(),
        created_by_agent=api_key.agent,
        actor=actor,
    )
    return user_out(user), True


def read_user(api_key: ApiKey, user_ref: str, *, channel: Channel, ip: str | None) -> UserOut:
    """One user the key reaches, by external_id or hub UUID; `me` is a personal key's own."""
    scope = scope_for_key(api_key, user_ref, channel=channel, ip=ip)
    record_access(actor=scope.actor, subject_user_id=scope.user.pk, action=AuditAction.USER_READ)
    return user_out(scope.user, shows_login=api_key.agent is None)


@router.post(
    "/users",
    summary="Create a user, or get the one with this external_id",
    response={200: UserOut, 201: UserOut, **ERRORS},
)
def create_or_get_user(request: HttpRequest, payload: UserIn) -> Status[UserOut]:
    """Create an end user of the agent's workspace, or return the one with this external_id."""
    user, is_created = create_or_get_user_for_key(
        request_key(request), payload, channel=Channel.API, ip=client_ip(request)
    )
    return Status(201 if is_created else 200, user)


@router.get("/users/{external_id}", summary="Read a user", response={200: UserOut, **ERRORS})
def get_user(request: HttpRequest, external_id: UserPathRef) -> UserOut:
    """One end user, by external_id or hub UUID; `me` is a personal key's own user."""
    return read_user(request_key(request), external_id, channel=Channel.API, ip=client_ip(request))


@router.post(
    "/users/{external_id}/link",
    summary="Create a one-time link for the person to claim the user",
    response={201: UserLinkOut, **ERRORS},
)
def create_user_link(
    request: HttpRequest, external_id: UserPathRef, payload: UserLinkIn
) -> Status[UserLinkOut]:
    """A one-time link for the person: opened while signed in to an account that confirmed
    `email`, their login reaches this user.

    It works once, for 24 hours; a newer link replaces it. 409 if the user has a login already,
    403 `not_user_creator` to any agent but the one that created the user.
    """
    api_key = request_key(request)
    if api_key.agent is None:
        raise PermissionDeniedError(gettext_noop("only agent keys can link users"))
    scope = resolve_scope(request, external_id)
    issued = issue_user_link(
        user=scope.user, agent=api_key.agent, email=payload.email, actor=scope.actor
    )
    path = reverse("dashboard:user_link", kwargs={"token": issued.token})
    return Status(
        201, UserLinkOut(url=request.build_absolute_uri(path), expires_at=issued.expires_at)
    )
