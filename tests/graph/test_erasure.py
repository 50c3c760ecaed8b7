"""Erasing a user from the graph: their queries and responses go, shared items stay."""

from __future__ import annotations

from memoryhub import graph
from memoryhub.actors import Actor
from memoryhub.models import EdgeType, GraphEdge, GraphNode, NodeType
from memoryhub.services.forget import ForgetSelector, delete_account, forget
from tests import factories

from .conftest import interact, item


def _types_of(user):
    return sorted(GraphNode.objects.filter(user=user).values_list("node_type", flat=True))


def test_erasing_a_user_removes_their_queries_responses_and_edges_but_not_shared_items(
    workspace, user, other_user
):
    lumiere = item("Hotel Lumiere")
    tool = item("search_rooms", node_type=NodeType.TOOL_CALL, relation=EdgeType.USED_TOOL)
    mine = interact(workspace, user, "Rooms at the Lumiere?", items=[lumiere, tool])
    theirs = interact(workspace, other_user, "Parking at the Lumiere?", items=[lumiere])
    counts = graph.erase_user(user=user)
    assert counts == {"graph_node": 3, "graph_edge": 3}
    assert not GraphNode.objects.filter(pk__in=[mine.query_id, mine.response_id]).exists()
    assert _types_of(user) == []
    shared = GraphNode.objects.get(node_type=NodeType.ITEM)
    # The item stays, still searched by the other user; no edge points at a missing node.
    assert GraphEdge.objects.get(target=shared).source_id == theirs.query_id
    assert _types_of(other_user) == [NodeType.QUERY, NodeType.RESPONSE]
    assert GraphEdge.objects.filter(source_id=mine.query_id).count() == 0


def test_erasing_a_user_keeps_an_item_only_they_searched(workspace, user):
    interact(workspace, user, "Rooms at the Lumiere?", items=[item("Hotel Lumiere")])
    graph.erase_user(user=user)
    assert list(GraphNode.objects.values_list("node_type", flat=True)) == [NodeType.ITEM]


def test_erasing_a_user_twice_is_harmless(workspace, user):
    interact(workspace, user, "Rooms?")
    graph.erase_user(user=user)
    assert graph.erase_user(user=user) == {"graph_node": 0, "graph_edge": 0}


def test_account_deletion_erases_the_user_graph_end_to_end(answer_via_api, user, other_user):
    answer_via_api("Rooms at the Lumiere?", "Yes.", items=[{"name": "Hotel Lumiere"}])
    answer_via_api(
        "Parking at the Lumiere?", "Yes.", owner="bob", items=[{"name": "Hotel Lumiere"}]
    )
    delete_account(user=user, actor=Actor.for_user(user.pk))
    assert GraphNode.objects.filter(node_type=NodeType.QUERY).count() == 1
    assert _types_of(other_user) == [NodeType.QUERY, NodeType.RESPONSE]
    item_node = GraphNode.objects.get(node_type=NodeType.ITEM)
    assert GraphEdge.objects.filter(target=item_node).count() == 1


def test_forgetting_a_memory_drops_the_graph_of_answers_built_on_it(
    answer_via_api, user, personal, embedder
):
    memory = factories.make_memory(user, personal, "The user likes quiet rooms", embedder=embedder)
    built_on = answer_via_api("Quiet rooms?", "Yes.", context_ids=[str(memory.pk)])
    other = answer_via_api("Parking?", "Yes.")
    receipt = forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(memory_ids=(memory.pk,)),
        actor=Actor.for_user(user.pk),
        embedder=embedder,
    )
    assert receipt.counts.get("graph_node") == 2
    assert not GraphNode.objects.filter(answer_id=built_on["id"]).exists()
    assert GraphNode.objects.filter(answer_id=other["id"]).count() == 2
