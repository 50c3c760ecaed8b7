"""Remembered items and their version history; every text field is ciphertext."""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.utils import timezone
from pgvector.django import VectorField

from memoryhub.errors import UnscopedQueryError

from .sessions import Message, Session
from .workspaces import Agent, Mode, User

EMBEDDING_DIMENSIONS = 384


class MemoryKind(models.TextChoices):
    FACT = "fact"
    PREFERENCE = "preference"
    PROCEDURE = "procedure"
    EPISODE = "episode"
    SESSION_SUMMARY = "session_summary"
    OPEN_ITEM = "open_item"
    THEME = "theme"


class Confidence(models.TextChoices):
    CANDIDATE = "candidate"
    MEDIUM = "medium"
    HIGH = "high"


class MemoryStatus(models.TextChoices):
    ACTIVE = "active"
    CANDIDATE = "candidate"
    SUPERSEDED = "superseded"
    FORGOTTEN = "forgotten"


class MemorySource(models.TextChoices):
    EXPLICIT = "explicit"
    EXTRACTED = "extracted"
    AGENT = "agent"
    REVIEWER = "reviewer"
    USER = "user"
    SYSTEM = "system"
    IMPORTED = "imported"


class Importance(models.TextChoices):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"


# The confidences a recallable memory has (MemoryQuerySet.recallable and the SQL that mirrors it).
RECALLABLE_CONFIDENCES = (Confidence.MEDIUM, Confidence.HIGH)


class MemoryQuerySet(models.QuerySet["Memory"]):
    def active(self) -> MemoryQuerySet:
        return self.filter(status=MemoryStatus.ACTIVE)

    def recallable(self) -> MemoryQuerySet:
        """Active memories of medium or high confidence: the only ones ever injected."""
        return self.filter(status=MemoryStatus.ACTIVE, confidence__in=RECALLABLE_CONFIDENCES)

    def of_kind(self, *kinds: str) -> MemoryQuerySet:
        return self.filter(kind__in=kinds)


class ScopedMemoryManager(models.Manager["Memory"]):
    """The only door to memories: every query starts from `for_owner(user, mode)`.

    `Memory.objects.filter(...)` or `.all()` raise `UnscopedQueryError`, so a read that forgets
    the (user, mode) scope fails loudly in tests instead of leaking another user's memories.
    """

    def get_queryset(self) -> MemoryQuerySet:
        raise UnscopedQueryError(
            "Memory queries must be scoped: use Memory.objects.for_owner(user=..., mode=...)"
        )

    def for_owner(self, *, user: User | uuid.UUID, mode: Mode | int | None) -> MemoryQuerySet:
        """Memories of one user in one mode (mode=None: every mode of that user)."""
        user_id = user.pk if isinstance(user, User) else user
        queryset = MemoryQuerySet(self.model, using=self._db)
        if mode is None:
            return queryset.filter(user_id=user_id)
        mode_id = mode.pk if isinstance(mode, Mode) else mode
        # One filter call, not two: every memory read starts here, and each call clones.
        return queryset.filter(user_id=user_id, mode_id=mode_id)


class AllOwnersMemoryManager(models.Manager["Memory"]):
    """Unscoped access for system jobs (maintenance, deletion cascades) and Django internals."""

    def get_queryset(self) -> MemoryQuerySet:
        return MemoryQuerySet(self.model, using=self._db)


