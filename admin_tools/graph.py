"""Staff-only pages of the workspace knowledge graphs: the list, and one graph's overview."""

from __future__ import annotations

from django.db.models import Count
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from accounts.roles import require_staff
from memoryhub.graph.queries import graph_overview
from memoryhub.http import AuthedRequest, staff_actor
from memoryhub.models import ActorType, Channel, Workspace


@require_safe
@require_staff
def graph_list(request: AuthedRequest) -> HttpResponse:
    """Every workspace with the size of its graph, linking to its page."""
    workspaces = Workspace.objects.annotate(nodes=Count("graph_nodes", distinct=True)).order_by(
        "slug"
    )
    return render(request, "admin_tools/graph_list.html", {"workspaces": workspaces})


@require_safe
@require_staff
def graph_detail(request: AuthedRequest, slug: str) -> HttpResponse:
    """One workspace graph: counts by type, top items, unanswered questions, maintenance runs."""
    workspace = Workspace.objects.filter(slug=slug).first()
    if workspace is None:
        raise Http404("no such workspace")
    overview = graph_overview(workspace, actor=staff_actor(request, ActorType.ADMIN, Channel.ADMIN))
    return render(request, "admin_tools/graph.html", {"workspace": workspace, "overview": overview})
