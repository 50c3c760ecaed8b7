"""clients/python (memoryhub_client) against the OpenAPI schema and a live server."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import types
import typing
from pathlib import Path

import httpx
import pytest
from memoryhub_client import (
    OPERATIONS,
    AsyncMemoryHub,
    InvalidInputError,
    MemoryHub,
    NotAuthenticatedError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    RetryPolicy,
    TransportError,
    operations,
    responses,
)

from memoryhub.api.api import api
from memoryhub.models import ApiKey
from memoryhub.services.agents import key_owner
from memoryhub.services.request_slots import acquire_request_slot, release_request_slot
from tests import factories

PREFIX = "/api/v1"


def _schema_operations():
    schema = api.get_openapi_schema()
    components = schema["components"]["schemas"]
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            names = {p["name"] for p in operation.get("parameters", [])}
            content = operation.get("requestBody", {}).get("content", {})
            form = content.get("multipart/form-data")
            if form is not None:  # A file upload: its fields are the method's parameters.
                ref = form["schema"].get("$ref")
                form_schema = components[ref.rsplit("/", 1)[1]] if ref else form["schema"]
                names |= set(form_schema.get("properties", {}))
            body = content.get("application/json")
            if body is not None:
                ref = body["schema"].get("$ref")
                if ref is None:
                    names.add("data")  # A free-form JSON object: the method's `data`.
                else:
                    properties = components[ref.rsplit("/", 1)[1]]["properties"]
                    names |= {n for n, p in properties.items() if not p.get("deprecated")}
            yield method.upper(), path.removeprefix(PREFIX), names


def test_the_client_and_the_openapi_schema_agree_on_every_operation():
    schema_operations = {(method, path): names for method, path, names in _schema_operations()}
    assert set(OPERATIONS.values()) == set(schema_operations), "an operation is missing"
    for name, route in OPERATIONS.items():
        for client in (MemoryHub, AsyncMemoryHub):
            assert callable(getattr(client, name)), (client, name)
        parameters = set(inspect.signature(getattr(MemoryHub, name)).parameters) - {"self"}
        assert parameters == schema_operations[route], name


def _schema_shape(schema):
    """A JSON schema as the Python type it reads as ("list[MemoryOut]", "str | None")."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[1]
    if "anyOf" in schema:
        return " | ".join(sorted(_schema_shape(option) for option in schema["anyOf"]))
    kind = schema["type"]
    if kind == "array":
        return f"list[{_schema_shape(schema['items'])}]"
    if kind == "object":
        values = schema.get("additionalProperties", True)
        return f"dict[str, {'Any' if values is True else _schema_shape(values)}]"
    names = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
    return {**names, "null": "None"}[kind]


def _type_shape(annotation):
    """A Python annotation in the same notation."""
    if annotation is type(None):
        return "None"
    if annotation is typing.Any:
        return "Any"
    if typing.is_typeddict(annotation):
        return annotation.__name__
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(sorted(_type_shape(a) for a in arguments))
    if origin is list:
        return f"list[{_type_shape(arguments[0])}]"
    if origin is dict:
        return f"dict[{_type_shape(arguments[0])}, {_type_shape(arguments[1])}]"
    return annotation.__name__


def _answer_shape(operation):
    """The success answers of an OpenAPI operation, as one type."""
    answers = {
        _schema_shape(answer["content"]["application/json"]["schema"])
        for status, answer in operation["responses"].items()
        if 200 <= int(status) < 300
    }
    return " | ".join(sorted(answers))


def test_every_answer_type_of_the_client_matches_its_response_schema():
    schema = api.get_openapi_schema()
    components = schema["components"]["schemas"]
    for name, (method, path) in OPERATIONS.items():
        operation = schema["paths"][PREFIX + path][method.lower()]
        (answer,) = typing.get_args(typing.get_type_hints(getattr(operations, name))["return"])
        assert _type_shape(answer) == _answer_shape(operation), name
        # Each TypedDict has exactly its schema's fields, of the same types (nested ones too).
    typed_dicts = {n: t for n, t in vars(responses).items() if typing.is_typeddict(t)}
    for name, typed_dict in typed_dicts.items():
        fields = {f: _type_shape(t) for f, t in typing.get_type_hints(typed_dict).items()}
        properties = components[name]["properties"]
        assert fields == {f: _schema_shape(p) for f, p in properties.items()}, name
    # Every schema an answer refers to, however deep, has its TypedDict, and no other.
    answers = [
        answer["content"]["application/json"]["schema"]
        for methods in schema["paths"].values()
        for operation in methods.values()
        for status, answer in operation["responses"].items()
        if 200 <= int(status) < 300
    ]
    referred, to_read = set(), [json.dumps(answer) for answer in answers]
    while to_read:
        for name in re.findall(r'"#/components/schemas/(\w+)"', to_read.pop()):
            if name not in referred:
                referred.add(name)
                to_read.append(json.dumps(components[name]))
    assert referred == set(typed_dicts)


