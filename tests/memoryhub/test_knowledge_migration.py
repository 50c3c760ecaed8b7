"""Moving the knowledge models from the review app to memoryhub (issue 18) keeps every row."""

from __future__ import annotations

import uuid

import pytest

from memoryhub.models import AnswerRecord, KnowledgeChunk, KnowledgeDocument, LearningCandidate
from review.models import ReviewDecision
from tests import factories
from tests.migrating import migrate, migrate_to_latest

# Main's migration state before the move, and the two migrations that make it.
BEFORE = [("memoryhub", "0014_seal_mfa_secrets"), ("review", "0002_candidate_user_answers")]


@pytest.mark.django_db(transaction=True)
def test_migrating_from_the_review_app_state_keeps_answers_candidates_and_documents():
    workspace = factories.make_workspace()
    user = factories.make_user(workspace=workspace)
    mode = user.modes.get(slug="personal")
    old = migrate(BEFORE)
    try:
        # Written through the review app's models as they were: the ciphertext is a stand-in,
        # the test reads ids and relations back, never text.
        answer = old.get_model("review", "AnswerRecord").objects.create(
            workspace_id=workspace.pk,
            user_id=user.pk,
            mode_id=mode.pk,
            question_ciphertext=b"q",
            answer_ciphertext=b"a",
            composite=0.2,
            confidence=0.2,
        )
        candidate = old.get_model("review", "LearningCandidate").objects.create(
            workspace_id=workspace.pk,
            user_id=user.pk,
            mode_id=mode.pk,
            answer=answer,
            kind="answer",
            answer_ciphertext=b"a",
            embedding=[0.1] * 384,
            group_id=uuid.uuid4(),
        )
        document = old.get_model("review", "KnowledgeDocument").objects.create(
            workspace_id=workspace.pk,
            title="Spa hours",
            body="The spa opens at 9.",
            source="answer",
            source_candidate=candidate,
        )
        old.get_model("review", "KnowledgeChunk").objects.create(
            document=document,
            workspace_id=workspace.pk,
            position=0,
            text="The spa opens at 9.",
            embedding=[0.1] * 384,
        )
        old.get_model("review", "ReviewDecision").objects.create(
            workspace_id=workspace.pk, candidate=candidate, outcome="approved"
        )
    finally:
        migrate_to_latest()

    moved = LearningCandidate.objects.select_related("answer", "document").get(pk=candidate.pk)
    assert moved.answer == AnswerRecord.objects.get(pk=answer.pk)
    assert moved.document == KnowledgeDocument.objects.get(pk=document.pk, title="Spa hours")
    assert list(KnowledgeChunk.objects.filter(document_id=document.pk).values_list("text")) == [
        ("The spa opens at 9.",)
    ]
    assert ReviewDecision.objects.get(candidate_id=candidate.pk).outcome == "approved"
