"""Imports: a file of memories or conversations brought in by a Celery task, and what it made."""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .memories import Memory
from .sessions import Session
from .workspaces import Agent, Mode, User

# Session.end_reason of a conversation brought in by an import: what extraction finds in one the
# user has not trusted waits for their review (services/evidence.py), as the import's own items do.
IMPORTED_END_REASON = "import"
IMPORTED_FOR_REVIEW_END_REASON = "import-review"


class ImportFormat(models.TextChoices):
    MEMORYHUB = "memoryhub", _("MemoryHub export")
    MEM0 = "mem0", _("Mem0 memories")
    CHATGPT = "chatgpt", _("ChatGPT conversations")
    CLAUDE = "claude", _("Claude conversations")
    OPENMEMORY = "openmemory", _("OpenMemory backup")


class ImportJob(models.Model):
    """One uploaded file, its progress (resumable from `position`) and its receipt."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    mode = models.ForeignKey(Mode, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Who asked, so that the task's writes are audited as theirs (memoryhub/actors.py).
    actor_type = models.CharField(max_length=16)
    actor_id = models.CharField(max_length=64)
    actor_label = models.CharField(max_length=200, blank=True)
    actor_channel = models.CharField(max_length=16)
    format = models.CharField(max_length=16, choices=ImportFormat.choices)
    # The same file imported again is this job again: nothing changes.
    file_sha256 = models.CharField(max_length=64)
    file_size = models.BigIntegerField(default=0)
    # The upload waiting for the task, sealed on disk; its key sealed with the user's data key.
    # Both are cleared when the import ends, and the file deleted.
    file_path = models.CharField(max_length=500, blank=True)
    file_key_ciphertext = models.BinaryField(null=True, blank=True)
    is_trusted = models.BooleanField(default=False)
    # Only the job's mode: the key that asked reaches no other (a mode-bound personal key).
    is_single_mode = models.BooleanField(default=False)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    # Records of the file already written: a task run again starts after them.
    position = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    counts = models.JSONField(default=dict)
    skipped = models.JSONField(default=list)
    skipped_count = models.PositiveIntegerField(default=0)
    error_code = models.CharField(max_length=32, blank=True)
    error_detail = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Touched by every batch: a queued or running job left untouched for long lost its task.
    updated_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["user", "mode", "file_sha256"], name="import_file_once_per_mode"
            ),
        ]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["user", "-created_at"], name="import_user_idx"),
        ]

    def __str__(self) -> str:
        return f"import {self.id} ({self.format}, {self.status})"

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        return min(99, self.position * 100 // self.total) if self.total else 0


class ImportedItem(models.Model):
    """An item of an import file already written, keyed by its source id or content hash."""

    job = models.ForeignKey(ImportJob, on_delete=models.CASCADE, related_name="items")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    mode = models.ForeignKey(Mode, on_delete=models.CASCADE, related_name="+")
    source_key = models.CharField(max_length=200)
    kind = models.CharField(max_length=20)
    # SET_NULL: a memory the user forgot or discarded stays known, so that importing the file
    # again does not bring it back.
    memory = models.ForeignKey(
        Memory, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    session = models.ForeignKey(
        Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["user", "mode", "source_key"], name="imported_item_once_per_mode"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.source_key}"