def test_the_answer_check_notices_a_field_of_another_type():
    # The check above compares shapes; a wrong type or a missing field must change them.
    memory = api.get_openapi_schema()["components"]["schemas"]["MemoryOut"]["properties"]
    assert _schema_shape(memory["occurred_at"]) == "None | str"
    assert _type_shape(str | None) == "None | str"
    assert _type_shape(int | None) != _schema_shape(memory["occurred_at"])


@pytest.fixture
def agent_key(transactional_db):
    return factories.make_agent(factories.make_workspace(), "assistant")[1]


@pytest.fixture
def hub(live_server, agent_key):
    with MemoryHub(live_server.url, agent_key) as client:
        yield client


def test_an_agent_loop_runs_through_the_sync_client(hub, embedder):
    assert hub.create_user("u-1", display_name="Dana")["external_id"] == "u-1"
    peanuts = hub.remember("u-1", "Dana is allergic to peanuts", importance="high")
    hub.remember_many(
        "u-1", [{"kind": "preference", "content": f"Dana likes tea {n}"} for n in range(4)]
    )
    every = list(hub.iter_memories("u-1", page_size=2))
    assert len(every) == 5 and every[-1]["id"] == peanuts["id"]
    found = hub.search("u-1", "what food is dangerous for Dana?", k=1)["results"]
    assert [m["id"] for m in found] == [peanuts["id"]]
    session = hub.start_session("u-1")
    assert hub.add_message(session["id"], "user", "Suggest a snack?")["seq"] == 1
    context = hub.get_context("u-1", "Suggest a snack?", session=session["id"])
    assert any("peanuts" in block["text"] for block in context["blocks"])
    assert hub.end_session(session["id"])["extraction_status"] == "queued"
    answer = hub.report_answer(
        "u-1",
        question="Snack?",
        answer="Rice crackers",
        signals={"retrieval": 0.9, "policy": 1, "completeness": 0.9, "memory": 0.9},
    )
    assert hub.answer_feedback(answer["id"], "down")["captured"] is True
    assert hub.forget("u-1", memory_ids=[peanuts["id"]])["forgotten"] == 1


def test_errors_are_typed_and_carry_the_api_code(hub, live_server):
    with pytest.raises(NotFoundError) as not_found:
        hub.get_profile("nobody")
    assert (not_found.value.status, not_found.value.code) == (404, "not_found")
    with pytest.raises(InvalidInputError) as bad_kind:
        hub.remember("nobody", "x", kind="wish")  # type: ignore[arg-type]
    assert bad_kind.value.code == "invalid_input"
    assert bad_kind.value.errors[0]["loc"][-1] == "kind"
    hub.create_user("u-2")
    with pytest.raises(PermissionDeniedError) as forbidden:
        hub.remember("u-2", "x", source="user")
    assert forbidden.value.code == "forbidden"
    with (
        pytest.raises(NotAuthenticatedError) as unauthenticated,
        MemoryHub(live_server.url, "mh_wrong") as stranger,
    ):
        stranger.get_profile("nobody")
    assert unauthenticated.value.code == "not_authenticated"


class _LosesTheFirstAnswer(httpx.HTTPTransport):
    """Sends every request, but drops the answer to the first write on each path but /users,
    as a broken connection would after the server did the work."""

    def __init__(self):
        super().__init__()
        self.bodies = []
        self.paths = set()

    def handle_request(self, request):
        response = super().handle_request(request)
        path = request.url.path
        if request.method == "POST" and not path.endswith("/users"):
            self.bodies.append(request.read())
            if path not in self.paths:
                self.paths.add(path)
                response.read()
                raise httpx.ReadError("connection reset", request=request)
        return response


def test_a_write_whose_answer_was_lost_is_retried_with_its_generated_idempotency_key(
    live_server, agent_key, embedder
):
    transport = _LosesTheFirstAnswer()
    with MemoryHub(live_server.url, agent_key, transport=transport, sleep=lambda _: None) as hub:
        hub.create_user("u-1")
        memory = hub.remember("u-1", "Dana lives in Lyon")
        assert [m["id"] for m in hub.iter_memories("u-1")] == [memory["id"]]
        lost, retried = (json.loads(body) for body in transport.bodies)
        assert lost["idempotency_key"] == retried["idempotency_key"]
        assert lost["idempotency_key"].startswith("mhc-")
        # Without an idempotency key the client cannot know whether the server did it: it does
        # not try again, it says so.
        with pytest.raises(TransportError):
            hub.start_session("u-1")


