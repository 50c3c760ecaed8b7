"""Fixtures for the MCP server: data committed for real (tools run on other threads/processes)."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import pytest
import uvicorn

from tests import factories


@pytest.fixture(scope="session")
def base_url():
    """memoryhub.asgi:application served by uvicorn on a free loopback port, in a thread.

    One for the whole run: the app's MCP session manager can only be started once.
    """
    from memoryhub.asgi import application

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(application, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture
def world(transactional_db):
    """A workspace with alice and bob, and an agent key."""
    workspace = factories.make_workspace()
    alice = factories.make_user(workspace=workspace, email="alice@example.com", external_id="alice")
    bob = factories.make_user(workspace=workspace, email="bob@example.com", external_id="bob")
    agent, key = factories.make_agent(workspace, "assistant")
    return {"workspace": workspace, "alice": alice, "bob": bob, "agent": agent, "key": key}


def structured(result: Any) -> dict[str, Any]:
    """The JSON a tool returned (structured content, or its text block)."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def error_text(result: Any) -> str:
    """The tool's own error message, without the SDK's "Error executing tool <name>: " prefix."""
    assert result.is_error
    text = result.content[0].text
    prefix = "Error executing tool "
    return text.split(": ", 1)[1] if text.startswith(prefix) else text
