"""Conversation sessions, their encrypted messages, and extraction runs."""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.db import models
from django.utils import timezone
from pgvector.django import VectorField

from .workspaces import Agent, Mode, User

EMBEDDING_DIMENSIONS = 384


class SessionQuerySet(models.QuerySet["Session"]):
    def for_owner(self, *, user: User, mode: Mode | None) -> SessionQuerySet:
        queryset = self.filter(user=user)
        return queryset if mode is None else queryset.filter(mode=mode)

    def open(self) -> SessionQuerySet:
        return self.filter(ended_at__isnull=True)


class Session(models.Model):
    """One conversation between an agent and a user in one mode."""

    class ExtractionStatus(models.TextChoices):
        NOT_STARTED = "not_started"
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        SKIPPED = "skipped"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    mode = models.ForeignKey(Mode, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    is_incognito = models.BooleanField(default=False)
    started_at = models.DateTimeField(default=timezone.now)
    last_activity_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=16, blank=True)
    extraction_status = models.CharField(
        max_length=12, choices=ExtractionStatus.choices, default=ExtractionStatus.NOT_STARTED
    )
    # When a sweep last published the extraction again (the stranded sweep, or the requeue of a
    # failed run), and how many times the stranded sweep has: it waits twice as long each time.
    extraction_published_at = models.DateTimeField(null=True, blank=True)
    extraction_republish_count = models.PositiveIntegerField(default=0)
    working_memory_ciphertext = models.BinaryField(null=True, blank=True)
    working_memory_updated_at = models.DateTimeField(null=True, blank=True)
    working_memory_expires_at = models.DateTimeField(null=True, blank=True)

    objects = SessionQuerySet.as_manager()

    class Meta:
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["user", "mode", "-started_at"], name="session_scope_idx"),
            # The periodic sweeps (services/sessions.py, extraction_queue.py) each look for a
            # few rows among all sessions ever held: small partial indexes, not table scans.
            # Keyed on a column that never changes: an index on last_activity_at would make
            # every message's touch of the session a non-HOT update.
            models.Index(
                fields=["started_at"],
                condition=models.Q(ended_at__isnull=True),
                name="session_open_idx",
            ),
            models.Index(
                fields=["ended_at"],
                condition=models.Q(extraction_status="queued"),
                name="session_queued_idx",
            ),
            models.Index(
                fields=["working_memory_expires_at"],
                condition=models.Q(working_memory_expires_at__isnull=False),
                name="session_working_memory_idx",
            ),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            # An ended incognito session keeps nothing: no write, however late, leaves working
            # memory in one (services/sessions.py also locks the row, to refuse it with a 409).
            models.CheckConstraint(
                condition=models.Q(is_incognito=False)
                | models.Q(ended_at__isnull=True)
                | models.Q(working_memory_ciphertext__isnull=True),
                name="ended_incognito_session_keeps_no_working_memory",
            ),
        ]

    def __str__(self) -> str:
        return f"session {self.id}"

    @property
    def is_open(self) -> bool:
        return self.ended_at is None


class Message(models.Model):
    """One turn of a session; the content is ciphertext, the embedding feeds semantic recall."""

    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages")
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=10, choices=Role.choices)
    content_ciphertext = models.BinaryField()
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    # Which model made `embedding` (memoryhub/embeddings.py MODELS): searches compare only
    # vectors of one model, and `manage.py reembed` moves rows from one model to another.
    embedding_model = models.CharField(max_length=64, blank=True, default="")
    is_flagged = models.BooleanField(default=False)
    # Older messages of a long thread are replaced in context by a compacted summary.
    is_compacted = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["session", "seq"], name="message_seq_unique_per_session"
            ),
            # A vector without its model could be compared with another model's: never stored.
            models.CheckConstraint(
                condition=models.Q(embedding__isnull=True) | ~models.Q(embedding_model=""),
                name="message_embedding_has_model",
            ),
        ]
        ordering: ClassVar[list[str]] = ["session", "seq"]

    def __str__(self) -> str:
        return f"message {self.seq} of {self.session_id}"


class ExtractionRun(models.Model):
    """One extraction of a session's transcript; the idempotency key stops duplicate work."""

    class Status(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="extraction_runs")
    idempotency_key = models.CharField(max_length=128, unique=True)
    extractor = models.CharField(max_length=32)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cache_creation_tokens = models.PositiveIntegerField(default=0)
    items_written = models.PositiveIntegerField(default=0)
    items_rejected = models.PositiveIntegerField(default=0, help_text="Ungrounded: hallucinations.")
    items_over_quota = models.PositiveIntegerField(
        default=0, help_text="Not stored: the user was at a memory quota."
    )
    fell_back_to_offline = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    requeue_count = models.PositiveSmallIntegerField(
        default=0, help_text="How many times the sweep queued this run again after it failed."
    )
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes: ClassVar[list[models.Index]] = [
            # The requeue sweep (every 15 minutes) looks for the few failed runs among all.
            models.Index(
                fields=["finished_at"],
                condition=models.Q(status="failed"),
                name="extraction_run_failed_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"extraction {self.id} ({self.status})"
