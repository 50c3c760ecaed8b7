"""Reporting answers: capture below the threshold, scrubbing, feedback, grouping, forgetting."""

from __future__ import annotations

from datetime import date

import pytest

from memoryhub.actors import Actor
from memoryhub.audit.log import subject_pseudonym
from memoryhub.errors import ConflictError, InvalidInputError, MemoryPausedError, NotFoundError
from memoryhub.knowledge import answers as services
from memoryhub.knowledge.forget import forget_user_data
from memoryhub.models import (
    AnswerRecord,
    AuditEntry,
    FailureClass,
    KnowledgeDocument,
    LearningCandidate,
    Session,
)
from memoryhub.services.forget import ForgetSelector, delete_account, forget
from review import decisions
from review.queries import get_candidate
from tests import factories

from .conftest import HIGH, LOW_RETRIEVAL

QUESTION = "What are the opening hours of the Lyon store on Sundays?"
ANSWER = "I'm not sure, I could not find the opening hours."


def test_a_confident_answer_is_recorded_but_not_captured(report, user):
    result = report(QUESTION, "The Lyon store opens 10:00 to 18:00 on Sundays.", HIGH)
    assert not result.is_captured
    assert result.answer.confidence == pytest.approx(0.4 * 0.9 + 0.2 * 1.0 + 0.2 * 0.9 + 0.2 * 0.9)
    assert LearningCandidate.objects.filter(user=user).count() == 0


def test_a_weak_answer_is_captured_as_a_retrieval_miss(report):
    result = report(QUESTION, ANSWER, LOW_RETRIEVAL)
    assert result.is_captured
    assert result.candidate.failure_class == FailureClass.RETRIEVAL_MISS
    assert result.candidate.status == LearningCandidate.Status.PENDING
    assert result.candidate.confidence == result.answer.confidence


def test_capture_follows_the_workspace_threshold_and_weights(report, workspace):
    signals = {"retrieval": 0.5, "policy": 0.5, "completeness": 0.5, "memory": 0.5}
    workspace.review_threshold = 0.5
    workspace.save(update_fields=["review_threshold"])
    assert not report(QUESTION, ANSWER, signals).is_captured  # 0.5 is not below 0.5.
    workspace.review_threshold = 0.7
    workspace.signal_weights = {"retrieval": 1, "policy": 0, "completeness": 0, "memory": 0}
    workspace.save(update_fields=["review_threshold", "signal_weights"])
    result = report(QUESTION, ANSWER, {**signals, "retrieval": 0.65})
    assert result.answer.confidence == pytest.approx(0.65)
    assert result.is_captured


def test_a_hallucination_signal_is_captured_whatever_the_score(report):
    answer = "Your upcoming appointment with the store is on 2024-01-05."
    result = report(QUESTION, answer, HIGH, today=date(2025, 1, 1))
    assert result.is_captured
    assert result.candidate.failure_class == FailureClass.HALLUCINATION
    assert result.candidate.findings == ["past_date_as_upcoming"]


def test_the_answer_record_holds_only_ciphertext(report):
    result = report("Email me at alice@example.com please", ANSWER)
    row = AnswerRecord.objects.get(pk=result.answer.pk)
    assert b"alice@example.com" not in bytes(row.question_ciphertext)
    assert b"not sure" not in bytes(row.answer_ciphertext)


def test_candidates_are_scrubbed_of_contact_details_and_the_users_known_names(
    report, user, personal, workspace, reviewer_actor, embedder
):
    user.display_name = "Alice Martin"
    user.save(update_fields=["display_name"])
    factories.make_memory(
        user,
        factories.mode_of(user, "work"),
        "The user's name is Alicia Dupont-Moreau",
        slot="name",
        payload={"slot": "name", "value": "Alicia Dupont-Moreau"},
        embedder=embedder,
    )
    question = (
        "Hi, this is Alice. Can Dupont-Moreau get the invoice at alice@example.com "
        "or on +33 6 12 34 56 78? Card 4111 1111 1111 1111."
    )
    result = report(question, "I sent it to Alicia at alice@example.com.")
    view = get_candidate(
        workspace=workspace, candidate_id=result.candidate.pk, actor=reviewer_actor
    ).candidate
    for secret in ("Alice", "Alicia", "Dupont", "alice@example.com", "12 34 56", "4111"):
        assert secret not in view.question
        assert secret not in view.answer
    assert "[email]" in view.question
    assert "[phone]" in view.question
    assert "[card]" in view.question
    assert "[name]" in view.answer
    assert view.scrub_counts["name"] >= 3
    assert view.scrub_counts["contact"] == 3


