"""Agent API routes: the webhook endpoints of the calling agent's workspace and their log.

Workspace-wide, like the graph's insights: for the workspace's agent keys, never for one
user's personal key. The secret is shown on creation and rotation only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, get_args
from uuid import UUID

from django.http import HttpRequest
from ninja import Path, Query, Router, Schema, Status
from pydantic import Field

from memoryhub.actors import Actor
from memoryhub.errors import NotAuthenticatedError, PermissionDeniedError
from memoryhub.http import client_ip
from memoryhub.models import ApiKey, Channel, WebhookDelivery, WebhookEndpoint, Workspace
from memoryhub.webhooks import events, queries, services

from .auth import actor_for_key
from .schemas import ERRORS

router = Router(tags=["webhooks"])

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


class WebhookIn(Schema):
    url: Annotated[str, Field(min_length=1, max_length=500)]
    event_types: Annotated[list[EventType], Field(min_length=1, max_length=len(events.EVENT_TYPES))]
    include_text: bool = False
    description: Annotated[str, Field(max_length=200)] = ""


class WebhookOut(Schema):
    id: UUID
    url: str
    description: str
    event_types: list[str]
    is_enabled: bool
    include_text: bool
    circuit_open: bool
    consecutive_failures: int
    created_at: datetime


class WebhookSecretOut(WebhookOut):
    secret: str
    previous_secret_expires_at: datetime | None


class DeliveryQueryIn(Schema):
    status: Literal["pending", "delivered", "failed", "dead"] | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_LOG)] = 50


class DeliveryOut(Schema):
    id: int
    endpoint_id: UUID
    message_id: str
    event_type: str
    status: str
    attempts: int
    next_attempt_at: datetime
    last_status_code: int | None
    last_error: str
    created_at: datetime
    delivered_at: datetime | None


def _agent_workspace(request: HttpRequest) -> tuple[Workspace, Actor]:
    api_key = request.auth  # type: ignore[attr-defined]  # Set by ApiKeyAuth on every route.
    if not isinstance(api_key, ApiKey):
        raise NotAuthenticatedError("missing, unknown or revoked API key")
    if api_key.agent is None:
        raise PermissionDeniedError("webhooks are for workspace agents, not personal keys")
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


@router.get("/webhooks", response={200: list[WebhookOut], **ERRORS})
def list_webhooks(request: HttpRequest) -> list[WebhookOut]:
    """The workspace's webhook endpoints (without their secrets)."""
    workspace, actor = _agent_workspace(request)
    return [webhook_out(e) for e in queries.endpoints_of(workspace=workspace, actor=actor)]


@router.post("/webhooks", response={201: WebhookSecretOut, **ERRORS})
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


@router.post("/webhooks/{webhook_id}/rotate", response={200: WebhookSecretOut, **ERRORS})
def rotate_webhook_secret(request: HttpRequest, webhook_id: UUID) -> WebhookSecretOut:
    """A new secret; the old one keeps signing beside it until `previous_secret_expires_at`."""
    workspace, actor = _agent_workspace(request)
    endpoint = services.rotate_secret(workspace=workspace, endpoint_id=webhook_id, actor=actor)
    return _with_secret(endpoint)


@router.post("/webhooks/{webhook_id}/disable", response={200: WebhookOut, **ERRORS})
def disable_webhook(request: HttpRequest, webhook_id: UUID) -> WebhookOut:
    """Stop sending to an endpoint; its deliveries wait until it is enabled again."""
    workspace, actor = _agent_workspace(request)
    endpoint = services.set_enabled(
        workspace=workspace, endpoint_id=webhook_id, enabled=False, actor=actor
    )
    return webhook_out(endpoint)


@router.post("/webhooks/{webhook_id}/enable", response={200: WebhookOut, **ERRORS})
def enable_webhook(request: HttpRequest, webhook_id: UUID) -> WebhookOut:
    """Send to an endpoint again (its circuit closed)."""
    workspace, actor = _agent_workspace(request)
    endpoint = services.set_enabled(
        workspace=workspace, endpoint_id=webhook_id, enabled=True, actor=actor
    )
    return webhook_out(endpoint)


@router.get("/webhooks/{webhook_id}/deliveries", response={200: list[DeliveryOut], **ERRORS})
def list_deliveries(
    request: HttpRequest, webhook_id: UUID, params: Query[DeliveryQueryIn]
) -> list[DeliveryOut]:
    """The endpoint's delivery log, newest first."""
    workspace, actor = _agent_workspace(request)
    rows = queries.deliveries_of(
        workspace=workspace, actor=actor, endpoint_id=webhook_id, status=params.status
    )
    return [delivery_out(d) for d in rows[: params.limit]]


@router.post("/webhooks/deliveries/{delivery_id}/replay", response={200: DeliveryOut, **ERRORS})
def replay_delivery(
    request: HttpRequest, delivery_id: Path[Annotated[int, Field(ge=1, le=MAX_ID)]]
) -> DeliveryOut:
    """Send a delivery again with the same `webhook-id` (receivers deduplicate on it)."""
    workspace, actor = _agent_workspace(request)
    delivery = services.replay_delivery(workspace=workspace, delivery_id=delivery_id, actor=actor)
    return delivery_out(delivery)
