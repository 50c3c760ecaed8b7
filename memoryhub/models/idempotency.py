"""Writes sent with an idempotency key, and what they wrote, so that a retry gets the first write."""

from __future__ import annotations

from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from .workspaces import Mode, User


class IdempotentWrite(models.Model):
    """One write an agent or personal key sent with an idempotency key, and the memories it wrote.

    Neither the key nor the request is stored: a plain hash of the key (agents choose keys, and
    they may carry text) and a hash of the request keyed by the user's data key.
    """

    # Whose key space: "agent:<agent id>" (all of an agent's keys) or "user:<user id>" (all
    # of a user's personal keys). Two owners never see each other's idempotency keys.
    owner = models.CharField(max_length=64)
    key_digest = models.CharField(max_length=64)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    mode = models.ForeignKey(Mode, on_delete=models.CASCADE, related_name="+")
    request_digest = models.CharField(max_length=64)
    memory_ids = ArrayField(models.UUIDField())
    # Indexed for the hourly sweep, which deletes the oldest first (services/idempotency.py).
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["owner", "key_digest"], name="idempotent_write_unique"),
        ]

    def __str__(self) -> str:
        return f"idempotent write of {self.owner} at {self.created_at:%Y-%m-%d %H:%M}"
