"""Graph maintenance: decay from initial weight and age (never compounded), transient purge."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from memoryhub import graph
from memoryhub.errors import InvalidInputError
from memoryhub.models import EdgeType, GraphEdge, GraphMaintenanceRun, GraphNode, NodeType
from memoryhub.tasks import graph_decay_edges, graph_purge_transient

from .conftest import interact, item

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def _weights():
    return dict(GraphEdge.objects.values_list("pk", "weight"))


@pytest.fixture
def one_search(workspace, user):
    interact(workspace, user, "Rooms?", items=[item("Hotel Lumiere")], at=T0, now=T0)
    return GraphEdge.objects.get(edge_type=EdgeType.SEARCHED_FOR)


@pytest.mark.parametrize(
    ("age_days", "expected"),
    [(0, 1.0), (30, 0.5), (60, 0.25), (45, 2**-1.5), (300, 0.1)],
)
def test_decay_follows_the_half_life_formula_with_a_floor(one_search, age_days, expected):
    graph.decay_edges(now=T0 + timedelta(days=age_days), half_life_days=30)
    one_search.refresh_from_db()
    formula = max(0.1, 1.0 * math.exp(-math.log(2) / 30 * age_days))
    assert one_search.weight == pytest.approx(formula)
    assert one_search.weight == pytest.approx(expected)
    assert one_search.initial_weight == 1.0


def test_decay_in_the_database_matches_the_python_formula(one_search):
    now = T0 + timedelta(days=17, hours=5)
    graph.decay_edges(now=now, half_life_days=30)
    one_search.refresh_from_db()
    assert one_search.weight == pytest.approx(
        graph.decayed_weight(1.0, age_days=17 + 5 / 24, half_life_days=30), rel=1e-12
    )


def test_decay_twice_at_the_same_moment_changes_nothing(one_search):
    with time_machine.travel(T0 + timedelta(days=40), tick=False):
        first = graph.decay_edges()
        after_first = _weights()
        second = graph.decay_edges()
    assert _weights() == after_first
    assert first[0].edges_updated == 2  # searched_for and answered_by
    assert second[0].edges_updated == 0


def test_decay_is_never_compounded(one_search):
    graph.decay_edges(now=T0 + timedelta(days=30), half_life_days=30)
    graph.decay_edges(now=T0 + timedelta(days=60), half_life_days=30)
    one_search.refresh_from_db()
    # From the initial weight and the whole age: 0.25, not 0.5 * 0.25.
    assert one_search.weight == pytest.approx(0.25)


def test_decay_uses_the_configured_half_life(one_search, settings):
    settings.MEMORYHUB_GRAPH_HALF_LIFE_DAYS = 10
    with time_machine.travel(T0 + timedelta(days=10), tick=False):
        graph_decay_edges()
    one_search.refresh_from_db()
    assert one_search.weight == pytest.approx(0.5)


def test_each_decay_pass_is_logged_per_workspace(one_search, workspace):
    graph.decay_edges(now=T0 + timedelta(days=1))
    run = GraphMaintenanceRun.objects.get(workspace=workspace)
    assert (run.kind, run.ran_at, run.edges_updated) == ("decay", T0 + timedelta(days=1), 2)


@pytest.mark.parametrize("half_life", [0, -3])
def test_a_half_life_that_is_not_positive_is_refused(one_search, half_life):
    with pytest.raises(InvalidInputError):
        graph.decay_edges(now=T0, half_life_days=half_life)


def test_purge_removes_old_interactions_with_their_edges_and_keeps_items(workspace, user):
    old = T0 - timedelta(days=100)
    interact(
        workspace,
        user,
        "Old question",
        items=[
            item("Hotel Lumiere"),
            item("search", node_type=NodeType.TOOL_CALL, relation=EdgeType.USED_TOOL),
        ],
        at=old,
    )
    recent = interact(workspace, user, "New question", items=[item("Hotel Lumiere")], at=T0)
    runs = graph.purge_transient_nodes(older_than=T0 - timedelta(days=90), now=T0)
    remaining = set(GraphNode.objects.values_list("node_type", flat=True))
    assert remaining == {NodeType.QUERY, NodeType.RESPONSE, NodeType.ITEM}
    assert GraphNode.objects.filter(node_type=NodeType.QUERY).get().pk == recent.query_id
    assert GraphNode.objects.filter(node_type=NodeType.ITEM).count() == 1
    # No edge survives without both its ends.
    assert GraphEdge.objects.count() == 2
    assert (runs[0].nodes_deleted, runs[0].edges_deleted) == (3, 3)


def test_purge_keeps_an_item_nobody_searches_any_more(workspace, user):
    interact(workspace, user, "Old", items=[item("Hotel Lumiere")], at=T0 - timedelta(days=100))
    graph.purge_transient_nodes(older_than=T0)
    assert list(GraphNode.objects.values_list("node_type", flat=True)) == [NodeType.ITEM]
    assert GraphEdge.objects.count() == 0


def test_purge_takes_declared_transient_types_and_keeps_declared_durable_ones(workspace, user):
    graph.declare_node_type(workspace=workspace, slug="click", is_transient=True)
    graph.declare_node_type(workspace=workspace, slug="hotel")
    interact(
        workspace,
        user,
        "Old",
        items=[item("banner", node_type="click"), item("Lumiere", node_type="hotel")],
        at=T0 - timedelta(days=100),
    )
    graph.purge_transient_nodes(older_than=T0)
    assert list(GraphNode.objects.values_list("node_type", flat=True)) == ["hotel"]


def test_the_purge_task_uses_the_configured_age(workspace, user, settings):
    settings.MEMORYHUB_GRAPH_TRANSIENT_DAYS = 10
    interact(workspace, user, "Eleven days ago", at=T0 - timedelta(days=11))
    interact(workspace, user, "Nine days ago", at=T0 - timedelta(days=9))
    with time_machine.travel(T0, tick=False):
        assert graph_purge_transient() == 2
    assert GraphNode.objects.count() == 2


def test_an_answer_older_than_the_purge_age_is_not_recorded(answer_via_api, settings):
    answer = answer_via_api("Rooms?", "Yes.")
    GraphNode.objects.all().delete()
    later = datetime.now(UTC) + timedelta(days=settings.MEMORYHUB_GRAPH_TRANSIENT_DAYS + 1)
    assert graph.record_answer(answer_id=answer["id"], now=later) is None
    assert GraphNode.objects.count() == 0
