"""MCP tools for users, sessions and their messages, and answers: the HTTP API's twins."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from memoryhub.api import answers as answer_api
from memoryhub.api import sessions as session_api
from memoryhub.api import users as user_api
from memoryhub.api.answers import AnswerIn, FeedbackIn
from memoryhub.api.schemas import UserIn
from memoryhub.api.sessions import MessageIn
from memoryhub.models import Channel

from .calls import OPEN_ITEMS, PROFILE, SESSIONS, Callers, check_mode, dump, tool_errors
from .params import (
    AnswerId,
    AnswerText,
    Comment,
    CompletenessSignal,
    ContextIds,
    DisplayName,
    ExternalId,
    FeedbackValue,
    Incognito,
    MemorySignal,
    MessageContent,
    Mode,
    PolicySignal,
    Question,
    RetrievalSignal,
    Role,
    SessionId,
    SessionRef,
    Statement,
    User,
)


def add_tools(server: MCPServer, callers: Callers) -> None:
    """Register the user, session and answer tools on `server`."""

    @server.tool()
    @tool_errors
    def create_user(
        external_id: ExternalId, ctx: Context, display_name: DisplayName = ""
    ) -> dict[str, Any]:
        """Create the person you help as a user of your workspace, or get them if they exist.

        Do it once per person before remembering anything about them. Agent keys only.
        """
        caller = callers.caller(ctx)
        user, _ = user_api.create_or_get_user_for_key(
            caller.api_key,
            UserIn(external_id=external_id, display_name=display_name),
            channel=Channel.MCP,
            ip=caller.client_ip,
        )
        return dump(user)

    @server.tool()
    @tool_errors
    def get_user(user: User, ctx: Context) -> dict[str, Any]:
        """The user's record and modes; `me` is a personal key's own user."""
        caller = callers.caller(ctx)
        return dump(
            user_api.read_user(caller.api_key, user, channel=Channel.MCP, ip=caller.client_ip)
        )

    @server.tool()
    @tool_errors
    def start_session(
        user: User, ctx: Context, mode: Mode = "personal", incognito: Incognito = False
    ) -> dict[str, Any]:
        """Start logging a conversation with the user; add its messages, then end it."""
        scope = callers.scope(ctx, user, mode)
        session = session_api.start_session_for(scope, is_incognito=incognito)
        callers.changed(ctx, scope, SESSIONS)
        return dump(session)

    @server.tool()
    @tool_errors
    def add_message(
        session_id: SessionId, role: Role, content: MessageContent, ctx: Context
    ) -> dict[str, Any]:
        """Add one message of the conversation; a correction or "remember that" applies at once."""
        caller = callers.caller(ctx)
        scope, session = session_api.session_scope(
            caller.api_key, session_id, channel=Channel.MCP, ip=caller.client_ip
        )
        check_mode(caller, scope.mode.slug)
        added = session_api.add_message_to(scope, session, MessageIn(role=role, content=content))
        if added.applied_memory_ids:  # A correction or "remember that" changed memories.
            callers.changed(ctx, scope, PROFILE, OPEN_ITEMS)
        return dump(added)

    @server.tool()
    @tool_errors
    def end_session(session_id: SessionId, ctx: Context) -> dict[str, Any]:
        """End the conversation: what is worth keeping is extracted from it in the background."""
        caller = callers.caller(ctx)
        scope, session = session_api.session_scope(
            caller.api_key, session_id, channel=Channel.MCP, ip=caller.client_ip
        )
        check_mode(caller, scope.mode.slug)
        ended = session_api.end_session_for(scope, session)
        callers.changed(ctx, scope, SESSIONS)
        return dump(ended)

    @server.tool()
    @tool_errors
    def report_answer(
        user: User,
        question: Question,
        answer: AnswerText,
        retrieval: RetrievalSignal,
        policy: PolicySignal,
        completeness: CompletenessSignal,
        memory: MemorySignal,
        ctx: Context,
        mode: Mode = "personal",
        session: SessionRef = None,
        context_ids: ContextIds = None,
    ) -> dict[str, Any]:
        """Report an answer you gave and how sure you are; a weak one is queued for review."""
        payload = AnswerIn.model_validate(
            {
                "user": user,
                "mode": mode,
                "session": session,
                "question": question,
                "answer": answer,
                "signals": {
                    "retrieval": retrieval,
                    "policy": policy,
                    "completeness": completeness,
                    "memory": memory,
                },
                "context_ids": context_ids or [],
            }
        )
        scope = callers.scope(ctx, user, mode)
        return dump(answer_api.report_answer_for(scope, payload))

    @server.tool()
    @tool_errors
    def answer_feedback(
        answer_id: AnswerId, value: FeedbackValue, ctx: Context, comment: Comment = None
    ) -> dict[str, Any]:
        """Pass on the user's thumbs up or down on an answer; down queues it for review."""
        caller = callers.caller(ctx)
        scope = answer_api.answer_scope(
            caller.api_key, answer_id, channel=Channel.MCP, ip=caller.client_ip
        )
        check_mode(caller, scope.mode.slug)
        payload = FeedbackIn(value=value, comment=comment)
        return dump(answer_api.record_feedback_for(scope, answer_id, payload))

    @server.tool()
    @tool_errors
    def propose_knowledge(
        user: User, statement: Statement, ctx: Context, mode: Mode = "personal"
    ) -> dict[str, Any]:
        """Propose a fact about your workspace's domain for its shared knowledge (reviewed)."""
        scope = callers.scope(ctx, user, mode)
        return dump(answer_api.propose_knowledge_for(scope, statement))
