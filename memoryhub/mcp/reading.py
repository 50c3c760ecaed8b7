"""MCP resources (the user's profile, open items, recent sessions) and the `context` prompt."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage

from memoryhub.api import profile as profile_api
from memoryhub.api import recall as recall_api
from memoryhub.api.recall import ContextIn
from memoryhub.queries.recent_sessions import list_recent_sessions

from .calls import OPEN_ITEMS, PROFILE, RESOURCE_URI, SESSIONS, Callers, dump, read_errors
from .params import Message, Mode, User

JSON = "application/json"


def _template(name: str) -> str:
    # `user` is the user's id or external id, or `me` for a personal key's own user.
    return RESOURCE_URI.replace("{name}", name)


def add_resources_and_prompts(server: MCPServer, callers: Callers) -> None:
    """Register the resources and the `context` prompt on `server`."""

    @server.resource(
        _template(PROFILE),
        name="profile",
        description="The user's active facts, preferences and procedures in the mode.",
        mime_type=JSON,
    )
    @read_errors
    def profile(user: str, mode: str, ctx: Context) -> dict[str, Any]:
        return dump(profile_api.read_profile(callers.scope(ctx, user, mode)))

    @server.resource(
        _template(OPEN_ITEMS),
        name="open_items",
        description="What is still open for the user in the mode (to-dos, follow-ups).",
        mime_type=JSON,
    )
    @read_errors
    def open_items(user: str, mode: str, ctx: Context) -> dict[str, Any]:
        return dump(profile_api.read_open_items(callers.scope(ctx, user, mode)))

    @server.resource(
        _template(SESSIONS),
        name="recent_sessions",
        description="The user's ten most recent sessions with you in the mode, newest first.",
        mime_type=JSON,
    )
    @read_errors
    def recent_sessions(user: str, mode: str, ctx: Context) -> dict[str, Any]:
        scope = callers.scope(ctx, user, mode)
        sessions = list_recent_sessions(
            user=scope.user, mode=scope.mode, agent=scope.agent, actor=scope.actor
        )
        return {
            "sessions": [
                {
                    "id": str(session.id),
                    "is_incognito": session.is_incognito,
                    "started_at": session.started_at.isoformat(),
                    "last_activity_at": session.last_activity_at.isoformat(),
                    "ended_at": session.ended_at.isoformat() if session.ended_at else None,
                    "extraction_status": session.extraction_status,
                }
                for session in sessions
            ]
        }

    @server.prompt(
        name="context",
        title="Memory context for a message",
        description=(
            "What MemoryHub remembers that bears on the message: trusted rules first, then "
            "recalled memories fenced as data, then the message itself."
        ),
    )
    @read_errors
    def context(
        message: Message, ctx: Context, user: User = "me", mode: Mode = "personal"
    ) -> list[UserMessage]:
        payload = ContextIn.model_validate({"user": user, "mode": mode, "message": message})
        scope = callers.scope(ctx, user, mode)
        bundle = recall_api.context_for(scope, payload, embedder=scope.embedder)
        # Security invariant: untrusted blocks arrive fenced (memoryhub/fencing.py); they are
        # passed on as they are, never unwrapped, so recalled text stays data.
        blocks = [block.text for block in bundle.blocks]
        return [UserMessage("\n\n".join([*blocks, f"The user's message:\n{message}"]))]
