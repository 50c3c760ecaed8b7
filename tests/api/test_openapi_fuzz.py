"""Schemathesis against /api/v1/openapi.json: no 500, no answer outside the documented schema."""

from __future__ import annotations

import contextlib

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests import factories

EXAMPLES_PER_OPERATION = 3


def _aim_at(case, external_id):
    # Most requests should name a real user, so they get past the scope check.
    for part in (case.query, case.body):
        if isinstance(part, dict) and isinstance(part.get("user"), str):
            part["user"] = external_id


def _fuzz(operation, mode, external_id):
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case):
        if mode == GenerationMode.POSITIVE:
            _aim_at(case, external_id)
        # Positive-data acceptance is left out: some schema-valid input is still refused on
        # purpose (a period whose start follows its end, an invalid cursor, oversized text).
        case.call_and_validate(excluded_checks=[schemathesis.checks.positive_data_acceptance])

    # Unsatisfiable: no invalid value exists for this operation (e.g. a free-form path string).
    with contextlib.suppress(Unsatisfiable):
        run()


def test_the_api_answers_generated_requests_within_its_schema(
    live_server, transactional_db, embedder
):
    workspace = factories.make_workspace()
    user = factories.make_user(workspace=workspace, external_id="alice")
    factories.make_memory(user, factories.mode_of(user), "Lives in Lyon", embedder=embedder)
    _, key = factories.make_agent(workspace, "fuzzer")
    config = schemathesis.Config.from_dict({"headers": {"Authorization": f"Bearer {key}"}})
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/openapi.json", config=config)
    failures = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                _fuzz(operation, mode, "alice")
            except (Exception, BaseExceptionGroup) as exc:  # Collect all: one report for the API.
                failures.append(f"{operation.label} [{mode.value}]: {exc}")
    assert not failures, "\n\n".join(failures)


def test_the_review_routes_answer_a_reviewer_keys_generated_requests_within_their_schema(
    live_server, transactional_db, embedder
):
    from memoryhub.actors import Actor
    from memoryhub.knowledge.answers import report_answer
    from memoryhub.services.agents import create_review_key
    from tests.review.conftest import LOW_RETRIEVAL, make_reviewer

    workspace = factories.make_workspace()
    user = factories.make_user(workspace=workspace, external_id="alice")
    report_answer(
        user=user,
        mode=factories.mode_of(user),
        question="Which courier delivers to Corsica?",
        answer="No idea.",
        signals=LOW_RETRIEVAL,
        actor=Actor.system("fuzz"),
        embedder=embedder,
    )
    reviewer = make_reviewer(workspace)
    key = create_review_key(reviewer=reviewer, name="fuzz", actor=Actor.system("fuzz")).raw_key
    config = schemathesis.Config.from_dict({"headers": {"Authorization": f"Bearer {key}"}})
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/openapi.json", config=config)
    operations = [
        result.ok()
        for result in schema.get_all_operations()
        if result.ok().path.startswith("/api/v1/review/")
    ]
    assert len(operations) == 6
    failures = []
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                _fuzz(operation, mode, "alice")
            except (Exception, BaseExceptionGroup) as exc:
                failures.append(f"{operation.label} [{mode.value}]: {exc}")
    assert not failures, "\n\n".join(failures)
