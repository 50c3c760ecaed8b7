"""Webhook reads: a workspace's endpoints and its delivery log (audited as one list)."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.models import WebhookDelivery, WebhookEndpoint, Workspace

from .services import get_endpoint


def endpoints_of(*, workspace: Workspace, actor: Actor) -> QuerySet[WebhookEndpoint]:
    """The workspace's endpoints, oldest first."""
    record_access(actor=actor, subject_user_id=None, action=AuditAction.WEBHOOK_LIST)
    return WebhookEndpoint.objects.filter(workspace=workspace).order_by("created_at")


def deliveries_of(
    *,
    workspace: Workspace,
    actor: Actor,
    endpoint_id: uuid.UUID | str | None = None,
    status: str | None = None,
) -> QuerySet[WebhookDelivery]:
    """The delivery log of the workspace (or one endpoint of it), newest first."""
    rows = WebhookDelivery.objects.filter(endpoint__workspace=workspace).select_related("endpoint")
    if endpoint_id is not None:
        rows = rows.filter(endpoint=get_endpoint(workspace=workspace, endpoint_id=endpoint_id))
    if status:
        rows = rows.filter(status=status)
    record_access(
        actor=actor,
        subject_user_id=None,
        action=AuditAction.WEBHOOK_LIST,
        object_ids=[endpoint_id] if endpoint_id else [],
    )
    return rows.order_by("-created_at", "-id")
