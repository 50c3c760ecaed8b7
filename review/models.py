"""The review app's own records: every decision, and each closed window's threshold change.

The answers, candidates and knowledge documents they refer to are domain models
(memoryhub/models/knowledge.py); the review app builds its queue and pages on top of them.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.utils import timezone

from memoryhub.models import LearningCandidate, User, Workspace


class ThresholdChange(models.Model):
    """One closed window of review decisions and what it did to the workspace's threshold.

    A row is written for every window, also when the threshold stays (previous == new), so the
    chart of the approval rate over time has a point per window.
    """

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="threshold_changes"
    )
    created_at = models.DateTimeField(default=timezone.now)
    previous_threshold = models.FloatField()
    threshold = models.FloatField()
    window_size = models.PositiveIntegerField()
    approvals = models.PositiveIntegerField()
    rejections = models.PositiveIntegerField()
    approval_rate = models.FloatField()
    queue_size = models.PositiveIntegerField(help_text="Pending candidates when the window closed.")

    class Meta:
        ordering: ClassVar[list[str]] = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.workspace_id}: {self.previous_threshold:.2f} → {self.threshold:.2f}"

    @property
    def is_change(self) -> bool:
        return self.threshold != self.previous_threshold


class ReviewDecision(models.Model):
    """An approval or rejection; each closed window of them becomes a ThresholdChange."""

    class Outcome(models.TextChoices):
        APPROVED = "approved"
        REJECTED = "rejected"

    id = models.BigAutoField(primary_key=True)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    # Kept when the candidate is purged (the user forgot it): the figures still count.
    candidate = models.ForeignKey(
        LearningCandidate, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewer = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    created_at = models.DateTimeField(default=timezone.now)
    window = models.ForeignKey(
        ThresholdChange, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )

    def __str__(self) -> str:
        return f"{self.outcome} #{self.id}"
