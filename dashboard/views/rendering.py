"""Render a full page, or for htmx its fragment plus the messages region (out of band)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from memoryhub.http import AuthedRequest
from memoryhub.models import Mode


def render_fragment(
    request: AuthedRequest, template: str, context: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    """A fragment for htmx, with the messages region swapped out of band beside it."""
    body = render_to_string(template, context, request=request) if template else ""
    # Every action says what happened: the message region updates even when only a card
    # of the page is swapped.
    body += render_to_string("dashboard/_messages.html", {"is_oob": True}, request=request)
    return HttpResponse(body, status=status)


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
    url = list_url(mode, anchor)
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)
