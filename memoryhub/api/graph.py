"""Agent API routes: the workspace graph's insights for the calling agent's workspace."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from django.http import HttpRequest
from django.utils.translation import gettext_noop
from ninja import Query, Router, Schema
from pydantic import Field

from memoryhub.actors import Actor
from memoryhub.errors import NotAuthenticatedError, PermissionDeniedError
from memoryhub.graph.queries import DEFAULT_LIMIT, MAX_LIMIT, graph_insights
from memoryhub.http import client_ip
from memoryhub.models import ApiKey, Channel, Workspace

from .auth import actor_for_key
from .schemas import ERRORS

router = Router(tags=["graph"])


class InsightsQueryIn(Schema):
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = Field(
        default=DEFAULT_LIMIT,
        description=f"At most this many entries in each list, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}).",
    )


class PopularItemOut(Schema):
    name: str = Field(description="The item's name, as agents reported it in answers' `items`.")
    count: int = Field(description="How many times answers were about it.")


class UnansweredOut(Schema):
    question: str = Field(
        description="A question asked without a good answer (scrubbed of personal data)."
    )
    count: int = Field(
        description="How many times it was asked (repeats of one question are grouped)."
    )
    last_asked_at: datetime = Field(description="When it was last asked (UTC).")


class GraphInsightsOut(Schema):
    enabled: bool = Field(
        description="False until the graph holds min_nodes nodes: both lists are then empty."
    )
    nodes: int = Field(description="How many nodes the workspace graph holds.")
    min_nodes: int = Field(description="The nodes needed before insights are given.")
    popular_items: list[PopularItemOut] = Field(
        description="The most searched items, by a weight that fades with age (recent searches count more)."
    )
    unanswered: list[UnansweredOut] = Field(
        description="Questions no answer answered well, most recently asked first."
    )


def _agent_workspace(request: HttpRequest) -> tuple[Workspace, Actor]:
    """The calling agent's workspace, and the agent as the audit actor of what it reads."""
    api_key = request.auth  # type: ignore[attr-defined]  # Set by ApiKeyAuth on every route.
    if not isinstance(api_key, ApiKey):
        raise NotAuthenticatedError(gettext_noop("missing, unknown or revoked API key"))
    # Workspace-wide data (other users' scrubbed questions) is for the workspace's agents,
    # never for one user's personal key.
    if api_key.agent is None:
        raise PermissionDeniedError(
            gettext_noop("graph insights are for workspace agents, not personal keys")
        )
    actor = actor_for_key(api_key, channel=Channel.API, ip=client_ip(request))
    return api_key.agent.workspace, actor


@router.get(
    "/graph/insights",
    summary="Read the workspace's popular items and unanswered questions",
    response={200: GraphInsightsOut, **ERRORS},
)
def insights(request: HttpRequest, params: Query[InsightsQueryIn]) -> GraphInsightsOut:
    """The agent workspace's most searched items and recent questions without a good answer.

    Both lists stay empty until the graph holds the workspace's minimum number of nodes.
    """
    workspace, actor = _agent_workspace(request)
    found = graph_insights(workspace, actor=actor, limit=params.limit)
    return GraphInsightsOut(
        enabled=found.enabled,
        nodes=found.nodes,
        min_nodes=found.min_nodes,
        popular_items=[PopularItemOut(name=i.name, count=i.count) for i in found.popular_items],
        unanswered=[
            UnansweredOut(question=q.question, count=q.count, last_asked_at=q.last_asked_at)
            for q in found.unanswered
        ],
    )
