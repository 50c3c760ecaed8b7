"""Webhooks: a workspace's endpoints and the deliveries of each change announced to them."""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.db import models
from django.utils import timezone
from django.utils.translation import pgettext_lazy

from .workspaces import Workspace


class WebhookEndpoint(models.Model):
    """A URL of a workspace that hears of the events it subscribed to, signed with its secret."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    description = models.CharField(max_length=200, blank=True)
    # Standard Webhooks form ("whsec_" + base64 of the key bytes), sealed with the workspace's
    # data key (sealed_tables.WEBHOOK_TABLE): it must be read back to sign, so it is not hashed.
    secret_ciphertext = models.BinaryField()
    # After a rotation the old secret still signs (a second signature) until this time.
    previous_secret_ciphertext = models.BinaryField(null=True, blank=True)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    event_types = models.JSONField(default=list)
    is_enabled = models.BooleanField(default=True)
    # Memory text goes out only to an endpoint explicitly allowed to receive it.
    include_text = models.BooleanField(default=False)
    # Circuit breaker: open after consecutive failures, half-open once the cool-down passed.
    consecutive_failures = models.PositiveIntegerField(default=0)
    circuit_opened_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering: ClassVar[list[str]] = ["created_at"]

    def __str__(self) -> str:
        return f"{self.url} ({self.workspace_id})"


class WebhookDelivery(models.Model):
    """One message to one endpoint: its payload, attempts and outcome (the delivery log)."""

    class Status(models.TextChoices):
        PENDING = "pending", pgettext_lazy("webhook delivery", "pending")
        DELIVERED = "delivered", pgettext_lazy("webhook delivery", "delivered")
        FAILED = (
            "failed",
            pgettext_lazy("webhook delivery", "failed"),
        )  # Failed so far; retried at next_attempt_at.
        DEAD = (
            "dead",
            pgettext_lazy("webhook delivery", "dead"),
        )  # Gave up after the maximum attempts; replay sends it again.

    id = models.BigAutoField(primary_key=True)
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    # The `webhook-id` header: the same on every attempt and replay, so receivers deduplicate.
    message_id = models.CharField(max_length=64)
    event_type = models.CharField(max_length=40)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["endpoint", "message_id"], name="webhook_delivery_unique_message"
            ),
        ]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(
                fields=["next_attempt_at"],
                name="webhook_delivery_due_idx",
                condition=models.Q(status__in=["pending", "failed"]),
            ),
        ]
        ordering: ClassVar[list[str]] = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.event_type} {self.message_id} → {self.endpoint_id} ({self.status})"
