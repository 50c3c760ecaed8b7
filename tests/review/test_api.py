"""POST /answers, /answers/{id}/feedback and /knowledge/candidates through the agent API."""

from __future__ import annotations

import uuid

import pytest

from memoryhub.actors import Actor
from memoryhub.models import AnswerRecord, LearningCandidate, Session
from memoryhub.services.preferences import set_memory_paused, set_mode_memory_off
from tests import factories
from tests.api.conftest import Caller

from .conftest import HIGH, LOW_RETRIEVAL


@pytest.fixture
def api(client, workspace):
    _, key = factories.make_agent(workspace, "assistant")
    return Caller(client, key)


def answer_body(**fields):
    return {
        "user": "alice",
        "mode": "personal",
        "question": "When does the Lyon store open on Sundays?",
        "answer": "I could not find it.",
        "signals": LOW_RETRIEVAL,
        **fields,
    }


def test_reporting_a_weak_answer_captures_it(api, user):
    response = api.post("/answers", answer_body(context_ids=["m1", "m2"], items=[{"name": "Lyon"}]))
    assert response.status_code == 201
    body = response.json()
    assert body["captured"] is True
    assert body["confidence"] == pytest.approx(0.4 * 0.1 + 0.2 * 1.0 + 0.2 * 0.8 + 0.2 * 0.3)
    record = AnswerRecord.objects.get(pk=body["id"])
    assert record.context_ids == ["m1", "m2"]
    assert record.agent is not None
    assert LearningCandidate.objects.filter(answer=record).exists()


def test_reporting_a_confident_answer_does_not_capture_it(api, user):
    body = api.post("/answers", answer_body(signals=HIGH)).json()
    assert body["captured"] is False


def test_an_answer_may_name_the_users_session(api, user, personal):
    session = Session.objects.create(user=user, mode=personal)
    response = api.post("/answers", answer_body(session=str(session.pk)))
    assert response.status_code == 201
    assert AnswerRecord.objects.get(pk=response.json()["id"]).session_id == session.pk


@pytest.mark.parametrize(
    "fields",
    [
        {"signals": {**LOW_RETRIEVAL, "retrieval": 1.2}},
        {"signals": {**LOW_RETRIEVAL, "policy": -0.1}},
        {"signals": {"retrieval": 0.5}},
        {"signals": "high"},
        {"question": ""},
        {"question": "   "},
        {"answer": "a\u0000b"},
        {"context_ids": [""]},
        {"context_ids": ["x" * 65]},
        {"items": ["a string"]},
        {"session": "not-a-uuid"},
        {"user": ""},
    ],
)
def test_malformed_answer_reports_are_422(api, user, fields):
    response = api.post("/answers", answer_body(**fields))
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_input"
    assert not AnswerRecord.objects.exists()


def test_a_report_without_a_key_is_401(client, user):
    response = Caller(client, None).post("/answers", answer_body())
    assert response.status_code == 401


def test_a_user_of_another_workspace_is_404(api, client):
    factories.make_user(workspace=factories.make_workspace(), external_id="carol")
    response = api.post("/answers", answer_body(user="carol"))
    assert response.status_code == 404
    assert not AnswerRecord.objects.exists()


def test_a_session_of_another_user_is_404(api, user, other_user):
    session = Session.objects.create(user=other_user, mode=factories.mode_of(other_user))
    response = api.post("/answers", answer_body(session=str(session.pk)))
    assert response.status_code == 404


def test_thumbs_down_captures_a_confident_answer(api, user):
    answer_id = api.post("/answers", answer_body(signals=HIGH)).json()["id"]
    response = api.post(f"/answers/{answer_id}/feedback", {"value": "down", "comment": "Wrong."})
    assert response.status_code == 200
    body = response.json()
    assert (body["id"], body["captured"], body["feedback"]) == (answer_id, True, "down")
    assert LearningCandidate.objects.get(answer_id=answer_id).failure_class == "negative_feedback"


def test_thumbs_up_strengthens_an_answer(api, user):
    first = api.post("/answers", answer_body(signals=HIGH)).json()
    body = api.post(f"/answers/{first['id']}/feedback", {"value": "up"}).json()
    assert body["confidence"] == pytest.approx(min(1.0, first["confidence"] + 0.1))
    assert body["captured"] is False


@pytest.mark.parametrize(
    "payload", [{"value": "meh"}, {}, {"value": "down", "comment": "x" * 2001}]
)
def test_malformed_feedback_is_422(api, user, payload):
    answer_id = api.post("/answers", answer_body(signals=HIGH)).json()["id"]
    response = api.post(f"/answers/{answer_id}/feedback", payload)
    assert response.status_code == 422
    assert AnswerRecord.objects.get(pk=answer_id).feedback == ""


def test_feedback_on_an_unknown_answer_is_404(api, user):
    response = api.post(f"/answers/{uuid.uuid4()}/feedback", {"value": "up"})
    assert response.status_code == 404


def test_feedback_on_another_workspaces_answer_is_404(api, client, user):
    answer_id = api.post("/answers", answer_body(signals=HIGH)).json()["id"]
    elsewhere = factories.make_workspace()
    factories.make_user(workspace=elsewhere, external_id="alice")
    _, other_key = factories.make_agent(elsewhere, "intruder")
    response = Caller(client, other_key).post(f"/answers/{answer_id}/feedback", {"value": "down"})
    assert response.status_code == 404
    assert response.json()["detail"] == "answer not found"
    assert AnswerRecord.objects.get(pk=answer_id).feedback == ""


def test_proposing_a_knowledge_fact_queues_it(api, user):
    response = api.post(
        "/knowledge/candidates",
        {"user": "alice", "statement": "Click and collect orders wait 7 days in store."},
    )
    assert response.status_code == 201
    assert response.json()["status"] == "pending"
    candidate = LearningCandidate.objects.get(pk=response.json()["id"])
    assert candidate.kind == "fact"


@pytest.mark.parametrize("payload", [{"user": "alice"}, {"user": "alice", "statement": " "}])
def test_a_knowledge_proposal_without_a_statement_is_422(api, user, payload):
    response = api.post("/knowledge/candidates", payload)
    assert response.status_code == 422
    assert not LearningCandidate.objects.exists()


def test_a_knowledge_proposal_for_another_workspaces_user_is_404(api):
    factories.make_user(workspace=factories.make_workspace(), external_id="dave")
    response = api.post("/knowledge/candidates", {"user": "dave", "statement": "Fact."})
    assert response.status_code == 404


def test_no_knowledge_fact_is_proposed_for_a_user_who_paused_memory(api, user):
    set_memory_paused(user=user, is_paused=True, actor=Actor.for_user(user.pk))
    response = api.post("/knowledge/candidates", {"user": "alice", "statement": "Fact."})
    assert (response.status_code, response.json()["code"]) == (409, "memory_paused")
    assert not LearningCandidate.objects.exists()


def test_no_knowledge_fact_is_proposed_in_a_mode_with_memory_off(api, user, work):
    set_mode_memory_off(user=user, mode=work, is_off=True, actor=Actor.for_user(user.pk))
    body = {"user": "alice", "mode": "work", "statement": "Fact."}
    response = api.post("/knowledge/candidates", body)
    assert (response.status_code, response.json()["code"]) == (409, "memory_off")
    assert not LearningCandidate.objects.exists()
    assert api.post("/knowledge/candidates", {**body, "mode": "personal"}).status_code == 201
