"""Approving candidates publishes knowledge the same question retrieves next time."""

from __future__ import annotations

import pytest

from memoryhub.errors import ConflictError, InvalidInputError, NotFoundError
from memoryhub.knowledge import answers as services
from memoryhub.knowledge import documents as knowledge
from memoryhub.knowledge.queries import search_knowledge
from memoryhub.models import KnowledgeDocument, LearningCandidate
from memoryhub.queries.context import KNOWLEDGE, assemble_context
from review import decisions
from tests import factories

from .conftest import LOW_RETRIEVAL, make_reviewer

QUESTION = "What are the opening hours of the Lyon store on Sundays?"
REVIEWED_ANSWER = "The Lyon store is open from 10:00 to 17:00 on Sundays."


@pytest.fixture
def captured(report):
    return report(QUESTION, "I could not find the opening hours.", LOW_RETRIEVAL).candidate


def approve(candidate, reviewer, actor, embedder, **fields):
    return decisions.approve_candidate(
        workspace=reviewer.workspace,
        candidate_id=candidate.pk,
        reviewer=reviewer,
        actor=actor,
        embedder=embedder,
        **fields,
    )


def test_approving_an_edited_answer_lets_the_same_question_find_it(
    captured, reviewer, reviewer_actor, embedder, workspace
):
    assert search_knowledge(workspace=workspace, query=QUESTION, embedder=embedder) == []
    document = approve(captured, reviewer, reviewer_actor, embedder, answer=REVIEWED_ANSWER)
    assert document.is_published
    assert document.source_candidate_id == captured.pk
    assert document.title == QUESTION
    passages = search_knowledge(workspace=workspace, query=QUESTION, embedder=embedder)
    assert passages[0].document_id == document.pk
    assert REVIEWED_ANSWER in passages[0].text
    assert passages[0].score > 0.8
    assert LearningCandidate.objects.get(pk=captured.pk).status == "approved"


def test_after_approval_the_context_for_the_question_holds_the_knowledge_passage(
    captured, reviewer, reviewer_actor, embedder, user, personal, agent_actor
):
    approve(captured, reviewer, reviewer_actor, embedder, answer=REVIEWED_ANSWER)
    bundle = assemble_context(
        user=user,
        mode=personal,
        agent=None,
        message=QUESTION,
        actor=agent_actor,
        embedder=embedder,
    )
    knowledge_blocks = [block for block in bundle.blocks if block.layer == KNOWLEDGE]
    assert knowledge_blocks
    assert REVIEWED_ANSWER in knowledge_blocks[0].text
    assert not knowledge_blocks[0].trusted


def test_an_unrelated_question_finds_no_passage(
    captured, reviewer, reviewer_actor, embedder, workspace
):
    approve(captured, reviewer, reviewer_actor, embedder, answer=REVIEWED_ANSWER)
    assert (
        search_knowledge(
            workspace=workspace, query="How do I reset my password?", embedder=embedder
        )
        == []
    )


def test_another_workspace_never_sees_the_knowledge(captured, reviewer, reviewer_actor, embedder):
    approve(captured, reviewer, reviewer_actor, embedder, answer=REVIEWED_ANSWER)
    elsewhere = factories.make_workspace()
    assert search_knowledge(workspace=elsewhere, query=QUESTION, embedder=embedder) == []


def test_an_approved_fact_is_published_as_written(
    user, personal, agent_actor, reviewer, reviewer_actor, embedder, workspace
):
    candidate = services.propose_knowledge_candidate(
        user=user,
        mode=personal,
        statement="Parcels damaged in transit are replaced free of charge.",
        actor=agent_actor,
        embedder=embedder,
    )
    document = approve(candidate, reviewer, reviewer_actor, embedder)
    assert document.source == KnowledgeDocument.Source.FACT
    assert document.body == "Parcels damaged in transit are replaced free of charge."
    passages = search_knowledge(
        workspace=workspace, query="What happens if my parcel arrives damaged?", embedder=embedder
    )
    assert [p.document_id for p in passages] == [document.pk]


