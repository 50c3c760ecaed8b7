"""Reads of the workspace graph: insights for agents and context, and the admin overview.

Scoped by workspace, not by (user, mode): the graph is the workspace's, and its text is
scrubbed of personal data. Decrypted text is still untrusted data (users wrote the questions,
agents named the items): the context block fences it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from django.db import connection
from django.db.models import Count
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import KeyDestroyedError
from memoryhub.fencing import fence_untrusted
from memoryhub.injection import looks_like_instructions
from memoryhub.keyring import WorkspaceCipher, workspace_cipher
from memoryhub.models import (
    EdgeType,
    GraphEdge,
    GraphMaintenanceRun,
    GraphNode,
    NodeType,
    Workspace,
)
from memoryhub.sealed_tables import NODE_TABLE

from .recording import GOOD_ANSWER_WEIGHT

DEFAULT_LIMIT = 5
MAX_LIMIT = 50
# "Recent" questions: those asked within this many days.
UNANSWERED_WINDOW_DAYS = 30


@dataclass(frozen=True)
class PopularItem:
    name: str
    count: int
    node_type: str


@dataclass(frozen=True)
class UnansweredQuestion:
    question: str
    count: int
    last_asked_at: datetime


@dataclass(frozen=True)
class GraphInsights:
    """What the workspace graph says, once it holds enough nodes to say anything."""

    enabled: bool
    nodes: int
    min_nodes: int
    popular_items: tuple[PopularItem, ...] = ()
    unanswered: tuple[UnansweredQuestion, ...] = ()


@dataclass(frozen=True)
class GraphOverview:
    """The admin page of one workspace graph."""

    node_counts: tuple[tuple[str, int], ...]
    edge_counts: tuple[tuple[str, int], ...]
    insights: GraphInsights
    runs: tuple[GraphMaintenanceRun, ...]


_NODE = GraphNode._meta.db_table
_EDGE = GraphEdge._meta.db_table

# Both lists in one statement: one round trip, one snapshot (the count and the lists always
# agree), and the threshold check inside it, so a small graph costs one cheap count. Popular
# items rank by decayed weight, so recent searches count more than old ones; a question is
# unanswered when no answer to it reached a good initial weight (age does not make an answer
# worse). Repeats of one question share a key hash and are grouped.
_INSIGHTS_SQL = f"""
    WITH total AS (
        SELECT count(*) AS nodes FROM {_NODE} WHERE workspace_id = %(workspace)s
    ),
    popular AS (
        SELECT edge.target_id AS node_id, count(*) AS hits, sum(edge.weight) AS score
        FROM {_EDGE} AS edge
        WHERE edge.workspace_id = %(workspace)s AND edge.edge_type = %(searched_for)s
          AND (SELECT nodes FROM total) >= %(min_nodes)s
        GROUP BY edge.target_id
        ORDER BY score DESC, hits DESC, edge.target_id
        LIMIT %(limit)s
    ),
    unanswered AS (
        SELECT (array_agg(query.id ORDER BY query.created_at DESC, query.id))[1] AS node_id,
               count(*) AS hits, max(query.created_at) AS last_at
        FROM {_NODE} AS query
        WHERE query.workspace_id = %(workspace)s AND query.node_type = %(query_type)s
          AND query.created_at >= %(since)s
          AND (SELECT nodes FROM total) >= %(min_nodes)s
          AND NOT EXISTS (
              SELECT 1 FROM {_EDGE} AS answer
              WHERE answer.source_id = query.id AND answer.edge_type = %(answered_by)s
                AND answer.initial_weight >= %(good)s
          )
        GROUP BY query.key_hash
        ORDER BY last_at DESC, node_id
        LIMIT %(limit)s
    )
    SELECT 0 AS part, 0 AS rank, NULL::uuid, NULL, NULL::bytea, nodes, NULL::timestamptz
    FROM total
    UNION ALL
    SELECT 1, row_number() OVER (ORDER BY popular.score DESC, popular.hits DESC, node.id),
           node.id, node.node_type, node.text_ciphertext, popular.hits, NULL
    FROM popular JOIN {_NODE} AS node ON node.id = popular.node_id
    UNION ALL
    SELECT 2, row_number() OVER (ORDER BY unanswered.last_at DESC, node.id),
           node.id, node.node_type, node.text_ciphertext, unanswered.hits, unanswered.last_at
    FROM unanswered JOIN {_NODE} AS node ON node.id = unanswered.node_id
    ORDER BY part, rank
