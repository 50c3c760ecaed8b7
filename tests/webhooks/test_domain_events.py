"""The domain announces session.extracted, candidate.waiting and review.decided, as signed
webhooks a real receiver on loopback verifies; a decision over the review API too."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from memoryhub.actors import Actor
from memoryhub.knowledge.answers import report_answer
from memoryhub.models import ActorType, Channel, LearningCandidate
from memoryhub.services.agents import create_review_key
from memoryhub.services.ingest import run_extraction
from memoryhub.services.sessions import add_message, end_session, start_session
from memoryhub.webhooks import events
from review.decisions import answer_for_user, reject_candidate
from tests import factories
from tests.api.conftest import Caller
from tests.review.conftest import LOW_RETRIEVAL, make_reviewer
from tests.webhooks.test_delivery import Receiver, endpoint_for, send_due

AGENT = Actor(ActorType.AGENT, "agent-1", Channel.API, label="assistant")


@pytest.fixture(autouse=True)
def allow_private_urls(settings):
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS = True


@pytest.fixture
def receiver():
    found = Receiver()
    yield found
    found.stop()


def _of_type(receiver: Receiver, event_type: str) -> list[dict]:
    return [m["payload"]["data"] for m in receiver.received if m["payload"]["type"] == event_type]


def _report(user, question, embedder):
    return report_answer(
        user=user,
        mode=factories.mode_of(user),
        question=question,
        answer="I could not find it.",
        signals=LOW_RETRIEVAL,
        actor=AGENT,
        embedder=embedder,
    ).candidate


@pytest.mark.django_db(transaction=True)
def test_an_extracted_session_is_announced_with_its_memories_and_session(receiver, embedder):
    user = factories.make_user()
    mode = factories.mode_of(user)
    endpoint_for(receiver, user.workspace)
    session = start_session(user=user, mode=mode, actor=AGENT)
    for line in ("I live in Lyon.", "Remember that my dog is called Rex."):
        add_message(session=session, role="user", content=line, actor=AGENT, embedder=embedder)
    end_session(session=session, actor=AGENT)
    run_extraction(session_id=session.pk, embedder=embedder)
    send_due()
    extracted = _of_type(receiver, events.SESSION_EXTRACTED)
    assert extracted, [m["payload"]["type"] for m in receiver.received]
    memory_ids = {i for data in extracted for i in data["ids"]}
    assert memory_ids and all(data["session_ids"] == [str(session.pk)] for data in extracted)
    assert all(data["user_id"] == str(user.pk) for data in extracted)
    raw = json.dumps(receiver.received)
    assert "Lyon" not in raw and "Rex" not in raw  # Ids and kinds, never text.
    assert receiver.bad_signatures == 0


@pytest.mark.django_db(transaction=True)
def test_a_waiting_answer_and_every_review_decision_are_announced(receiver, embedder):
    workspace = factories.make_workspace()
    user = factories.make_user(workspace=workspace)
    reviewer = make_reviewer(workspace)
    reviewer_actor = Actor(ActorType.REVIEWER, str(reviewer.pk), Channel.UI, label="reviewer")
    endpoint_for(receiver, workspace)
    approved = _report(user, "What is the refund policy for damaged parcels?", embedder)
    rejected = _report(user, "Which courier delivers to Corsica?", embedder)
    answered = _report(user, "When is my dentist appointment?", embedder)
    send_due()
    waiting = _of_type(receiver, events.CANDIDATE_WAITING)
    assert sorted(i for data in waiting for i in data["candidate_ids"]) == sorted(
        str(c.pk) for c in (approved, rejected, answered)
    )

    # Over the review API with a reviewer key: announced like a decision on the page.
    key = create_review_key(reviewer=reviewer, name="bot", actor=reviewer_actor).raw_key
    response = Caller(Client(), key).post(
        f"/review/candidates/{approved.pk}/approve", {"answer": "Refunded in five days."}
    )
    assert response.status_code == 200, response.json()
    # On the page (review/decisions.py, as the views call it).
    reject_candidate(
        workspace=workspace,
        candidate_id=rejected.pk,
        reviewer=reviewer,
        actor=reviewer_actor,
        reason="Out of scope.",
    )
    answer_for_user(
        workspace=workspace,
        candidate_id=answered.pk,
        reviewer=reviewer,
        actor=reviewer_actor,
        embedder=embedder,
        answer="Tuesday at nine.",
    )
    send_due()
    decided = {data["candidate_ids"][0]: data for data in _of_type(receiver, events.REVIEW_DECIDED)}
    assert set(decided) == {str(approved.pk), str(rejected.pk), str(answered.pk)}
    assert decided[str(approved.pk)]["action"] == "review.candidate_approve"
    assert decided[str(rejected.pk)]["action"] == "review.candidate_reject"
    assert decided[str(answered.pk)]["action"] == "review.answer_for_user"
    assert {data["actor_type"] for data in decided.values()} == {"reviewer"}
    statuses = dict(LearningCandidate.objects.values_list("pk", "status"))
    assert statuses[approved.pk] == "approved" and statuses[answered.pk] == "answered"
    raw = json.dumps(receiver.received)
    assert "five days" not in raw and "Tuesday" not in raw and "dentist" not in raw
    ids = [m["id"] for m in receiver.received]
    assert len(ids) == len(set(ids)) and receiver.bad_signatures == 0
