"""Fixtures for the review app: reviewers with TOTP, answers reported through the service."""

from __future__ import annotations

import pytest
from allauth.mfa.models import Authenticator
from django.contrib.auth.models import Group

from accounts.roles import REVIEWERS_GROUP
from memoryhub.actors import Actor
from memoryhub.knowledge import answers as services
from memoryhub.models import ActorType, Channel
from tests import factories

HIGH = {"retrieval": 0.9, "policy": 1.0, "completeness": 0.9, "memory": 0.9}
LOW_RETRIEVAL = {"retrieval": 0.1, "policy": 1.0, "completeness": 0.8, "memory": 0.3}


def make_reviewer(workspace, *, has_totp: bool = True):
    reviewer = factories.make_user(workspace=workspace)
    group, _ = Group.objects.get_or_create(name=REVIEWERS_GROUP)
    reviewer.groups.add(group)
    if has_totp:
        Authenticator.objects.create(
            user=reviewer, type=Authenticator.Type.TOTP, data={"secret": "test"}
        )
    return reviewer


@pytest.fixture
def reviewer(workspace):
    return make_reviewer(workspace)


@pytest.fixture
def reviewer_actor(reviewer) -> Actor:
    return Actor(ActorType.REVIEWER, str(reviewer.pk), Channel.UI, label="reviewer")


@pytest.fixture
def reviewer_client(client, reviewer):
    client.force_login(reviewer)
    return client


@pytest.fixture
def agent_actor() -> Actor:
    return Actor(ActorType.AGENT, "test-agent", Channel.API, label="test agent")


@pytest.fixture
def report(user, personal, embedder, agent_actor):
    """Report an answer of `user` in the personal mode through the real service."""

    def make(question, answer, signals=None, *, owner=None, mode=None, **fields):
        return services.report_answer(
            user=owner or user,
            mode=mode or (personal if owner is None else factories.mode_of(owner)),
            question=question,
            answer=answer,
            signals=signals or LOW_RETRIEVAL,
            actor=agent_actor,
            embedder=embedder,
            **fields,
        )

    return make
