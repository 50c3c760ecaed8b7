"""Search one mode's memories with the same ranking as the agent API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.views.decorators.http import require_safe

from dashboard.forms import SearchForm
from memoryhub.embeddings import embedder_for_workspace
from memoryhub.http import AuthedRequest
from memoryhub.models import Mode
from memoryhub.queries.overview import name_agents
from memoryhub.queries.recall import DEFAULT_MIN_SCORE, search_memories

from .rendering import page_or_fragment
from .scoping import actor_of, mode_or_404

SEARCH_LIMIT = 20


@require_safe
@login_required
def search(request: AuthedRequest, mode_slug: str) -> HttpResponse:
    """The close matches of the query in this mode, best first (the page, or the results)."""
    mode = mode_or_404(request.user, mode_slug)
    form = SearchForm(request.GET)
    query = form.cleaned_data["q"] if form.is_valid() else ""
    found = (
        search_memories(
            user=request.user,
            mode=mode,
            query=query,
            actor=actor_of(request),
            embedder=embedder_for_workspace(request.user.workspace),
            k=SEARCH_LIMIT,
            # The owner browsing is not an agent using the memory: "last used" stays as it was.
            record_access=False,
            min_score=DEFAULT_MIN_SCORE,
            # The person's own "not sure yet" items are on their page: search finds them too.
            includes_candidates=True,
        )
        if query
        else []
    )
    results = name_agents(user=request.user, mode=mode, items=found)
    context = {
        "mode": mode,
        "form": form,
        "query": query,
        "results": results,
        "other_modes": list(Mode.objects.filter(user=request.user).exclude(pk=mode.pk)),
    }
    return page_or_fragment(
        request, "dashboard/search.html", "dashboard/_search_results.html", context
    )
