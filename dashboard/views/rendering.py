"""Render a full page, or for htmx its fragment plus the messages region (out of band)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse

from dashboard.forms import AgentFilterForm
from memoryhub.http import AuthedRequest, redirect_after_post
from memoryhub.models import Mode
from memoryhub.queries.overview import SECTIONS_BY_SLUG, count_items

EPISODE_FILTERS = ("type", "topic", "since", "until")


def render_fragment(
    request: AuthedRequest,
    template: str,
    context: dict[str, Any],
    *,
    status: int = 200,
    mode: Mode | None = None,
) -> HttpResponse:
    """A fragment for htmx, with the messages region (and, given the mode, the counts the list
    page asked for) swapped out of band beside it."""
    body = render_to_string(template, context, request=request) if template else ""
    # Every action says what happened: the message region updates even when only a card
    # of the page is swapped.
    body += render_to_string("dashboard/_messages.html", {"is_oob": True}, request=request)
    if mode is not None:
        body += _counts(request, mode)
    return HttpResponse(body, status=status)


def is_list_page(request: AuthedRequest) -> bool:
    """Whether an htmx request comes from the main list page (htmx sends the page's address)."""
    current = request.htmx.current_url if request.htmx else None
    return bool(current) and urlsplit(current or "").path == reverse("dashboard:memory_list")


def shown_section(request: AuthedRequest) -> str | None:
    """The section of the list page an htmx action came from ("open-items" …), if any."""
    if not is_list_page(request):
        return None
    shown = QueryDict(urlsplit(request.htmx.current_url or "").query)
    return shown.get("section", "everything")


def _counts(request: AuthedRequest, mode: Mode) -> str:
    """The list page's counts, out of band, after an htmx action taken on that page.

    The page is the one in the address bar (htmx sends it; section links push it there), so
    the count is of the section and agent the person is looking at. Episode filters on
    encrypted fields would need decrypting every episode again: no count for those.
    """
    if not is_list_page(request):
        return ""
    shown = QueryDict(urlsplit(request.htmx.current_url or "").query)
    if any(shown.get(name) for name in EPISODE_FILTERS):
        return ""
    agent = AgentFilterForm(shown)
    counts = count_items(
        user=request.user,
        mode=mode,
        section=SECTIONS_BY_SLUG.get(shown.get("section", ""), SECTIONS_BY_SLUG["everything"]),
        agent_id=agent.cleaned_data["agent"] if agent.is_valid() else None,
    )
    # Only a page that shows "Is this right?" has its count (hx-vals on its lists say so).
    context = {"counts": counts, "has_candidates": request.POST.get("has_candidates") == "1"}
    return render_to_string("dashboard/_counts.html", context, request=request)


def page_or_fragment(
    request: AuthedRequest,
    page: str,
    fragment: str,
    context: dict[str, Any],
    *,
    status: int = 200,
) -> HttpResponse:
    """The full page for a normal request; only the fragment when htmx asks."""
    if request.htmx:
        return render_fragment(request, fragment, context, status=status)
    return render(request, page, context, status=status)


def list_url(mode: Mode, anchor: str = "") -> str:
    """The main dashboard page of a mode (optionally scrolled to an element)."""
    url = f"{reverse('dashboard:memory_list')}?mode={mode.slug}"
    return f"{url}#{anchor}" if anchor else url


def back_to_list(request: AuthedRequest, mode: Mode, anchor: str = "") -> HttpResponse:
    """After a form post: back to the mode's list (a client-side redirect under htmx)."""
    return redirect_after_post(request, list_url(mode, anchor))
