"""A forget by query too large to run within a request: queued, then run by a worker."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from .workspaces import Mode, User


class ForgetTask(models.Model):
    """One queued forget and, once it ran, its receipt (counts by kind, memory ids)."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        DONE = "done"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    mode = models.ForeignKey(Mode, on_delete=models.CASCADE, related_name="+")
    # The query and topic say what the user wants gone: sealed with their key (forget_task).
    selector_ciphertext = models.BinaryField()
    since = models.DateTimeField(null=True, blank=True)
    until = models.DateTimeField(null=True, blank=True)
    # Who asked, for the audit row the forget writes when it runs.
    actor_type = models.CharField(max_length=16)
    actor_id = models.CharField(max_length=64)
    actor_channel = models.CharField(max_length=16)
    actor_label = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    counts = models.JSONField(default=dict, blank=True)
    memory_ids = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"forget task {self.id} ({self.status})"
