"""Fixtures for the agent API: an agent with its key, and a JSON caller with bearer auth."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from tests import factories

API = "/api/v1"


@dataclass
class Caller:
    """Calls the API with a bearer key through Django's test client."""

    client: Client
    key: str | None

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"} if self.key else {}

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(API + path, params, headers=self._headers())

    def post(self, path: str, body: Any = None, *, raw: bytes | None = None, **params: Any) -> Any:
        query = "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        return self.client.post(
            API + path + query, data, content_type="application/json", headers=self._headers()
        )

    def patch(self, path: str, body: Any, **params: Any) -> Any:
        query = "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""
        return self.client.patch(
            API + path + query,
            json.dumps(body),
            content_type="application/json",
            headers=self._headers(),
        )

    def delete(self, path: str, **params: Any) -> Any:
        query = "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""
        return self.client.delete(API + path + query, headers=self._headers())


@pytest.fixture
def agent_and_key(workspace):
    return factories.make_agent(workspace, "assistant")


@pytest.fixture
def agent(agent_and_key):
    return agent_and_key[0]


@pytest.fixture
def api(client, agent_and_key):
    return Caller(client, agent_and_key[1])


@pytest.fixture
def caller(client):
    """Build a Caller for any key: `caller(key)`."""
    return lambda key: Caller(client, key)
