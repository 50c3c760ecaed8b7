"""Fixtures for the workspace graph: an agent's API caller, eager Celery, graph builders."""

from __future__ import annotations

from datetime import datetime
from uuid import uuid4

import pytest
from django.utils import timezone

from memoryhub.celery import app
from memoryhub.graph import Interaction, ItemRef, record_interaction
from tests import factories
from tests.api.conftest import Caller

HIGH = {"retrieval": 0.9, "policy": 1.0, "completeness": 0.9, "memory": 0.9}
LOW = {"retrieval": 0.1, "policy": 1.0, "completeness": 0.8, "memory": 0.3}


@pytest.fixture
def agent_and_key(workspace):
    return factories.make_agent(workspace, "assistant")


@pytest.fixture
def api(client, agent_and_key):
    return Caller(client, agent_and_key[1])


@pytest.fixture
def caller(client):
    return lambda key: Caller(client, key)


@pytest.fixture
def eager_celery():
    """Run tasks in-process when enqueued, through Celery's own machinery."""
    app.conf.task_always_eager = True
    try:
        yield app
    finally:
        app.conf.task_always_eager = False


@pytest.fixture
def answer_via_api(api, user, eager_celery, django_capture_on_commit_callbacks):
    """POST /answers as the agent and run what it enqueued on commit (the graph task)."""

    def post(question, answer, signals=None, *, owner="alice", **fields):
        body = {
            "user": owner,
            "question": question,
            "answer": answer,
            "signals": signals or HIGH,
            **fields,
        }
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post("/answers", body)
        assert response.status_code == 201, response.content
        return response.json()

    return post


def item(name, *, relation="searched_for", node_type="item", key=None):
    return ItemRef(node_type=node_type, key=key or name, name=name, relation=relation)


def interact(
    workspace,
    user,
    question,
    *,
    answer="Here is what I found.",
    composite=0.9,
    feedback="",
    items=(),
    at: datetime | None = None,
    now: datetime | None = None,
):
    """Record one interaction from plain values (no answer record behind it)."""
    return record_interaction(
        workspace=workspace,
        user=user,
        interaction=Interaction(
            answer_id=uuid4(),
            question=question,
            answer=answer,
            composite=composite,
            feedback=feedback,
            created_at=at or timezone.now(),
            items=tuple(items),
        ),
        now=now,
    )