def test_reading_the_users_names_for_scrubbing_is_audited(report, user, embedder, personal):
    factories.make_memory(
        user,
        personal,
        "The user's name is Alice",
        slot="name",
        payload={"slot": "name", "value": "Alice"},
        embedder=embedder,
    )
    report("Alice here: when do you open?", ANSWER)
    assert AuditEntry.objects.filter(
        action="review.names_read", subject=subject_pseudonym(user.pk)
    ).exists()


def test_similar_questions_share_a_group_and_different_ones_do_not(report):
    first = report("What are the opening hours of the Lyon store on Sunday?", ANSWER)
    second = report("On Sundays, when is the Lyon store open?", ANSWER)
    other = report("How do I return a damaged parcel?", ANSWER)
    assert second.candidate.group_id == first.candidate.group_id
    assert other.candidate.group_id != first.candidate.group_id


def test_thumbs_down_captures_a_confident_answer_as_negative_feedback(
    report, user, personal, agent_actor, embedder, workspace, reviewer_actor
):
    result = report(QUESTION, "We are open every day.", HIGH)
    feedback = services.record_feedback(
        user=user,
        mode=personal,
        answer_id=result.answer.pk,
        value="down",
        comment="Wrong, it is closed on Sundays. Write to alice@example.com",
        actor=agent_actor,
        embedder=embedder,
    )
    assert feedback.is_captured
    assert feedback.candidate.failure_class == FailureClass.NEGATIVE_FEEDBACK
    assert feedback.answer.confidence == pytest.approx(result.answer.composite - 0.1)
    view = get_candidate(
        workspace=workspace, candidate_id=feedback.candidate.pk, actor=reviewer_actor
    ).candidate
    assert view.feedback == "down"
    assert view.comment == "Wrong, it is closed on Sundays. Write to [email]"


def test_thumbs_down_on_a_pending_candidate_raises_its_class(
    report, user, personal, agent_actor, embedder
):
    result = report(QUESTION, ANSWER)
    services.record_feedback(
        user=user,
        mode=personal,
        answer_id=result.answer.pk,
        value="down",
        actor=agent_actor,
        embedder=embedder,
    )
    candidate = LearningCandidate.objects.get(pk=result.candidate.pk)
    assert candidate.failure_class == FailureClass.NEGATIVE_FEEDBACK
    assert LearningCandidate.objects.filter(answer=result.answer).count() == 1


def test_thumbs_up_strengthens_an_answer_without_capturing_it(
    report, user, personal, agent_actor, embedder
):
    result = report(QUESTION, "We open at ten on Sundays.", HIGH)
    feedback = services.record_feedback(
        user=user,
        mode=personal,
        answer_id=result.answer.pk,
        value="up",
        actor=agent_actor,
        embedder=embedder,
    )
    assert not feedback.is_captured
    assert feedback.answer.confidence == pytest.approx(min(1.0, result.answer.composite + 0.1))
    assert AnswerRecord.objects.get(pk=result.answer.pk).feedback == "up"


def test_feedback_on_another_users_answer_is_not_found(report, other_user, agent_actor, embedder):
    result = report(QUESTION, ANSWER)
    with pytest.raises(NotFoundError):
        services.record_feedback(
            user=other_user,
            mode=factories.mode_of(other_user),
            answer_id=result.answer.pk,
            value="down",
            actor=agent_actor,
            embedder=embedder,
        )


def test_feedback_value_must_be_up_or_down(report, user, personal, agent_actor, embedder):
    result = report(QUESTION, ANSWER)
    with pytest.raises(InvalidInputError):
        services.record_feedback(
            user=user,
            mode=personal,
            answer_id=result.answer.pk,
            value="sideways",
            actor=agent_actor,
            embedder=embedder,
        )


def test_an_answer_in_another_users_session_is_refused(report, other_user):
    session = Session.objects.create(user=other_user, mode=factories.mode_of(other_user))
    with pytest.raises(NotFoundError):
        report(QUESTION, ANSWER, session_id=session.pk)


