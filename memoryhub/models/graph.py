"""The workspace knowledge graph: typed nodes, typed weighted edges, maintenance runs.

Node text is scrubbed of personal data and encrypted under the workspace's data key
(memoryhub/keyring.py); a node's identity is a keyed hash, never plaintext.
"""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .workspaces import User, Workspace


class NodeType(models.TextChoices):
    """The built-in node types; a workspace may declare more (WorkspaceNodeType)."""

    QUERY = "query"
    RESPONSE = "response"
    USER = "user"
    DOCUMENT = "document"
    ITEM = "item", "Product or item"
    TOOL_CALL = "tool_call", "Tool call"


class EdgeType(models.TextChoices):
    SEARCHED_FOR = "searched_for"
    ANSWERED_BY = "answered_by"
    CITED = "cited"
    VIEWED = "viewed"
    BOOKED = "booked"
    ASKED_ABOUT = "asked_about"
    USED_TOOL = "used_tool"
    SIMILAR_TO = "similar_to"


class WorkspaceNodeType(models.Model):
    """A node type a workspace declares for its own items ("hotel", "course", …)."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="graph_node_types"
    )
    slug = models.SlugField(max_length=64)
    name = models.CharField(max_length=100)
    # Transient types are purged with queries and responses; durable ones stay like items.
    is_transient = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["workspace", "slug"], name="graph_node_type_unique_per_workspace"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.slug} ({self.workspace_id})"


class GraphNode(models.Model):
    """One node of a workspace graph: an interaction (query, response, tool call) or an item."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="graph_nodes")
    node_type = models.CharField(max_length=64)
    # Keyed hash (workspace key) of the normalised key or text: identity without plaintext.
    key_hash = models.CharField(max_length=64)
    # Scrubbed text or name, encrypted under the workspace key, bound to this row.
    text_ciphertext = models.BinaryField(null=True, blank=True)
    # The person an interaction node came from, so erasure finds it; NULL on shared items.
    user = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # The answer record an interaction node was built from (not a foreign key: the review app
    # depends on this one, not the reverse). NULL on durable nodes.
    answer_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes: ClassVar[list[models.Index]] = [
            models.Index(
                fields=["workspace", "node_type", "created_at"], name="graph_node_type_idx"
            ),
            models.Index(fields=["answer_id"], name="graph_node_answer_idx"),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            # One node per durable thing (item, document): repeated mentions share it.
            models.UniqueConstraint(
                fields=["workspace", "node_type", "key_hash"],
                condition=models.Q(answer_id__isnull=True),
                name="graph_durable_node_unique",
            ),
            # Recording an answer twice (a redelivered task) writes nothing twice.
            models.UniqueConstraint(
                fields=["answer_id", "node_type", "key_hash"],
                condition=models.Q(answer_id__isnull=False),
                name="graph_interaction_node_unique",
            ),
        ]

    def __str__(self) -> str:
        # Never the text: it is ciphertext here, and plaintext must not reach logs.
        return f"{self.node_type} {self.id}"


class GraphEdge(models.Model):
    """A typed, weighted link; `weight` is `initial_weight` decayed by age (never compounded)."""

    id = models.BigAutoField(primary_key=True)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(GraphNode, on_delete=models.CASCADE, related_name="out_edges")
    target = models.ForeignKey(GraphNode, on_delete=models.CASCADE, related_name="in_edges")
    edge_type = models.CharField(max_length=20, choices=EdgeType.choices)
    initial_weight = models.FloatField()
    weight = models.FloatField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["workspace", "edge_type"], name="graph_edge_type_idx"),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["source", "target", "edge_type"], name="graph_edge_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(initial_weight__gte=0) & models.Q(weight__gte=0),
                name="graph_edge_weight_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} -{self.edge_type}-> {self.target_id} ({self.weight:.2f})"


class GraphMaintenanceRun(models.Model):
    """One decay or purge pass over one workspace graph, for the admin page."""

    class Kind(models.TextChoices):
        DECAY = "decay", _("Decay")
        PURGE = "purge", _("Purge")

    id = models.BigAutoField(primary_key=True)
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="graph_maintenance_runs"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices)
    # The clock the pass computed with (decay age, purge horizon), not when it was written.
    ran_at = models.DateTimeField(default=timezone.now)
    edges_updated = models.PositiveIntegerField(default=0)
    nodes_deleted = models.PositiveIntegerField(default=0)
    edges_deleted = models.PositiveIntegerField(default=0)

    class Meta:
        ordering: ClassVar[list[str]] = ["-ran_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} of {self.workspace_id} at {self.ran_at:%Y-%m-%d %H:%M}"
