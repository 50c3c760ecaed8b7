"""Fixtures for the MCP server: data committed for real (tools run on other threads/processes)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import factories


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
