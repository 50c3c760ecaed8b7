"""Per-workspace data keys, wrapped by a master key, for data that belongs to no single user."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from .workspaces import Workspace


class WorkspaceKey(models.Model):
    """A workspace's data key, wrapped by a master key. Deleting this row crypto-shreds it."""

    workspace = models.OneToOneField(
        Workspace, on_delete=models.CASCADE, primary_key=True, related_name="data_key"
    )
    wrapped_key = models.BinaryField()
    master_key_id = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"data key of workspace {self.workspace_id} (wrapped by {self.master_key_id})"
