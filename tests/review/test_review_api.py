"""Review over the agent API with a reviewer key: list, read, approve, reject (review/api.py)."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from accounts.roles import REVIEWERS_GROUP
from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import subject_pseudonym
from memoryhub.knowledge import answers as knowledge_answers
from memoryhub.models import (
    ActorType,
    ApiKey,
    AuditEntry,
    KnowledgeDocument,
    LearningCandidate,
    Memory,
)
from memoryhub.services.agents import create_personal_key, create_review_key, revoke_review_key
from memoryhub.services.forget import delete_account
from memoryhub.services.preferences import set_memory_paused, set_mode_memory_off
from review.models import ThresholdChange
from tests import factories
from tests.api.conftest import Caller

from .conftest import make_reviewer

QUESTIONS = (
    "Can you send the Lyon store hours to alice@example.com?",
    "What is the refund policy for damaged parcels?",
    "Which courier delivers to Corsica?",
)


def mint(reviewer) -> str:
    return create_review_key(
        reviewer=reviewer, name="bot", actor=Actor.for_user(reviewer.pk)
    ).raw_key


@pytest.fixture
def reviewer_api(client, reviewer):
    return Caller(client, mint(reviewer))


@pytest.fixture
def waiting(report, user, personal, agent_actor, embedder):
    """Three captured answers and one proposed fact, all waiting."""
    answers = [report(question, "I could not find it.").candidate for question in QUESTIONS]
    fact = knowledge_answers.propose_knowledge_candidate(
        user=user,
        mode=personal,
        statement="Parcels damaged in transit are replaced free of charge.",
        actor=agent_actor,
        embedder=embedder,
    )
    return answers, fact


def test_a_reviewer_key_lists_waiting_answers_and_facts_page_by_page(
    reviewer_api, waiting, reviewer, user
):
    answers, fact = waiting
    first = reviewer_api.get("/review/candidates", per_page=2)
    assert first.status_code == 200
    body = first.json()
    assert (body["total"], body["page"], body["per_page"], body["has_next"]) == (4, 1, 2, True)
    assert (body["waiting_answers"], body["waiting_facts"]) == (3, 1)
    second = reviewer_api.get("/review/candidates", per_page=2, page=2).json()
    assert second["has_next"] is False
    listed = {item["id"] for item in body["items"] + second["items"]}
    assert listed == {str(c.pk) for c in [*answers, fact]}
    # Scrubbed text only: the user's address never reaches the reviewer.
    assert "alice@example.com" not in str(body) + str(second)
    facts = reviewer_api.get("/review/candidates", kind="fact").json()
    assert [item["id"] for item in facts["items"]] == [str(fact.pk)]
    assert facts["items"][0]["kind"] == "fact"
    # Every read is audited for the user, as the reviewer, over the API.
    views = AuditEntry.objects.filter(
        action=AuditAction.REVIEW_QUEUE_VIEW, subject=subject_pseudonym(user.pk)
    )
    assert views.count() == 3
    assert {(e.actor_type, e.actor_id, e.channel) for e in views} == {
        (ActorType.REVIEWER, str(reviewer.pk), "api")
    }


def test_reading_one_candidate_and_a_missing_one(reviewer_api, waiting):
    answers, _ = waiting
    response = reviewer_api.get(f"/review/candidates/{answers[0].pk}")
    assert response.status_code == 200
    assert response.json()["status"] == "pending"
    missing = reviewer_api.get(f"/review/candidates/{uuid.uuid4()}")
    assert (missing.status_code, missing.json()["code"]) == (404, "not_found")


def test_approving_over_the_api_publishes_and_tunes_the_threshold_like_the_page(
    reviewer_api, waiting, workspace, reviewer
):
    workspace.review_window = 1
    workspace.save(update_fields=["review_window"])
    answers, _ = waiting
    response = reviewer_api.post(
        f"/review/candidates/{answers[1].pk}/approve",
        {"answer": "Damaged parcels are refunded within five days."},
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "approved"
    document = KnowledgeDocument.objects.get(pk=body["document_id"])
    assert "five days" in document.body and document.created_by == reviewer
    # One window of one approval closed: an approval rate of 1 lowers the threshold.
    change = ThresholdChange.objects.get(workspace=workspace)
    assert change.approvals == 1 and body["threshold"] == change.threshold < 0.6
    entry = AuditEntry.objects.get(action=AuditAction.REVIEW_CANDIDATE_APPROVE)
    assert (entry.actor_type, entry.actor_id, entry.channel) == (
        ActorType.REVIEWER,
        str(reviewer.pk),
        "api",
    )
    again = reviewer_api.post(f"/review/candidates/{answers[1].pk}/approve", {})
    assert (again.status_code, again.json()["code"]) == (409, "conflict")
    assert KnowledgeDocument.objects.count() == 1


def test_rejecting_needs_a_reason_and_a_decided_candidate_is_409(reviewer_api, waiting):
    answers, _ = waiting
    path = f"/review/candidates/{answers[0].pk}/reject"
    for body in ({}, {"reason": ""}, {"reason": "   "}, {"reason": "no\x00"}):
        response = reviewer_api.post(path, body)
        assert (response.status_code, response.json()["code"]) == (422, "invalid_input"), body
    response = reviewer_api.post(path, {"reason": "Not a question for the knowledge base."})
    assert response.status_code == 200
    assert response.json() == {
        "candidate_id": str(answers[0].pk),
        "status": "rejected",
        "document_id": None,
        "threshold": 0.6,
    }
    candidate = LearningCandidate.objects.get(pk=answers[0].pk)
    assert candidate.status == LearningCandidate.Status.REJECTED
    again = reviewer_api.post(path, {"reason": "twice"})
    assert (again.status_code, again.json()["code"]) == (409, "conflict")
    missing = reviewer_api.post(f"/review/candidates/{uuid.uuid4()}/reject", {"reason": "x"})
    assert missing.status_code == 404


def test_another_workspaces_reviewer_finds_nothing(client, waiting):
    answers, _ = waiting
    stranger = Caller(client, mint(make_reviewer(factories.make_workspace())))
    assert stranger.get("/review/candidates").json()["items"] == []
    for response in (
        stranger.get(f"/review/candidates/{answers[0].pk}"),
        stranger.post(f"/review/candidates/{answers[0].pk}/reject", {"reason": "x"}),
        stranger.post(f"/review/candidates/{answers[0].pk}/approve", {}),
    ):
        assert (response.status_code, response.json()["code"]) == (404, "not_found")
    assert LearningCandidate.objects.get(pk=answers[0].pk).status == "pending"


def test_only_a_current_reviewers_reviewer_key_opens_the_review_routes(
    client, workspace, reviewer, waiting, user
):
    _, agent_key = factories.make_agent(workspace, "assistant")
    personal_key = create_personal_key(user=reviewer, name="mine").raw_key
    for key in (agent_key, personal_key):
        response = Caller(client, key).get("/review/candidates")
        assert (response.status_code, response.json()["code"]) == (403, "forbidden")
    assert Caller(client, None).get("/review/candidates").status_code == 401

    key = mint(reviewer)
    api = Caller(client, key)
    assert api.get("/review/candidates").status_code == 200
    # A reviewer key reaches no one's memory, its owner's included.
    for response in (api.get("/profile"), api.get("/memories", user="me")):
        assert (response.status_code, response.json()["code"]) == (403, "forbidden")

    # Demoted: the key they minted stops working at once.
    reviewer.groups.remove(Group.objects.get(name=REVIEWERS_GROUP))
    assert api.get("/review/candidates").status_code == 403
    reviewer.groups.add(Group.objects.get(name=REVIEWERS_GROUP))
    assert api.get("/review/candidates").status_code == 200

    revoked = revoke_review_key(
        reviewer=reviewer,
        key_id=ApiKey.objects.get(is_review_key=True, user=reviewer).pk,
        actor=Actor.for_user(reviewer.pk),
    )
    assert revoked.revoked_at is not None
    assert api.get("/review/candidates").status_code == 401
    assert AuditEntry.objects.filter(action=AuditAction.REVIEW_KEY_REVOKE).count() == 1


def test_a_reviewer_without_totp_cannot_use_a_reviewer_key(client, workspace, waiting):
    reviewer = make_reviewer(workspace, has_totp=False)
    response = Caller(client, mint(reviewer)).get("/review/candidates")
    assert (response.status_code, response.json()["code"]) == (403, "forbidden")


def test_a_reviewer_mints_a_key_after_typing_the_password_again(client, reviewer):
    client.force_login(reviewer)
    url = reverse("review:settings")
    response = client.post(url, {"name": "review bot"})
    assert response.status_code == 302 and "reauthenticate" in response["Location"]
    assert not ApiKey.objects.filter(is_review_key=True).exists()

    assert (
        client.post(
            "/accounts/reauthenticate/", {"password": "correct horse battery staple"}
        ).status_code
        == 302
    )
    response = client.post(url, {"name": "review bot"})
    assert response.status_code == 302
    page = client.get(url)
    key = page.context["new_key"]
    assert key.startswith("mh_") and "no-store" in page["Cache-Control"]
    assert client.get(url).context["new_key"] is None  # Shown once.
    api_key = ApiKey.objects.get(is_review_key=True)
    assert (api_key.user, api_key.name) == (reviewer, "review bot")
    assert AuditEntry.objects.filter(action=AuditAction.REVIEW_KEY_CREATE).count() == 1
    # The dashboard's personal keys do not list it; the review settings do.
    assert api_key not in client.get(reverse("dashboard:keys")).context["keys"]
    assert [k.pk for k in page.context["keys"]] == [api_key.pk]
    assert Caller(client, key).get("/review/candidates").status_code == 200


def test_end_users_cannot_open_the_reviewer_settings(client, user):
    client.force_login(user)
    assert client.get(reverse("review:settings")).status_code == 403
    assert client.post(reverse("review:digest"), {"is_on": "1"}).status_code == 403


def test_answering_for_the_user_respects_their_pause_and_memory_off(
    reviewer_api, waiting, user, personal
):
    answers, fact = waiting
    path = f"/review/candidates/{answers[2].pk}/answer-for-user"
    body = {"answer": "Chronopost delivers to Corsica."}
    set_memory_paused(user=user, is_paused=True, actor=Actor.for_user(user.pk))
    paused = reviewer_api.post(path, body)
    assert (paused.status_code, paused.json()["code"]) == (409, "memory_paused")
    set_memory_paused(user=user, is_paused=False, actor=Actor.for_user(user.pk))
    set_mode_memory_off(user=user, mode=personal, is_off=True, actor=Actor.for_user(user.pk))
    off = reviewer_api.post(f"/review/candidates/{answers[2].pk}/needs-user")
    assert (off.status_code, off.json()["code"]) == (409, "memory_off")
    assert LearningCandidate.objects.get(pk=answers[2].pk).status == "pending"
    assert not Memory.objects.for_owner(user=user, mode=personal).exists()

    set_mode_memory_off(user=user, mode=personal, is_off=False, actor=Actor.for_user(user.pk))
    response = reviewer_api.post(path, body)
    assert response.status_code == 200 and response.json()["status"] == "answered"
    # It waits in the user's memory as a candidate for them to confirm.
    memory = Memory.objects.for_owner(user=user, mode=personal).get()
    assert (memory.status, memory.source) == ("candidate", "reviewer")
    assert reviewer_api.post(path, body).status_code == 409

    needs = reviewer_api.post(f"/review/candidates/{answers[0].pk}/needs-user")
    assert needs.status_code == 200 and needs.json()["status"] == "needs_user"
    # A proposed fact is the workspace's, not a question of the user's.
    refused = reviewer_api.post(f"/review/candidates/{fact.pk}/needs-user")
    assert (refused.status_code, refused.json()["code"]) == (422, "invalid_input")
    empty = reviewer_api.post(f"/review/candidates/{answers[1].pk}/answer-for-user", {"answer": ""})
    assert empty.status_code == 422


def test_a_deleted_users_candidates_are_gone_for_the_api_too(reviewer_api, waiting, user):
    answers, _ = waiting
    delete_account(user=user, actor=Actor.for_user(user.pk))
    assert reviewer_api.get("/review/candidates").json()["items"] == []
    response = reviewer_api.post(f"/review/candidates/{answers[0].pk}/approve", {})
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_every_review_route_and_field_is_described_in_the_openapi_schema(client):
    schema = client.get("/api/v1/openapi.json").json()
    components = schema["components"]["schemas"]
    review = {p: ops for p, ops in schema["paths"].items() if p.startswith("/api/v1/review/")}
    assert len([o for ops in review.values() for o in ops]) == 6
    refs = set()
    for ops in review.values():
        for operation in ops.values():
            assert operation["summary"] and operation["description"]
            assert all(p.get("description") for p in operation.get("parameters", []))
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                refs.add(body["schema"]["$ref"])
            refs.add(operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"])
    names = {ref.rsplit("/", 1)[1] for ref in refs} | {"CandidateOut"}
    for name in names:
        for field, spec in components[name]["properties"].items():
            assert spec.get("description"), (name, field)


def test_a_reviewer_key_is_refused_by_the_mcp_scope_and_revoked_with_a_new_password(reviewer):
    from memoryhub.api.auth import scope_for_key
    from memoryhub.errors import PermissionDeniedError
    from memoryhub.models import Channel as KeyChannel
    from memoryhub.services.agents import revoke_personal_keys

    mint(reviewer)
    api_key = ApiKey.objects.get(user=reviewer, is_review_key=True)
    with pytest.raises(PermissionDeniedError):
        scope_for_key(api_key, "me", channel=KeyChannel.MCP)
    revoked = revoke_personal_keys(user=reviewer, actor=Actor.for_user(reviewer.pk))
    assert [key.pk for key in revoked] == [api_key.pk]
