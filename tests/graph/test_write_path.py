"""Recording answers in the workspace graph: from the API, scrubbed, encrypted, idempotent."""

from __future__ import annotations

from uuid import UUID

import pytest

from memoryhub import graph
from memoryhub.audit.log import subject_pseudonym
from memoryhub.errors import ConflictError, InvalidInputError, NotFoundError
from memoryhub.keyring import cipher_for, workspace_cipher
from memoryhub.knowledge import answers as review_services
from memoryhub.knowledge.documents import publish_document
from memoryhub.models import AuditEntry, EdgeType, GraphEdge, GraphNode, KnowledgeDocument, NodeType
from memoryhub.sealed_tables import NODE_TABLE
from memoryhub.tasks import record_answer_in_graph
from tests import factories

from .conftest import HIGH, LOW

QUESTION = "Is the Hotel Lumiere in Lyon free on Friday? Mail me at alice@example.com"
ANSWER = "Yes, the Hotel Lumiere has rooms on Friday."


def _text(node):
    return workspace_cipher(node.workspace_id).decrypt(
        node.text_ciphertext, table=NODE_TABLE, row_id=node.pk, field="text"
    )


def _answered_by(answer_id):
    return GraphEdge.objects.get(edge_type=EdgeType.ANSWERED_BY, source__answer_id=answer_id)


def test_an_answer_posted_to_the_api_becomes_a_query_a_response_and_searched_items(
    answer_via_api, workspace, user
):
    answer = answer_via_api(
        QUESTION, ANSWER, items=[{"name": "Hotel Lumiere", "id": "h-1"}, {"title": "Lyon"}]
    )
    query = GraphNode.objects.get(answer_id=answer["id"], node_type=NodeType.QUERY)
    response = GraphNode.objects.get(answer_id=answer["id"], node_type=NodeType.RESPONSE)
    assert query.workspace == workspace
    assert query.user == user
    assert _answered_by(answer["id"]).target == response
    searched = GraphEdge.objects.filter(source=query, edge_type=EdgeType.SEARCHED_FOR)
    assert sorted(_text(edge.target) for edge in searched) == ["Hotel Lumiere", "Lyon"]
    # Shared items belong to nobody and to no answer: erasure can never reach them.
    assert all(edge.target.user is None and edge.target.answer_id is None for edge in searched)


def test_node_text_is_scrubbed_and_encrypted_under_the_workspace_key(answer_via_api, user):
    answer = answer_via_api(QUESTION, ANSWER)
    query = GraphNode.objects.get(answer_id=answer["id"], node_type=NodeType.QUERY)
    assert b"alice@example.com" not in bytes(query.text_ciphertext)
    assert b"Lumiere" not in bytes(query.text_ciphertext)
    text = _text(query)
    assert "alice@example.com" not in text
    assert "Hotel Lumiere in Lyon" in text
    with pytest.raises(Exception, match="ciphertext"):
        cipher_for(user).decrypt(
            query.text_ciphertext, table=NODE_TABLE, row_id=query.pk, field="text"
        )


def test_recording_reads_the_answer_once_and_says_so_in_the_audit_log(answer_via_api, user):
    answer = answer_via_api(QUESTION, ANSWER)
    assert AuditEntry.objects.filter(
        action="graph.record_answer",
        subject=subject_pseudonym(user.pk),
        object_ids=[answer["id"]],
    ).exists()


def test_an_item_reported_twice_shares_one_node(answer_via_api):
    answer_via_api(QUESTION, ANSWER, items=[{"name": "Hotel Lumiere", "id": "h-1"}])
    answer_via_api("Does it have parking?", "Yes.", items=[{"name": "Hôtel Lumière", "id": "h-1"}])
    answer_via_api("And a pool?", "No.", items=[{"name": "hotel  lumiere"}])
    items = GraphNode.objects.filter(node_type=NodeType.ITEM)
    # Keyed by id when given, else by the normalised name.
    assert items.count() == 2
    assert GraphEdge.objects.filter(edge_type=EdgeType.SEARCHED_FOR).count() == 3


def test_running_the_task_again_writes_nothing_twice(answer_via_api):
    answer = answer_via_api(QUESTION, ANSWER, items=[{"name": "Hotel Lumiere"}])
    counts = (GraphNode.objects.count(), GraphEdge.objects.count())
    record_answer_in_graph(answer["id"])
    assert (GraphNode.objects.count(), GraphEdge.objects.count()) == counts


def test_feedback_through_the_api_strengthens_or_weakens_the_answered_by_edge(
    answer_via_api, api, django_capture_on_commit_callbacks
):
    answer = answer_via_api(QUESTION, ANSWER, signals=HIGH)
    reported = _answered_by(answer["id"]).initial_weight
    assert reported == pytest.approx(answer["confidence"])
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/answers/{answer['id']}/feedback", {"value": "up"}).status_code == 200
    up = _answered_by(answer["id"]).initial_weight
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/answers/{answer['id']}/feedback", {"value": "down"}).status_code == 200
    down = _answered_by(answer["id"]).initial_weight
    assert up > reported > down
    # Recomputed from the answer's confidence, not compounded: the same feedback, the same weight.
    graph.apply_feedback(answer_id=answer["id"], value="down")
    assert _answered_by(answer["id"]).initial_weight == down


