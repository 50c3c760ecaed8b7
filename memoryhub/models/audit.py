"""The append-only, hash-chained access audit log."""

from __future__ import annotations

from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

# Chain names that cannot be a subject pseudonym (32 hex digits).
SYSTEM_CHAIN = "system"
LEGACY_CHAIN = "legacy"


class ActorType(models.TextChoices):
    USER = "user", _("User")
    AGENT = "agent", _("Agent")
    REVIEWER = "reviewer", _("Reviewer")
    ADMIN = "admin", _("Admin")
    SYSTEM = "system", _("System")


class Channel(models.TextChoices):
    UI = "ui", _("Web pages")
    API = "api", "API"
    MCP = "mcp", "MCP"
    ADMIN = "admin", _("Admin")
    SYSTEM = "system", _("System")


class AuditEntry(models.Model):
    """One access to a user's memory. Rows are never updated or deleted (a trigger refuses it).

    The subject is a keyed pseudonym of the user id rather than a foreign key, so the row
    survives account deletion and is pseudonymous from the start.
    """

    id = models.BigAutoField(primary_key=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    actor_type = models.CharField(max_length=10, choices=ActorType.choices)
    actor_id = models.CharField(max_length=64)
    actor_label = models.CharField(max_length=200, blank=True)
    subject = models.CharField(max_length=64, db_index=True)
    # Which hash chain the row belongs to: the subject pseudonym, SYSTEM_CHAIN for rows without
    # a subject, LEGACY_CHAIN for the one global chain written before migration 0008.
    chain = models.CharField(max_length=64)
    action = models.CharField(max_length=40)
    object_ids = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    mode = models.CharField(max_length=64, blank=True)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    prev_hash = models.CharField(max_length=64)
    row_hash = models.CharField(max_length=64, unique=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-id"]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["actor_type", "actor_id"], name="audit_actor_idx"),
            # record_access finds a chain's last row by this index: one short index scan.
            models.Index(fields=["chain", "id"], name="audit_chain_idx"),
        ]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"#{self.id} {self.actor_type}:{self.actor_id} {self.action}"
