"""The agent's own journal of what it already surfaced to a user, so it never repeats itself."""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.db import models
from django.utils import timezone

from .workspaces import Agent, Mode, User


class JournalEntry(models.Model):
    class EntryType(models.TextChoices):
        ALERT = "alert"
        RECOMMENDATION = "recommendation"
        ACTION = "action"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="journal_entries")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    mode = models.ForeignKey(Mode, on_delete=models.CASCADE, related_name="+")
    entry_type = models.CharField(max_length=16, choices=EntryType.choices)
    summary_ciphertext = models.BinaryField()
    # The agent's dedup key may name the user's business ("divorce-lawyer-call"): it is kept as
    # a keyed hash under the user's data key, to match on, and as ciphertext, to show.
    key_hash = models.CharField(max_length=64, blank=True)
    key_ciphertext = models.BinaryField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["agent", "user", "mode", "-created_at"], name="journal_scope_idx"),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            # One unresolved entry per key: two agents' requests racing past the service's
            # check cannot both insert (services/journal.py returns the winner's entry).
            models.UniqueConstraint(
                fields=["agent", "user", "mode", "key_hash"],
                condition=models.Q(resolved_at__isnull=True) & ~models.Q(key_hash=""),
                name="journal_unresolved_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.entry_type} {self.id}"