def _one_slot_taken(agent_key, settings):
    settings.MEMORYHUB_MAX_CONCURRENT_REQUESTS = 1
    return acquire_request_slot(key_owner(ApiKey.objects.get(agent__isnull=False)))


def test_a_429_is_retried_after_the_retry_after_the_server_sent(hub, agent_key, settings):
    hub.create_user("u-1")
    slot = _one_slot_taken(agent_key, settings)
    waits = []

    def sleep(seconds):
        waits.append(seconds)
        release_request_slot(slot)

    hub._sleep = sleep
    assert hub.get_profile("u-1")["facts"] == []
    assert waits == [1.0]
    slot = _one_slot_taken(agent_key, settings)
    hub.retry = RetryPolicy(attempts=1)
    with pytest.raises(RateLimitedError) as refused:
        hub.get_profile("u-1")
    assert (refused.value.code, refused.value.retry_after) == ("too_many_concurrent_requests", 1.0)
    release_request_slot(slot)


def test_a_quota_reached_is_raised_at_once_not_retried(hub, settings):
    # A 429 without Retry-After does not pass in seconds: waiting would only delay the error.
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER = 1
    hub.create_user("u-1")
    hub.remember("u-1", "Likes tea")
    waits = []
    hub._sleep = waits.append
    with pytest.raises(RateLimitedError) as refused:
        hub.remember("u-1", "Likes coffee")
    assert (refused.value.code, refused.value.retry_after, waits) == ("quota_exceeded", None, [])


def test_the_async_client_pages_retries_and_raises_typed_errors(live_server, agent_key, settings):
    async def run():
        async with AsyncMemoryHub(live_server.url, agent_key) as hub:
            await hub.create_user("u-1")
            written = await hub.remember_many(
                "u-1", [{"kind": "fact", "content": f"Fact number {n}"} for n in range(3)]
            )
            paged = [item["id"] async for item in hub.iter_memories("u-1", page_size=2)]
            slot = await asyncio.to_thread(_one_slot_taken, agent_key, settings)
            waits = []

            async def sleep(seconds):
                waits.append(seconds)
                await asyncio.to_thread(release_request_slot, slot)

            hub._sleep = sleep
            user = await hub.get_user("u-1")
            with pytest.raises(NotFoundError) as missing:
                await hub.get_user("nobody")
            return written, paged, waits, user, missing.value

    written, paged, waits, user, missing = asyncio.run(run())
    assert sorted(paged) == sorted(m["id"] for m in written["items"])
    assert waits == [1.0]
    assert user["external_id"] == "u-1"
    assert missing.code == "not_found"


TYPED_USE = """
from memoryhub_client import AsyncMemoryHub, MemoryHub


def count(hub: MemoryHub) -> int:
    return hub.remember("alice", "Likes tea")["evidence_count"]


async def cursor(hub: AsyncMemoryHub) -> str | None:
    return (await hub.list_memories("alice"))["next_cursor"]


def wrong(hub: MemoryHub) -> str:
    return hub.get_profile("alice")["evidence_count"]
"""


def test_a_type_checker_sees_the_answers_fields_through_both_clients(tmp_path, monkeypatch):
    from mypy import api as mypy

    # The package these tests import (an editable install is invisible to mypy).
    package_root = Path(inspect.getfile(MemoryHub)).parent.parent
    monkeypatch.setenv("MYPYPATH", str(package_root))
    (tmp_path / "use.py").write_text(TYPED_USE)
    report, _, _ = mypy.run(
        ["--strict", "--no-incremental", "--config-file=", str(tmp_path / "use.py")]
    )
    # Only the wrong use is reported: ProfileOut has no evidence_count.
    errors = [line for line in report.splitlines() if ": error:" in line]
    assert errors, report
    assert all("use.py:14:" in line for line in errors), report
    assert any('"evidence_count" is not a valid TypedDict key' in line for line in errors)


def test_the_client_uploads_a_file_to_import(hub):
    from memoryhub.models import Agent, AgentGrant, AgentPermission, User

    importer = User.objects.get(pk=hub.create_user("importer")["id"])
    # The user lets the agent import (dashboard, Agents): the workspace's only agent.
    agent = Agent.objects.get(workspace_id=importer.workspace_id)
    AgentGrant.objects.create(user=importer, agent=agent, permission=AgentPermission.IMPORT)
    document = {"results": [{"id": "m1", "memory": "Owns a red bicycle"}]}
    started = hub.import_file(json.dumps(document).encode(), user="importer", format="mem0")
    assert (started["format"], started["total"], started["status"]) == ("mem0", 1, "queued")
    assert hub.get_import(started["id"], user="importer")["id"] == started["id"]
