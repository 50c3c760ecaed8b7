"""Quotas and the concurrent-request limit through MCP tools, in process."""

from __future__ import annotations

from memoryhub.usage import user_usage
from tests import factories
from tests.mcp.conftest import error_text
from tests.mcp.test_tools import _call


def test_mcp_remember_past_the_quota_is_a_quota_exceeded_tool_error(world, settings):
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER = 1
    factories.make_memory(world["alice"], factories.mode_of(world["alice"]), "Lives in Lyon")

    (refused,) = _call(
        world["key"], ("remember", {"user": "alice", "kind": "fact", "content": "Lives in Paris"})
    )

    assert error_text(refused).startswith("quota_exceeded")
    assert user_usage(world["alice"].pk).memories == 1
