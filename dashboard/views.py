"""Dashboard views: thin adapters over memoryhub queries and services."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from memoryhub.actors import Actor
from memoryhub.http import AuthedRequest, client_ip
from memoryhub.models import Mode
from memoryhub.queries.memories import list_memories
from memoryhub.services.users import ensure_mode


@require_GET
def landing(request: HttpRequest) -> HttpResponse:
    return render(request, "landing.html")


@require_GET
@login_required
def memory_list(request: AuthedRequest) -> HttpResponse:
    user = request.user
    mode = ensure_mode(user=user, slug=request.GET.get("mode", "personal"))
    items = list_memories(
        user=user,
        mode=mode,
        actor=Actor.for_user(user.pk, client_ip=client_ip(request)),
        limit=100,
    )
    modes = Mode.objects.filter(user=user)
    return render(
        request, "dashboard/memory_list.html", {"items": items, "mode": mode, "modes": modes}
    )