def test_approving_with_the_group_decides_the_similar_candidates_too(
    report, reviewer, reviewer_actor, embedder
):
    first = report(QUESTION, "No idea.").candidate
    second = report("On Sundays, when is the Lyon store open?", "No idea.").candidate
    approve(first, reviewer, reviewer_actor, embedder, answer=REVIEWED_ANSWER, apply_to_group=True)
    assert LearningCandidate.objects.get(pk=second.pk).status == "approved"
    assert KnowledgeDocument.objects.count() == 1


def test_a_decided_candidate_cannot_be_decided_again(captured, reviewer, reviewer_actor, embedder):
    approve(captured, reviewer, reviewer_actor, embedder)
    with pytest.raises(ConflictError):
        decisions.reject_candidate(
            workspace=reviewer.workspace,
            candidate_id=captured.pk,
            reviewer=reviewer,
            actor=reviewer_actor,
            reason="duplicate",
        )


def test_a_rejection_needs_a_reason(captured, reviewer, reviewer_actor):
    with pytest.raises(InvalidInputError):
        decisions.reject_candidate(
            workspace=reviewer.workspace,
            candidate_id=captured.pk,
            reviewer=reviewer,
            actor=reviewer_actor,
            reason="  ",
        )


def test_a_reviewer_cannot_decide_another_workspaces_candidate(captured, reviewer_actor, embedder):
    outsider = make_reviewer(factories.make_workspace())
    with pytest.raises(NotFoundError):
        approve(captured, outsider, reviewer_actor, embedder)


def test_unpublishing_removes_a_document_from_search_and_publishing_restores_it(
    captured, reviewer, reviewer_actor, embedder, workspace
):
    document = approve(captured, reviewer, reviewer_actor, embedder, answer=REVIEWED_ANSWER)
    knowledge.set_published(workspace=workspace, document_id=document.pk, is_published=False)
    assert search_knowledge(workspace=workspace, query=QUESTION, embedder=embedder) == []
    knowledge.set_published(workspace=workspace, document_id=document.pk, is_published=True)
    assert search_knowledge(workspace=workspace, query=QUESTION, embedder=embedder)


def test_an_added_document_is_chunked_embedded_and_searchable(reviewer, embedder, workspace):
    body = (
        "# Delivery\n\nOrders placed before noon ship the same day.\n\n"
        "# Returns\n\nReturns are free within 30 days of delivery."
    )
    document = knowledge.publish_document(
        workspace=workspace,
        title="",
        body=body,
        source=KnowledgeDocument.Source.PASTED,
        embedder=embedder,
        created_by=reviewer,
    )
    assert document.title == "Delivery"
    assert document.chunks.count() == 2
    passages = search_knowledge(
        workspace=workspace, query="How long do I have to return an item?", embedder=embedder
    )
    assert passages[0].text == "# Returns\n\nReturns are free within 30 days of delivery."


def test_editing_a_document_re_embeds_its_new_text(reviewer, embedder, workspace):
    document = knowledge.publish_document(
        workspace=workspace,
        title="Shipping",
        body="Orders ship the same day.",
        source=KnowledgeDocument.Source.PASTED,
        embedder=embedder,
    )
    knowledge.edit_document(
        workspace=workspace,
        document_id=document.pk,
        title="Gift wrapping",
        body="Gift wrapping costs 3 euros per parcel.",
        embedder=embedder,
    )
    passages = search_knowledge(
        workspace=workspace, query="How much is gift wrapping?", embedder=embedder
    )
    assert [p.text for p in passages] == ["Gift wrapping costs 3 euros per parcel."]


def test_an_empty_document_is_refused(workspace, embedder):
    with pytest.raises(InvalidInputError):
        knowledge.publish_document(
            workspace=workspace,
            title="Empty",
            body=" \n ",
            source=KnowledgeDocument.Source.PASTED,
            embedder=embedder,
        )
