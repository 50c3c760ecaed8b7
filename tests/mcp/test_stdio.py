"""`manage.py mcp_server --key …` over stdio, driven by the SDK's own client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from urllib.parse import quote

import anyio
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from mcp import Client, StdioServerParameters

from memoryhub.models import AuditEntry
from tests import factories
from tests.mcp.conftest import error_text, structured

ROOT = Path(__file__).resolve().parents[2]


def _test_database_url() -> str:
    # The child process must use this run's test database, where the fixtures committed data.
    db = connection.settings_dict
    credentials = quote(db["USER"]) + (":" + quote(db["PASSWORD"]) if db["PASSWORD"] else "")
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgresql://{credentials}@{port}/{quote(db['NAME'])}?host={quote(db['HOST'])}"


def _server(key: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[str(ROOT / "manage.py"), "mcp_server", "--key", key],
        env={**os.environ, "DATABASE_URL": _test_database_url()},
        cwd=str(ROOT),
    )


def test_the_stdio_server_answers_tools_for_its_key(world, embedder):
    factories.make_memory(
        world["alice"], factories.mode_of(world["alice"]), "Lives in Lyon", embedder=embedder
    )

    async def run():
        async with Client(_server(world["key"]), read_timeout_seconds=120) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            profile = await client.call_tool("get_profile", {"user": "alice"})
            stranger = await client.call_tool("get_profile", {"user": "nobody"})
            return tools, profile, stranger

    tools, profile, stranger = anyio.run(run)
    assert {"remember", "recall", "forget", "list_memories", "get_context"} <= tools
    assert [m["content"] for m in structured(profile)["facts"]] == ["Lives in Lyon"]
    assert error_text(stranger).startswith("not_found")
    entry = AuditEntry.objects.filter(action="profile.read").order_by("-id").first()
    assert (entry.channel, entry.actor_id) == ("mcp", str(world["agent"].pk))


def test_the_stdio_server_refuses_to_start_with_a_bad_key(db):
    with pytest.raises(CommandError, match="unknown or revoked"):
        call_command("mcp_server", key="mh_not-a-key")


def test_a_desktop_assistant_over_stdio_reaches_users_sessions_resources_and_the_prompt(world):
    async def run():
        async with Client(_server(world["key"]), read_timeout_seconds=120) as client:
            created = await client.call_tool("create_user", {"external_id": "frank"})
            remembered = await client.call_tool(
                "remember", {"user": "frank", "kind": "open_item", "content": "Book the ferry"}
            )
            started = structured(await client.call_tool("start_session", {"user": "frank"}))
            said = await client.call_tool(
                "add_message",
                {"session_id": started["id"], "role": "user", "content": "I like window seats"},
            )
            ended = await client.call_tool("end_session", {"session_id": started["id"]})
            base = "memoryhub://users/frank/modes/personal"
            open_items = await client.read_resource(f"{base}/open-items")
            sessions = await client.read_resource(f"{base}/sessions")
            prompt = await client.get_prompt("context", {"user": "frank", "message": "Trip?"})
            return created, remembered, said, ended, open_items, sessions, prompt

    created, remembered, said, ended, open_items, sessions, prompt = anyio.run(run)
    assert structured(created)["external_id"] == "frank"
    assert structured(said)["seq"] == 1
    assert structured(ended)["extraction_status"] == "queued"
    items = json.loads(open_items.contents[0].text)["items"]
    assert [m["id"] for m in items] == [structured(remembered)["id"]]
    (session,) = json.loads(sessions.contents[0].text)["sessions"]
    assert session["id"] == structured(ended)["id"]
    assert "Book the ferry" in prompt.messages[0].content.text