"""  # noqa: S608  # Table names from our own models; every value is a bound parameter.


def _decrypt(cipher: WorkspaceCipher, node_id: UUID, blob: bytes | memoryview | None) -> str:
    if blob is None:
        return ""
    return cipher.decrypt(blob, table=NODE_TABLE, row_id=node_id, field="text")


def graph_insights(
    workspace: Workspace,
    *,
    actor: Actor,
    limit: int = DEFAULT_LIMIT,
    min_nodes: int | None = None,
    now: datetime | None = None,
) -> GraphInsights:
    """The most searched items and the recent questions without a good answer.

    Both lists stay empty until the graph holds `workspace.graph_min_nodes` nodes (`min_nodes`
    overrides it for the admin page). The two queries run as one statement (see _INSIGHTS_SQL).
    Reading them is audited: the questions are other users' (scrubbed) words.
    """
    threshold = workspace.graph_min_nodes if min_nodes is None else min_nodes
    since = (now or timezone.now()) - timedelta(days=UNANSWERED_WINDOW_DAYS)
    with connection.cursor() as cursor:
        cursor.execute(
            _INSIGHTS_SQL,
            {
                "workspace": workspace.pk,
                "min_nodes": threshold,
                "limit": max(1, min(limit, MAX_LIMIT)),
                "since": since,
                "searched_for": EdgeType.SEARCHED_FOR.value,
                "answered_by": EdgeType.ANSWERED_BY.value,
                "query_type": NodeType.QUERY.value,
                "good": GOOD_ANSWER_WEIGHT,
            },
        )
        rows = cursor.fetchall()
    nodes = int(rows[0][5])
    enabled = nodes >= threshold
    if len(rows) == 1:
        return GraphInsights(enabled=enabled, nodes=nodes, min_nodes=threshold)
    try:
        cipher = workspace_cipher(workspace, create=False)
    except KeyDestroyedError:
        # Crypto-shredded: the nodes are unreadable noise until the purge takes them.
        return GraphInsights(enabled=enabled, nodes=nodes, min_nodes=threshold)
    texts = {node_id: _decrypt(cipher, node_id, blob) for _, _, node_id, _, blob, _, _ in rows[1:]}
    # An item or question that reads like instructions is shown to no agent (older nodes may
    # predate the write-time check in graph/recording.py).
    shown = {node_id for node_id, text in texts.items() if not looks_like_instructions(text)}
    popular = tuple(
        PopularItem(name=texts[node_id], count=hits, node_type=node_type)
        for part, _, node_id, node_type, _, hits, _ in rows
        if part == 1 and node_id in shown
    )
    unanswered = tuple(
        UnansweredQuestion(question=texts[node_id], count=hits, last_asked_at=last_at)
        for part, _, node_id, _, _, hits, last_at in rows
        if part == 2 and node_id in shown
    )
    record_access(
        actor=actor,
        subject_user_id=None,
        action=AuditAction.GRAPH_INSIGHTS,
        object_ids=[workspace.slug, *(str(node_id) for node_id in sorted(shown))],
    )
    return GraphInsights(
        enabled=enabled,
        nodes=nodes,
        min_nodes=threshold,
        popular_items=popular,
        unanswered=unanswered,
    )


def insight_lines(insights: GraphInsights) -> list[str]:
    """One plain line per popular item and per unanswered question."""
    lines = [
        f"Often searched: {item.name} ({item.count} searches)" for item in insights.popular_items
    ]
    lines += [
        f"Asked recently without a good answer: {question.question} (asked {question.count}x)"
        for question in insights.unanswered
    ]
    return lines


def graph_insights_block(workspace: Workspace, *, actor: Actor) -> str | None:
    """The "graph insights" context block, fenced as untrusted data; None below the threshold."""
    insights = graph_insights(workspace, actor=actor)
    lines = insight_lines(insights)
    if not insights.enabled or not lines:
        return None
    # Security invariant: questions come from users and item names from agents; fenced as data.
    return fence_untrusted("graph-insights", lines)


def _counts(rows: Iterable[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    return tuple((str(kind), int(count)) for kind, count in rows)


def graph_overview(workspace: Workspace, *, actor: Actor, runs: int = 10) -> GraphOverview:
    """Node and edge counts by type, the insights (whatever the threshold), the last runs."""
    # The page decrypts (scrubbed) questions of the workspace's users: the look is audited.
    record_access(
        actor=actor,
        subject_user_id=None,
        action=AuditAction.GRAPH_OVERVIEW,
        object_ids=[workspace.slug],
    )
    nodes = (
        GraphNode.objects.filter(workspace=workspace)
        .values("node_type")
        .annotate(count=Count("pk"))
        .order_by("node_type")
        .values_list("node_type", "count")
    )
    edges = (
        GraphEdge.objects.filter(workspace=workspace)
        .values("edge_type")
        .annotate(count=Count("pk"))
        .order_by("edge_type")
        .values_list("edge_type", "count")
    )
    return GraphOverview(
        node_counts=_counts(nodes),
        edge_counts=_counts(edges),
        insights=graph_insights(workspace, actor=actor, limit=10, min_nodes=0),
        runs=tuple(GraphMaintenanceRun.objects.filter(workspace=workspace)[:runs]),
    )
