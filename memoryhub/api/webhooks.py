"""Agent API routes: the webhook endpoints of the calling agent's workspace and their log.

Workspace-wide, like the graph's insights: for the workspace's agent keys, never for one
user's personal key. The secret is shown on creation and rotation only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, get_args
from uuid import UUID

from django.http import HttpRequest
from django.utils.translation import gettext_noop
from ninja import P, PathEx, Query, Router, Schema, Status
from pydantic import Field

from memoryhub.actors import Actor
from memoryhub.errors import NotAuthenticatedError, PermissionDeniedError
from memoryhub.http import client_ip
from memoryhub.models import ApiKey, Channel, WebhookDelivery, WebhookEndpoint, Workspace
from memoryhub.webhooks import events, queries, services

from .auth import actor_for_key
from .schemas import ERRORS

router = Router(tags=["webhooks"])
WebhookId = PathEx[
    UUID,
    P(
        description="The endpoint's id, as POST /webhooks or GET /webhooks returned it; another workspace's is 404."
    ),
]

EventType = Literal[
    "memory.created",
    "memory.updated",
    "memory.forgotten",
    "session.extracted",
    "candidate.waiting",
    "review.decided",
    "user.deleted",
]
# One list, two spellings: the schema's literal must name exactly the domain's event types.
if set(get_args(EventType)) != set(events.EVENT_TYPES):
    raise RuntimeError("api/webhooks.py EventType differs from webhooks/events.py EVENT_TYPES")
MAX_LOG = 200
MAX_ID = 2**63 - 1  # A bigint: a larger id is a 422, not a database error.
DeliveryId = PathEx[
    Annotated[int, Field(ge=1, le=MAX_ID)],
    P(description="The delivery's id, from GET /webhooks/{webhook_id}/deliveries."),
]


class WebhookIn(Schema):
    url: Annotated[str, Field(min_length=1, max_length=500)] = Field(
        description=(
            "Where to POST events: an https URL (http only where the server allows it) of at "
            "most 500 characters. A host that resolves to a loopback, private or link-local "
            "address is refused."
        )
    )
    event_types: Annotated[
        list[EventType], Field(min_length=1, max_length=len(events.EVENT_TYPES))
    ] = Field(
        description=(
            "The events to send (at least one): memory.created, memory.updated, "
            "memory.forgotten, session.extracted, candidate.waiting, review.decided, "
            "user.deleted."
        )
    )
    include_text: bool = Field(
        default=False,
        description=("True: memory events carry the decrypted text; false: ids and metadata only."),
    )
    description: Annotated[str, Field(max_length=200)] = Field(
        default="", description="A note for yourself, up to 200 characters."
    )


class WebhookOut(Schema):
    id: UUID = Field(description="The endpoint's id (UUID).")
    url: str = Field(description="Where events are POSTed.")
    description: str = Field(description="Your note about the endpoint.")
    event_types: list[str] = Field(description="The events sent to it.")
    is_enabled: bool = Field(
        description=(
            "False after POST /webhooks/{webhook_id}/disable: nothing is sent until enabled."
        )
    )
    include_text: bool = Field(description="Whether memory events carry the decrypted text.")
    circuit_open: bool = Field(
        description=(
            "True after repeated failures: deliveries pause for a cooldown, then one "
            "probe is tried."
        )
    )
    consecutive_failures: int = Field(
        description="Failed attempts in a row since the last success."
    )
    created_at: datetime = Field(description="When the endpoint was added (UTC).")


class WebhookSecretOut(WebhookOut):
    secret: str = Field(
        description=(
            "The signing secret (whsec_…), shown only here: verify each delivery's "
            "webhook-signature with it (Standard Webhooks)."
        )
    )
    previous_secret_expires_at: datetime | None = Field(
        description=(
            "After a rotation, until when the old secret also signs (UTC); null otherwise."
        )
    )


class DeliveryQueryIn(Schema):
    status: Literal["pending", "delivered", "failed", "dead"] | None = Field(
        default=None,
        description=(
            "Only deliveries in this status: pending, delivered, failed (retried at "
            "next_attempt_at) or dead (gave up; replay to retry)."
        ),
    )
    limit: Annotated[int, Field(ge=1, le=MAX_LOG)] = Field(
        default=50, description="At most this many deliveries, 1 to 200 (default 50)."
    )


class DeliveryOut(Schema):
    id: int = Field(
        description=(
            "The delivery's id (an integer), for POST /webhooks/deliveries/{delivery_id}/replay."
        )
    )
    endpoint_id: UUID = Field(description="The endpoint it goes to.")
    message_id: str = Field(
        description=(
            "The webhook-id header value; the same on every attempt and replay, so "
            "receivers can deduplicate."
        )
    )
    event_type: str = Field(description="The event, e.g. memory.created.")
    status: str = Field(
        description=("pending, delivered, failed (retried at next_attempt_at) or dead (gave up).")
    )
    attempts: int = Field(description="How many times it was tried.")
    next_attempt_at: datetime = Field(
        description="When it is tried next (UTC); meaningless once delivered or dead."
    )
    last_status_code: int | None = Field(
        description=(
            "The HTTP status of the last attempt; null when none answered (timeout, refused)."
        )
    )
    last_error: str = Field(description="What went wrong on the last attempt; empty when none.")
    created_at: datetime = Field(description="When the event happened (UTC).")
    delivered_at: datetime | None = Field(
        description="When it was delivered (UTC); null until then."
    )


def _agent_workspace(request: HttpRequest) -> tuple[Workspace, Actor]:
    api_key = request.auth  # type: ignore[attr-defined]  # Set by ApiKeyAuth on every route.
    if not isinstance(api_key, ApiKey):
        raise NotAuthenticatedError(gettext_noop("missing, unknown or revoked API key"))
    if api_key.agent is None:
        raise PermissionDeniedError(
            gettext_noop("webhooks are for workspace agents, not personal keys")
        )
    return api_key.agent.workspace, actor_for_key(
        api_key, channel=Channel.API, ip=client_ip(request)
    )


def webhook_out(endpoint: WebhookEndpoint) -> WebhookOut:
    return WebhookOut(
        id=endpoint.pk,
        url=endpoint.url,
        description=endpoint.description,
        event_types=list(endpoint.event_types),
        is_enabled=endpoint.is_enabled,
        include_text=endpoint.include_text,
        circuit_open=endpoint.circuit_opened_at is not None,
        consecutive_failures=endpoint.consecutive_failures,
        created_at=endpoint.created_at,
    )


def _with_secret(endpoint: WebhookEndpoint) -> WebhookSecretOut:
    return WebhookSecretOut(
        **webhook_out(endpoint).model_dump(),
        secret=services.current_secret(endpoint),
        previous_secret_expires_at=endpoint.previous_secret_expires_at,
    )


def delivery_out(delivery: WebhookDelivery) -> DeliveryOut:
    return DeliveryOut(
        id=delivery.pk,
        endpoint_id=delivery.endpoint_id,
        message_id=delivery.message_id,
        event_type=delivery.event_type,
        status=delivery.status,
        attempts=delivery.attempts,
        next_attempt_at=delivery.next_attempt_at,
        last_status_code=delivery.last_status_code,
        last_error=delivery.last_error,
        created_at=delivery.created_at,
        delivered_at=delivery.delivered_at,
    )


@router.get(
    "/webhooks",
    summary="List the workspace's webhook endpoints",
    response={200: list[WebhookOut], **ERRORS},
)
def list_webhooks(request: HttpRequest) -> list[WebhookOut]:
    """The workspace's webhook endpoints (without their secrets)."""
    workspace, actor = _agent_workspace(request)
    return [webhook_out(e) for e in queries.endpoints_of(workspace=workspace, actor=actor)]


