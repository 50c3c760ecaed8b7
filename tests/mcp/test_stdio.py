"""`manage.py mcp_server --key …` over stdio, driven by the SDK's own client."""

from __future__ import annotations

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