class Memory(models.Model):
    """One remembered item of one user in one mode."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    mode = models.ForeignKey(Mode, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=20, choices=MemoryKind.choices)
    # Ciphertexts (AES-256-GCM under the user's data key, see memoryhub/crypto.py).
    content_ciphertext = models.BinaryField()
    payload_ciphertext = models.BinaryField(null=True, blank=True)
    confidence = models.CharField(
        max_length=10, choices=Confidence.choices, default=Confidence.MEDIUM
    )
    status = models.CharField(
        max_length=12, choices=MemoryStatus.choices, default=MemoryStatus.ACTIVE
    )
    source = models.CharField(
        max_length=10, choices=MemorySource.choices, default=MemorySource.AGENT
    )
    importance = models.CharField(
        max_length=10, choices=Importance.choices, default=Importance.NORMAL
    )
    evidence_count = models.PositiveIntegerField(default=1)
    # Contradiction slot ("name", "employer", or "subject:attribute"); a keyed hash, not the text.
    slot_hash = models.CharField(max_length=32, blank=True, db_index=True)
    personal_data = ArrayField(models.CharField(max_length=16), default=list, blank=True)
    is_flagged = models.BooleanField(default=False, help_text="Reads like instructions to a model.")
    is_dormant = models.BooleanField(default=False)
    decay_priority = models.FloatField(default=1.0)
    # Keyed blind index of normalised tokens, for lexical matching without storing plaintext.
    blind_tokens = ArrayField(models.CharField(max_length=16), default=list, blank=True)
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    # Which model made `embedding` (memoryhub/embeddings.py MODELS): searches compare only
    # vectors of one model, and `manage.py reembed` moves rows from one model to another.
    embedding_model = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(default=timezone.now)
    occurred_at = models.DateTimeField(null=True, blank=True, help_text="When the event happened.")
    valid_from = models.DateTimeField(default=timezone.now)
    valid_to = models.DateTimeField(null=True, blank=True)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    access_count = models.PositiveIntegerField(default=0)
    # Provenance: where it came from, and what it was derived from.
    session = models.ForeignKey(
        Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source_messages = models.ManyToManyField(Message, blank=True, related_name="derived_memories")
    derived_from = models.ManyToManyField(
        "self", symmetrical=False, blank=True, related_name="derivatives"
    )
    supersedes = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="superseded_by"
    )
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # NULL, not "": only memories written with a key take part in the unique constraint.
    idempotency_key = models.CharField(max_length=128, null=True, blank=True)  # noqa: DJ001

    objects = ScopedMemoryManager()
    all_owners = AllOwnersMemoryManager()

    class Meta:
        base_manager_name = "all_owners"
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["user", "mode", "status", "kind"], name="memory_scope_idx"),
            GinIndex(fields=["blind_tokens"], name="memory_blind_tokens_idx"),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["user", "idempotency_key"], name="memory_idempotency_key_unique"
            ),
            # A vector without its model could be compared with another model's: never stored.
            models.CheckConstraint(
                condition=models.Q(embedding__isnull=True) | ~models.Q(embedding_model=""),
                name="memory_embedding_has_model",
            ),
        ]

    def __str__(self) -> str:
        # Never the content: it is ciphertext here, and plaintext must not reach logs.
        return f"{self.kind} {self.id}"

    @property
    def is_current(self) -> bool:
        return self.status == MemoryStatus.ACTIVE and self.valid_to is None


class MemoryVersion(models.Model):
    """The content a memory had before an edit, with who changed it and when."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="versions")
    content_ciphertext = models.BinaryField()
    payload_ciphertext = models.BinaryField(null=True, blank=True)
    changed_by_type = models.CharField(max_length=16)
    changed_by_id = models.CharField(max_length=64)
    reason = models.CharField(max_length=32, default="edit")
    # The row as it was until this change (the text above, and these): what `as_of` reads
    # back. Blank on versions kept before they were recorded.
    kind = models.CharField(max_length=20, choices=MemoryKind.choices, blank=True)
    confidence = models.CharField(max_length=10, choices=Confidence.choices, blank=True)
    status = models.CharField(max_length=12, choices=MemoryStatus.choices, blank=True)
    source = models.CharField(max_length=10, choices=MemorySource.choices, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering: ClassVar[list[str]] = ["-created_at"]

    def __str__(self) -> str:
        return f"version {self.id} of {self.memory_id}"