@router.post(
    "/webhooks", summary="Add a webhook endpoint", response={201: WebhookSecretOut, **ERRORS}
)
def create_webhook(request: HttpRequest, payload: WebhookIn) -> Status[WebhookSecretOut]:
    """Add an endpoint; its `whsec_` secret is in this answer only (and after a rotation)."""
    workspace, actor = _agent_workspace(request)
    endpoint = services.create_endpoint(
        workspace=workspace,
        url=payload.url,
        event_types=list(payload.event_types),
        include_text=payload.include_text,
        description=payload.description,
        actor=actor,
    )
    return Status(201, _with_secret(endpoint))


@router.post(
    "/webhooks/{webhook_id}/rotate",
    summary="Rotate a webhook endpoint's signing secret",
    response={200: WebhookSecretOut, **ERRORS},
)
def rotate_webhook_secret(request: HttpRequest, webhook_id: WebhookId) -> WebhookSecretOut:
    """A new secret; the old one keeps signing beside it until `previous_secret_expires_at`."""
    workspace, actor = _agent_workspace(request)
    endpoint = services.rotate_secret(workspace=workspace, endpoint_id=webhook_id, actor=actor)
    return _with_secret(endpoint)


@router.post(
    "/webhooks/{webhook_id}/disable",
    summary="Disable a webhook endpoint",
    response={200: WebhookOut, **ERRORS},
)
def disable_webhook(request: HttpRequest, webhook_id: WebhookId) -> WebhookOut:
    """Stop sending to an endpoint; its deliveries wait until it is enabled again."""
    workspace, actor = _agent_workspace(request)
    endpoint = services.set_enabled(
        workspace=workspace, endpoint_id=webhook_id, enabled=False, actor=actor
    )
    return webhook_out(endpoint)


@router.post(
    "/webhooks/{webhook_id}/enable",
    summary="Enable a webhook endpoint",
    response={200: WebhookOut, **ERRORS},
)
def enable_webhook(request: HttpRequest, webhook_id: WebhookId) -> WebhookOut:
    """Send to an endpoint again (its circuit closed)."""
    workspace, actor = _agent_workspace(request)
    endpoint = services.set_enabled(
        workspace=workspace, endpoint_id=webhook_id, enabled=True, actor=actor
    )
    return webhook_out(endpoint)


@router.get(
    "/webhooks/{webhook_id}/deliveries",
    summary="List an endpoint's deliveries",
    response={200: list[DeliveryOut], **ERRORS},
)
def list_deliveries(
    request: HttpRequest, webhook_id: WebhookId, params: Query[DeliveryQueryIn]
) -> list[DeliveryOut]:
    """The endpoint's delivery log, newest first."""
    workspace, actor = _agent_workspace(request)
    rows = queries.deliveries_of(
        workspace=workspace, actor=actor, endpoint_id=webhook_id, status=params.status
    )
    return [delivery_out(d) for d in rows[: params.limit]]


@router.post(
    "/webhooks/deliveries/{delivery_id}/replay",
    summary="Send a delivery again",
    response={200: DeliveryOut, **ERRORS},
)
def replay_delivery(request: HttpRequest, delivery_id: DeliveryId) -> DeliveryOut:
    """Send a delivery again with the same `webhook-id` (receivers deduplicate on it)."""
    workspace, actor = _agent_workspace(request)
    delivery = services.replay_delivery(workspace=workspace, delivery_id=delivery_id, actor=actor)
    return delivery_out(delivery)