def test_answers_in_an_incognito_session_are_not_recorded(report, user, personal):
    session = Session.objects.create(user=user, mode=personal, is_incognito=True)
    with pytest.raises(ConflictError):
        report(QUESTION, ANSWER, session_id=session.pk)
    assert not AnswerRecord.objects.filter(user=user).exists()


def test_a_paused_user_gets_no_answer_records(report, user):
    user.is_memory_paused = True
    user.save(update_fields=["is_memory_paused"])
    with pytest.raises(MemoryPausedError):
        report(QUESTION, ANSWER)


@pytest.mark.parametrize(
    "fields",
    [
        {"context_ids": [""]},
        {"context_ids": [7]},
        {"items": ["not an object"]},
    ],
)
def test_malformed_context_ids_and_items_are_refused(report, fields):
    with pytest.raises(InvalidInputError):
        report(QUESTION, ANSWER, **fields)


def test_an_empty_question_is_refused(report):
    with pytest.raises(InvalidInputError):
        report("   ", ANSWER)


def test_proposed_facts_are_scrubbed_and_queued(
    user, personal, agent_actor, embedder, workspace, reviewer_actor
):
    candidate = services.propose_knowledge_candidate(
        user=user,
        mode=personal,
        statement="Returns are free within 30 days; ask support@example.com.",
        actor=agent_actor,
        embedder=embedder,
    )
    view = get_candidate(
        workspace=workspace, candidate_id=candidate.pk, actor=reviewer_actor
    ).candidate
    assert view.kind == "fact"
    assert view.question == ""
    assert view.answer == "Returns are free within 30 days; ask [email]."


def test_forgetting_a_memory_deletes_the_answers_built_on_it(report, user, personal, embedder):
    memory = factories.make_memory(user, personal, "Alice likes the Lyon store", embedder=embedder)
    built_on_it = report(QUESTION, ANSWER, context_ids=[str(memory.pk)])
    unrelated = report("How do I return a parcel?", ANSWER)
    counts = forget_user_data(user=user, mode=personal, memory_ids=[memory.pk])
    assert counts == {"answer_record": 1, "learning_candidate": 1}
    assert not AnswerRecord.objects.filter(pk=built_on_it.answer.pk).exists()
    assert not LearningCandidate.objects.filter(pk=built_on_it.candidate.pk).exists()
    assert AnswerRecord.objects.filter(pk=unrelated.answer.pk).exists()


def test_forgetting_a_user_deletes_all_their_answers_and_candidates(
    report, user, other_user, personal, agent_actor, embedder
):
    report(QUESTION, ANSWER)
    services.propose_knowledge_candidate(
        user=user,
        mode=personal,
        statement="Stores close at 7pm.",
        actor=agent_actor,
        embedder=embedder,
    )
    kept = report(QUESTION, ANSWER, owner=other_user)
    counts = forget_user_data(user=user)
    assert counts == {"answer_record": 1, "learning_candidate": 2}
    assert not LearningCandidate.objects.filter(user=user).exists()
    assert LearningCandidate.objects.filter(pk=kept.candidate.pk).exists()


def test_the_forget_service_purges_answers_built_on_forgotten_memories(
    report, user, personal, embedder
):
    memory = factories.make_memory(
        user, personal, "Alice shops at the Lyon store", embedder=embedder
    )
    result = report(QUESTION, ANSWER, context_ids=[str(memory.pk)])
    receipt = forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(memory_ids=[memory.pk]),
        actor=Actor.for_user(user.pk),
        embedder=embedder,
    )
    assert receipt.counts["answer_record"] == 1
    assert receipt.counts["learning_candidate"] == 1
    assert not AnswerRecord.objects.filter(pk=result.answer.pk).exists()


def test_deleting_an_account_purges_its_candidates_but_keeps_published_knowledge(
    report, user, reviewer, reviewer_actor, embedder
):
    candidate = report(QUESTION, ANSWER).candidate
    document = decisions.approve_candidate(
        workspace=reviewer.workspace,
        candidate_id=candidate.pk,
        reviewer=reviewer,
        actor=reviewer_actor,
        embedder=embedder,
        answer="Ten to six on Sundays.",
    )
    delete_account(user=user, actor=Actor.for_user(user.pk))
    assert not LearningCandidate.objects.filter(pk=candidate.pk).exists()
    assert not AnswerRecord.objects.exists()
    kept = KnowledgeDocument.objects.get(pk=document.pk)
    assert kept.source_candidate is None
    assert kept.is_published
