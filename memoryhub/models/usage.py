"""What each user stores, counted by the database, and the API requests each key owner runs."""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.db import models

from .workspaces import User


class MemoryUsage(models.Model):
    """How many memory rows a user has and how many bytes of ciphertext they hold.

    Kept by triggers on the memory and journal tables (migrations 0021, 0023), not by the
    services: every path that inserts, re-seals or deletes rows (forget, retention, a user's
    deletion, a raw bulk insert) keeps it true, so the quota check reads one row instead of
    counting 100,000. `stored_bytes` is the length of the memories' content and payload
    ciphertexts and the journal notes' summary and key ciphertexts (the text plus 29 bytes of
    format, nonce and tag each), not embeddings or indexes.
    """

    user = models.OneToOneField(User, on_delete=models.CASCADE, primary_key=True, related_name="+")
    memory_count = models.BigIntegerField(default=0)
    stored_bytes = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.user_id}: {self.memory_count} memories, {self.stored_bytes} bytes"


class RequestSlot(models.Model):
    """One API or MCP request a key owner has running; deleted when the request ends.

    A row rather than a per-process counter so the limit holds across web worker processes.
    A worker killed mid-request leaves its row behind until `expires_at`.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.CharField(max_length=64)
    started_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["owner", "expires_at"], name="request_slot_owner_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.owner} since {self.started_at:%H:%M:%S}"
