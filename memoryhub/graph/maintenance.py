"""Keeping the workspace graph bounded: edge decay, transient purge, and erasure of a user.

Security invariant enforced here: erasure and purge only ever delete interaction nodes (those
recorded from an answer); shared items and documents have no answer id and always stay.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.errors import InvalidInputError
from memoryhub.models import (
    AnswerRecord,
    EdgeType,
    GraphEdge,
    GraphMaintenanceRun,
    GraphNode,
    Mode,
    NodeType,
    User,
    Workspace,
)

from .recording import MIN_WEIGHT, TRANSIENT_TYPES, configured_half_life, declared_types

if TYPE_CHECKING:  # Only for annotations: forget imports the graph's purger, not the reverse.
    from memoryhub.embeddings import Embedder
    from memoryhub.services.forget_selection import ForgetSelector


def _delete_nodes(nodes: QuerySet[GraphNode]) -> tuple[int, int]:
    """Delete nodes and every edge touching them; return (nodes, edges) deleted."""
    # Ids first: a selection that follows edges (erasure) would find nothing once they are gone.
    ids = list(nodes.values_list("pk", flat=True))
    edges, _ = GraphEdge.objects.filter(Q(source_id__in=ids) | Q(target_id__in=ids)).delete()
    deleted, _ = GraphNode.objects.filter(pk__in=ids).delete()
    return deleted, edges


def erase_user(*, user: User) -> dict[str, int]:
    """Remove a user's queries, their answers' responses and every edge touching them.

    Shared items and documents stay, whoever else searched or cited them.
    """
    queries = GraphNode.objects.filter(user=user, node_type=NodeType.QUERY)
    responses = GraphNode.objects.filter(
        in_edges__edge_type=EdgeType.ANSWERED_BY, in_edges__source__in=queries
    )
    # Security invariant: durable nodes have no answer id, so this can never match a shared item.
    doomed = GraphNode.objects.filter(
        Q(pk__in=queries.values("pk"))
        | Q(pk__in=responses.values("pk"))
        | Q(user=user, answer_id__isnull=False)
    ).filter(answer_id__isnull=False)
    with transaction.atomic():
        nodes, edges = _delete_nodes(doomed)
    return {"graph_node": nodes, "graph_edge": edges}


def forget_user_data(
    *,
    user: User,
    mode: Mode | None,
    memory_ids: Collection[UUID | str] = (),
    message_ids: Collection[UUID | str] = (),
    selector: ForgetSelector | None = None,
    embedder: Embedder | None = None,
) -> dict[str, int]:
    """Drop the graph nodes of a forget (memoryhub/services/forget.py calls it).

    Account deletion (mode None) erases the user's graph; a forget in one mode drops the nodes
    recorded from the answers it deleted, whatever picked them (ids, period, topic, query).
    """
    if mode is None:
        return erase_user(user=user)
    # The knowledge purger runs first (forget.DERIVED_DATA_PURGERS) and deletes the answers built
    # on what was forgotten; the nodes recorded from those answers go with them.
    dangling = GraphNode.objects.filter(user=user, answer_id__isnull=False).exclude(
        answer_id__in=AnswerRecord.objects.filter(user=user).values("pk")
    )
    nodes, edges = _delete_nodes(dangling)
    return {"graph_node": nodes, "graph_edge": edges}


_DECAY_SQL = f"""
    WITH decayed AS (
        SELECT id, GREATEST(
            %(floor)s,
            initial_weight * exp(
                -ln(2) / %(half_life)s
                * GREATEST(0, extract(epoch FROM %(now)s - created_at)) / 86400.0
            )
        ) AS weight
        FROM {GraphEdge._meta.db_table}
        WHERE workspace_id = %(workspace)s
    )
    UPDATE {GraphEdge._meta.db_table} AS edge SET weight = decayed.weight
    FROM decayed
    WHERE edge.id = decayed.id AND edge.weight IS DISTINCT FROM decayed.weight
"""  # noqa: S608  # Table names from our own models; every value is a bound parameter.


def _workspaces(workspace: Workspace | None) -> list[Workspace]:
    if workspace is not None:
        return [workspace]
    with_graph = GraphNode.objects.values("workspace_id")
    return list(Workspace.objects.filter(pk__in=with_graph).order_by("pk"))


def decay_edges(
    *,
    now: datetime | None = None,
    half_life_days: float | None = None,
    workspace: Workspace | None = None,
) -> list[GraphMaintenanceRun]:
    """Recompute every edge weight from its initial weight and age, never from its last weight.

    Running it twice at the same moment changes nothing. Raises InvalidInputError for a
    half-life that is not positive.
    """
    now = now or timezone.now()
    half_life = configured_half_life() if half_life_days is None else float(half_life_days)
    if not half_life > 0:
        raise InvalidInputError(gettext_noop("the half-life must be a positive number of days"))
    runs = []
    for each in _workspaces(workspace):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                _DECAY_SQL,
                {"floor": MIN_WEIGHT, "half_life": half_life, "now": now, "workspace": each.pk},
            )
            runs.append(
                GraphMaintenanceRun.objects.create(
                    workspace=each,
                    kind=GraphMaintenanceRun.Kind.DECAY,
                    ran_at=now,
                    edges_updated=max(0, cursor.rowcount),
                )
            )
    return runs


def purge_transient_nodes(
    *, older_than: datetime, workspace: Workspace | None = None, now: datetime | None = None
) -> list[GraphMaintenanceRun]:
    """Delete interaction nodes created before `older_than`, with every edge touching them.

    Interaction nodes are queries, responses, tool calls and declared transient types; items
    and documents stay, even with no edge left.
    """
    now = now or timezone.now()
    runs = []
    for each in _workspaces(workspace):
        transient = [*TRANSIENT_TYPES, *(s for s, t in declared_types(each).items() if t)]
        with transaction.atomic():
            nodes, edges = _delete_nodes(
                GraphNode.objects.filter(
                    workspace=each, node_type__in=transient, created_at__lt=older_than
                )
            )
            runs.append(
                GraphMaintenanceRun.objects.create(
                    workspace=each,
                    kind=GraphMaintenanceRun.Kind.PURGE,
                    ran_at=now,
                    nodes_deleted=nodes,
                    edges_deleted=edges,
                )
            )
    return runs
