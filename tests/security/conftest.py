"""Fixtures for the trust promises: a live server, committed data, and a JSON caller per key."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
import uvicorn

from memoryhub.services.agents import create_personal_key
from tests import factories

API = "/api/v1"


@dataclass
class Http:
    """Calls the live server's API with one bearer key (or none)."""

    base_url: str
    key: str | None

    def request(self, method: str, path: str, body: Any = None, **params: Any) -> httpx2.Response:
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        return httpx2.request(
            method,
            self.base_url + API + path,
            params=params or None,
            json=body,
            headers=headers,
            timeout=120,
        )

    def get(self, path: str, **params: Any) -> httpx2.Response:
        return self.request("GET", path, **params)

    def post(self, path: str, body: Any = None, **params: Any) -> httpx2.Response:
        return self.request("POST", path, {} if body is None else body, **params)

    def patch(self, path: str, body: Any, **params: Any) -> httpx2.Response:
        return self.request("PATCH", path, body, **params)

    def delete(self, path: str, **params: Any) -> httpx2.Response:
        return self.request("DELETE", path, **params)


@dataclass
class World:
    """Two workspaces' worth of users and keys, committed for the server thread to see."""

    workspace: Any
    alice: Any
    bob: Any
    agent: Any
    agent_http: Http
    other_agent: Any
    other_agent_http: Http
    stranger_http: Http  # An agent of another workspace.
    alice_http: Http  # Alice's personal key.
    anonymous: Http


@pytest.fixture
def world(live_server, transactional_db) -> World:
    url = live_server.url
    workspace = factories.make_workspace()
    alice = factories.make_user(workspace=workspace, email="alice@example.com", external_id="alice")
    bob = factories.make_user(workspace=workspace, email="bob@example.com", external_id="bob")
    agent, key = factories.make_agent(workspace, "assistant")
    other_agent, other_key = factories.make_agent(workspace, "scheduler")
    _, stranger_key = factories.make_agent(factories.make_workspace(), "stranger")
    personal_key = create_personal_key(user=alice, name="cli").raw_key
    return World(
        workspace=workspace,
        alice=alice,
        bob=bob,
        agent=agent,
        agent_http=Http(url, key),
        other_agent=other_agent,
        other_agent_http=Http(url, other_key),
        stranger_http=Http(url, stranger_key),
        alice_http=Http(url, personal_key),
        anonymous=Http(url, None),
    )


@pytest.fixture(scope="module")
def asgi_url():
    """The production ASGI app (memoryhub.asgi: Django + MCP) under uvicorn, in a thread."""
    from memoryhub.asgi import django_application
    from memoryhub.mcp.http import build_mcp_app, with_mcp

    # Built as memoryhub/asgi.py builds it, but anew: an MCP app's lifespan runs only once.
    application = with_mcp(django_application, build_mcp_app())
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(application, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
