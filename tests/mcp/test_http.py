"""The MCP server over streamable HTTP at /mcp of the real ASGI app, with bearer keys."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from memoryhub.models import ApiKey, AuditEntry, RequestSlot
from memoryhub.services.agents import key_owner, rotate_agent_key
from memoryhub.services.request_slots import acquire_request_slot, release_request_slot
from tests import factories
from tests.mcp.conftest import error_text, structured
from tests.processes import wait_for


def _call(base_url, key, *calls):
    async def run():
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
            async with Client(transport, read_timeout_seconds=60) as client:
                return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(run)


def test_tools_answer_over_http_with_the_bearer_key(base_url, world):
    remembered, listed = _call(
        base_url,
        world["key"],
        ("remember", {"user": "alice", "kind": "open_item", "content": "Call the bank"}),
        ("list_open_items", {"user": "alice"}),
    )
    memory = structured(remembered)
    assert [m["id"] for m in structured(listed)["items"]] == [memory["id"]]
    entry = AuditEntry.objects.filter(action="open_items.list").order_by("-id").first()
    assert (entry.channel, entry.client_ip) == ("mcp", "127.0.0.1")
    assert entry.actor_id == str(world["agent"].pk)


def test_http_scope_rules_hold(base_url, world):
    (bob_work,) = _call(base_url, world["key"], ("get_profile", {"user": "bob", "mode": "x"}))
    assert error_text(bob_work).startswith("not_found")


def test_a_request_without_a_valid_key_is_401(base_url, world):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    missing = httpx2.post(f"{base_url}/mcp", json=body, headers=headers)
    assert missing.status_code == 401
    assert missing.json()["code"] == "not_authenticated"
    old_key = world["key"]
    rotate_agent_key(agent=world["agent"])
    revoked = httpx2.post(
        f"{base_url}/mcp", json=body, headers={**headers, "Authorization": f"Bearer {old_key}"}
    )
    assert revoked.status_code == 401


def test_the_rest_of_the_app_is_still_django(base_url, world):
    response = httpx2.get(f"{base_url}/api/v1/openapi.json")
    assert response.status_code == 200
    assert response.json()["info"]["title"] == "MemoryHub agent API"


def test_an_owner_at_the_concurrent_request_limit_gets_429_and_slots_are_given_back(
    base_url, world, settings
):
    settings.MEMORYHUB_MAX_CONCURRENT_REQUESTS = 1
    owner = key_owner(ApiKey.objects.get(agent=world["agent"]))
    running = acquire_request_slot(owner)  # As if one request of the agent were running.
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {world['key']}",
    }

    refused = httpx2.post(f"{base_url}/mcp", json=body, headers=headers)
    release_request_slot(running)
    (listed,) = _call(base_url, world["key"], ("list_open_items", {"user": "alice"}))

    assert refused.status_code == 429
    assert refused.json()["code"] == "too_many_concurrent_requests"
    assert int(refused.headers["Retry-After"]) >= 1
    assert structured(listed)["items"] == []
    # Given back just after the response is sent.
    wait_for(lambda: not RequestSlot.objects.exists(), "the slots to be given back", timeout=30)


def test_an_mcp_only_agent_creates_users_logs_sessions_and_reads_resources_over_http(
    base_url, world
):
    async def run():
        headers = {"Authorization": f"Bearer {world['key']}"}
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            transport = streamable_http_client(f"{base_url}/mcp/", http_client=http)
            async with Client(transport, read_timeout_seconds=60) as client:
                await client.call_tool("create_user", {"external_id": "erin"})
                await client.call_tool(
                    "remember", {"user": "erin", "kind": "fact", "content": "Erin sails"}
                )
                started = structured(await client.call_tool("start_session", {"user": "erin"}))
                await client.call_tool(
                    "add_message",
                    {"session_id": started["id"], "role": "user", "content": "I sail on Sundays"},
                )
                ended = await client.call_tool("end_session", {"session_id": started["id"]})
                profile = await client.read_resource(
                    "memoryhub://users/erin/modes/personal/profile"
                )
                prompt = await client.get_prompt("context", {"user": "erin", "message": "Plans?"})
                return structured(ended), profile, prompt

    ended, profile, prompt = anyio.run(run)
    assert ended["extraction_status"] == "queued"
    assert [m["content"] for m in json.loads(profile.contents[0].text)["facts"]] == ["Erin sails"]
    assert "Erin sails" in prompt.messages[0].content.text
    entry = AuditEntry.objects.filter(action="session.end").order_by("-id").first()
    assert (entry.channel, entry.client_ip) == ("mcp", "127.0.0.1")


def _open_client(stack, base_url, key):
    """An MCP client over HTTP with this key, entered on the exit stack."""

    async def enter():
        headers = {"Authorization": f"Bearer {key}"}
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=120))
        transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
        return await stack.enter_async_context(Client(transport, read_timeout_seconds=60))

    return enter()


def test_a_listener_over_http_hears_only_of_its_own_keys_users(base_url, world):
    # Another workspace also has an "alice": the same URI spelling, another person.
    workspace = factories.make_workspace()
    other_alice = factories.make_user(workspace=workspace, external_id="alice")
    _, other_key = factories.make_agent(workspace, "elsewhere")
    alice = world["alice"]
    alices = "memoryhub://users/alice/modes/personal/open-items"

    async def run():
        async with AsyncExitStack() as stack:
            agent = await _open_client(stack, base_url, world["key"])
            listener = await _open_client(stack, base_url, world["key"])
            stranger = await _open_client(stack, base_url, other_key)
            # A resource the key cannot read cannot be listened to either.
            with pytest.raises(MCPError, match="not_found"):
                async with stranger.listen(
                    resource_subscriptions=[f"memoryhub://users/{alice.pk}/modes/personal/profile"]
                ):
                    pass
            ours = await stack.enter_async_context(listener.listen(resource_subscriptions=[alices]))
            theirs = await stack.enter_async_context(
                stranger.listen(resource_subscriptions=[alices])
            )
            await agent.call_tool(
                "remember", {"user": "alice", "kind": "open_item", "content": "Call the bank"}
            )
            with anyio.fail_after(30):
                heard = await ours.__anext__()
            # Both streams are fed by one in-process bus at once: had the stranger's stream
            # matched, its event would already be waiting.
            with anyio.move_on_after(1) as silence:
                await theirs.__anext__()
            return heard, silence.cancelled_caught

    heard, stranger_heard_nothing = anyio.run(run)
    assert heard.uri == f"memoryhub://users/{alice.pk}/modes/personal/open-items"
    assert stranger_heard_nothing
    assert other_alice.pk != alice.pk
