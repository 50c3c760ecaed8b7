"""The MCP tools, in process: same services, same scope rules, audited with channel "mcp"."""

from __future__ import annotations

import anyio
from mcp import Client

from memoryhub.api.auth import authenticate_key
from memoryhub.audit.log import mode_pseudonym
from memoryhub.mcp.server import Caller, build_server
from memoryhub.models import AgentBlock, AuditEntry
from memoryhub.services.agents import revoke_key
from tests import factories
from tests.mcp.conftest import error_text, structured


def _server(key):
    return build_server(lambda ctx: Caller(api_key=authenticate_key(key), client_ip="10.0.0.7"))


def _call(key, *calls):
    async def run():
        async with Client(_server(key)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(run)


def test_the_server_lists_every_tool(world):
    async def run():
        async with Client(_server(world["key"])) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert {"remember", "forget", "list_memories", "get_profile", "list_open_items"} <= anyio.run(
        run
    )


def test_remember_then_list_then_profile_then_forget(world):
    remembered, listed, profile, open_items = _call(
        world["key"],
        ("remember", {"user": "alice", "kind": "fact", "content": "Lives in Lyon"}),
        ("list_memories", {"user": "alice"}),
        ("get_profile", {"user": "alice"}),
        ("list_open_items", {"user": "alice"}),
    )
    memory = structured(remembered)
    assert memory["content"] == "Lives in Lyon"
    assert memory["confidence"] == "medium"
    assert [m["id"] for m in structured(listed)["items"]] == [memory["id"]]
    assert [m["content"] for m in structured(profile)["facts"]] == ["Lives in Lyon"]
    assert structured(open_items)["items"] == []
    (forgotten,) = _call(world["key"], ("forget", {"user": "alice", "memory_ids": [memory["id"]]}))
    assert structured(forgotten)["forgotten"] == 1
    (listed,) = _call(world["key"], ("list_memories", {"user": "alice"}))
    assert structured(listed)["items"] == []


def test_tool_calls_are_audited_with_the_mcp_channel_and_the_agent(world):
    _call(world["key"], ("get_profile", {"user": "alice", "mode": "work"}))
    entry = AuditEntry.objects.order_by("-id").first()
    assert (entry.action, entry.channel) == ("profile.read", "mcp")
    assert entry.mode == mode_pseudonym(entry.subject, "work")
    assert entry.actor_id == str(world["agent"].pk)
    assert entry.client_ip == "10.0.0.7"


def test_scope_rules_apply_to_tools(world):
    stranger = factories.make_user(workspace=factories.make_workspace(), external_id="carol")
    AgentBlock.objects.create(user=world["bob"], agent=world["agent"])
    other_workspace, blocked, unknown_mode = _call(
        world["key"],
        ("get_profile", {"user": str(stranger.pk)}),
        ("get_profile", {"user": "bob"}),
        ("get_profile", {"user": "alice", "mode": "hobbies"}),
    )
    assert error_text(other_workspace).startswith("not_found")
    assert error_text(blocked).startswith("agent_blocked")
    assert error_text(unknown_mode).startswith("not_found")


def test_bad_tool_input_is_an_error_result_not_a_crash(world, settings):
    settings.MEMORYHUB_MAX_CONTENT_BYTES = 20
    unknown_kind, too_big, nul, empty_forget = _call(
        world["key"],
        ("remember", {"user": "alice", "kind": "wish", "content": "x"}),
        ("remember", {"user": "alice", "kind": "fact", "content": "x" * 21}),
        ("remember", {"user": "alice", "kind": "fact", "content": "a\u0000b"}),
        ("forget", {"user": "alice"}),
    )
    assert unknown_kind.is_error
    assert error_text(too_big).startswith("content_too_large")
    assert nul.is_error
    assert error_text(empty_forget).startswith("invalid_input")


def test_a_paused_user_refuses_remember_but_not_reads(world):
    alice = world["alice"]
    alice.is_memory_paused = True
    alice.save(update_fields=["is_memory_paused"])
    remembered, profile = _call(
        world["key"],
        ("remember", {"user": "alice", "kind": "fact", "content": "Lives in Lyon"}),
        ("get_profile", {"user": "alice"}),
    )
    assert error_text(remembered).startswith("memory_paused")
    assert not profile.is_error


def test_a_key_revoked_while_the_server_runs_stops_working(world):
    server = _server(world["key"])

    async def run():
        async with Client(server) as client:
            before = await client.call_tool("get_profile", {"user": "alice"})
            await anyio.to_thread.run_sync(
                lambda: revoke_key(api_key=authenticate_key(world["key"]))
            )
            after = await client.call_tool("get_profile", {"user": "alice"})
            return before, after

    before, after = anyio.run(run)
    assert not before.is_error
    assert error_text(after).startswith("not_authenticated")


def test_recall_search_episodes_and_get_context_use_the_read_path(world, embedder):
    alice, personal = world["alice"], factories.mode_of(world["alice"])
    peanuts = factories.make_memory(alice, personal, "Allergic to peanuts", embedder=embedder)
    trip = factories.make_memory(
        alice, personal, "Went hiking in the Alps with Sam", kind="episode", embedder=embedder
    )
    recalled, episodes, context = _call(
        world["key"],
        ("recall", {"user": "alice", "query": "what food must she avoid?", "k": 1}),
        ("search_episodes", {"user": "alice", "query": "hiking trip"}),
        ("get_context", {"user": "alice", "message": "Suggest a snack for me"}),
    )
    assert [m["id"] for m in structured(recalled)["results"]] == [str(peanuts.pk)]
    assert [m["id"] for m in structured(episodes)["results"]] == [str(trip.pk)]
    blocks = structured(context)["blocks"]
    assert any("peanuts" in block["text"] for block in blocks)
    assert str(peanuts.pk) in {i for block in blocks for i in block["memory_ids"]}
    actions = set(AuditEntry.objects.filter(channel="mcp").values_list("action", flat=True))
    assert "memory.search" in actions


def test_remember_with_an_idempotency_key_returns_the_first_write_on_a_retry(world):
    call = ("remember", {"user": "alice", "kind": "fact", "content": "x", "idempotency_key": "k"})
    first, retry = _call(world["key"], call, call)
    assert structured(retry)["id"] == structured(first)["id"]
    changed = ("remember", {**call[1], "content": "y"})
    (reused,) = _call(world["key"], changed)
    assert error_text(reused).startswith("idempotency_key_reused")
    (listed,) = _call(world["key"], ("list_memories", {"user": "alice"}))
    assert [m["id"] for m in structured(listed)["items"]] == [structured(first)["id"]]


def test_memory_history_and_as_of_through_mcp(world):
    from datetime import timedelta

    import time_machine
    from django.utils import timezone

    start = timezone.now() - timedelta(days=2)
    with time_machine.travel(start, tick=False):
        (remembered,) = _call(
            world["key"],
            ("remember", {"user": "alice", "kind": "fact", "content": "Lives in Lyon"}),
        )
    memory_id = structured(remembered)["id"]
    history, listed, then = _call(
        world["key"],
        ("memory_history", {"user": "alice", "memory_id": memory_id}),
        ("list_memories", {"user": "alice", "as_of": (start - timedelta(hours=1)).isoformat()}),
        ("get_profile", {"user": "alice", "as_of": (start + timedelta(hours=1)).isoformat()}),
    )
    assert [v["content"] for v in structured(history)["versions"]] == ["Lives in Lyon"]
    assert structured(listed)["items"] == []
    assert [m["content"] for m in structured(then)["facts"]] == ["Lives in Lyon"]
