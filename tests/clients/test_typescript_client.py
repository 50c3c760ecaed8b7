"""clients/typescript: its types are generated from the current schema, and its node:test suite
passes against a live server (built with tsc from the sources first)."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from memoryhub.api.api import api
from memoryhub.models import ApiKey
from memoryhub.services.agents import key_owner
from memoryhub.services.request_slots import acquire_request_slot
from tests import factories

TS_CLIENT = Path(__file__).resolve().parents[2] / "clients" / "typescript"
STALE = "is stale: run `make clients-schema` and commit the result"


def _tool(name: str) -> str:
    path = TS_CLIENT / "node_modules" / ".bin" / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make setup` (npm ci in clients/typescript)")
    return str(path)


def _run(*args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(  # noqa: S603 - our own tools, no shell.
        args,
        cwd=TS_CLIENT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


def test_the_committed_schema_and_the_generated_types_are_current(tmp_path):
    committed = json.loads((TS_CLIENT / "openapi.json").read_text())
    assert committed == json.loads(json.dumps(api.get_openapi_schema())), f"openapi.json {STALE}"
    generated = tmp_path / "schema.ts"
    _run(
        _tool("openapi-typescript"),
        "openapi.json",
        "--default-non-nullable",
        "false",
        "--output",
        str(generated),
    )
    assert generated.read_text() == (TS_CLIENT / "src" / "schema.ts").read_text(), (
        f"src/schema.ts {STALE}"
    )


def test_the_node_suite_passes_against_a_live_server(live_server, transactional_db, settings):
    workspace = factories.make_workspace()
    agent, key = factories.make_agent(workspace, "assistant")
    factories.make_user(workspace=workspace, email="ts9@example.com", external_id="ts-9")
    _run(_tool("tsc"), "-p", "tsconfig.json")
    env = {"MEMORYHUB_URL": live_server.url, "MEMORYHUB_KEY": key}

    output = _run("node", "--test", "--test-concurrency=1", "test/client.test.mjs", env=env)
    assert "# fail 0" in output and "# skipped 0" in output, output

    # The owner's only request slot is taken, by a "request" whose lease ends in two seconds.
    settings.MEMORYHUB_MAX_CONCURRENT_REQUESTS = 1
    lease = django_settings.MEMORYHUB_REQUEST_SLOT_LEASE_SECONDS
    acquire_request_slot(
        key_owner(ApiKey.objects.get(agent=agent)),
        now=timezone.now() - timedelta(seconds=lease - 2),
    )
    output = _run("node", "--test", "test/retry.test.mjs", env={**env, "MEMORYHUB_SLOT_TAKEN": "1"})
    assert "# pass 1" in output and "# fail 0" in output, output