def test_knowledge_documents_among_the_context_ids_are_cited_by_the_response(
    answer_via_api, workspace, embedder
):
    document = publish_document(
        workspace=workspace,
        title="Parking at the Hotel Lumiere",
        body="Guests park free of charge in the courtyard.",
        source=KnowledgeDocument.Source.PASTED,
        embedder=embedder,
    )
    answer = answer_via_api(
        "Is there parking?", "Yes, free.", context_ids=[str(document.pk), "not-a-uuid"]
    )
    response = GraphNode.objects.get(answer_id=answer["id"], node_type=NodeType.RESPONSE)
    cited = GraphEdge.objects.get(source=response, edge_type=EdgeType.CITED)
    assert cited.target.node_type == NodeType.DOCUMENT
    assert _text(cited.target) == "Parking at the Hotel Lumiere"


def test_tool_calls_hang_off_the_response_and_declared_types_are_kept(answer_via_api, workspace):
    graph.declare_node_type(workspace=workspace, slug="hotel", name="Hotel")
    answer = answer_via_api(
        QUESTION,
        ANSWER,
        items=[
            {"name": "search_rooms", "type": "tool_call"},
            {"name": "Hotel Lumiere", "type": "hotel", "relation": "booked"},
            {"name": "Hotel Soleil", "type": "castle"},
            {"price": 120},
        ],
    )
    response = GraphNode.objects.get(answer_id=answer["id"], node_type=NodeType.RESPONSE)
    tool = GraphEdge.objects.get(source=response, edge_type=EdgeType.USED_TOOL).target
    assert tool.node_type == NodeType.TOOL_CALL
    assert tool.answer_id is not None  # Transient: purged with its interaction.
    booked = GraphEdge.objects.get(edge_type=EdgeType.BOOKED).target
    assert booked.node_type == "hotel"
    undeclared = GraphEdge.objects.get(edge_type=EdgeType.SEARCHED_FOR).target
    assert (undeclared.node_type, _text(undeclared)) == (NodeType.ITEM, "Hotel Soleil")


def test_each_workspace_records_into_its_own_graph_and_items_are_never_shared(
    answer_via_api, caller, workspace, eager_celery, django_capture_on_commit_callbacks
):
    mine = answer_via_api(QUESTION, ANSWER, items=[{"name": "Hotel Lumiere"}])
    elsewhere = factories.make_workspace()
    factories.make_user(workspace=elsewhere, external_id="carol")
    _, key = factories.make_agent(elsewhere, "assistant")
    body = {
        "user": "carol",
        "question": QUESTION,
        "answer": ANSWER,
        "signals": HIGH,
        "items": [{"name": "Hotel Lumiere"}],
    }
    with django_capture_on_commit_callbacks(execute=True):
        theirs = caller(key).post("/answers", body).json()
    mine_nodes = GraphNode.objects.filter(workspace=workspace)
    their_nodes = GraphNode.objects.filter(workspace=elsewhere)
    assert set(mine_nodes.values_list("answer_id", flat=True)) == {UUID(mine["id"]), None}
    assert set(their_nodes.values_list("answer_id", flat=True)) == {UUID(theirs["id"]), None}
    # The same item name, one node per workspace, each under its own workspace key.
    items = GraphNode.objects.filter(node_type=NodeType.ITEM)
    assert items.count() == 2
    assert len(set(items.values_list("key_hash", flat=True))) == 2
    assert all(
        edge.source.workspace_id == edge.target.workspace_id for edge in GraphEdge.objects.all()
    )


def test_a_deleted_answer_is_not_recorded(db):
    assert graph.record_answer(answer_id="0b7e4c0e-0000-4000-8000-000000000000") is None
    assert graph.record_answer(answer_id="not-a-uuid") is None
    assert GraphNode.objects.count() == 0


def test_feedback_needs_up_or_down_and_a_recorded_answer(answer_via_api):
    answer = answer_via_api(QUESTION, ANSWER, signals=LOW)
    with pytest.raises(InvalidInputError):
        graph.apply_feedback(answer_id=answer["id"], value="sideways")
    with pytest.raises(NotFoundError):
        graph.apply_feedback(answer_id="0b7e4c0e-0000-4000-8000-000000000000", value="up")


@pytest.mark.parametrize("slug", ["", "Hotel", "two words", "x" * 65, "query", "tool_call"])
def test_a_declared_node_type_must_be_a_new_lowercase_slug(workspace, slug):
    with pytest.raises(InvalidInputError):
        graph.declare_node_type(workspace=workspace, slug=slug)


def test_a_node_type_is_declared_once_per_workspace(workspace):
    graph.declare_node_type(workspace=workspace, slug="hotel")
    with pytest.raises(ConflictError):
        graph.declare_node_type(workspace=workspace, slug="hotel")


def test_a_failing_graph_hook_never_fails_the_answer_report(
    api, user, monkeypatch, django_capture_on_commit_callbacks
):
    # The answer is committed before the hook runs: a broken task module or an unreachable
    # broker must cost the graph one interaction, not the agent a 500.
    monkeypatch.setattr(review_services, "GRAPH_TASK", "tests.graph.no_such_module.task")
    body = {"user": "alice", "question": QUESTION, "answer": ANSWER, "signals": HIGH}
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = api.post("/answers", body)
    assert response.status_code == 201
    assert len(callbacks) == 1
    assert GraphNode.objects.count() == 0
