"""Typed request classes for views: what the middleware guarantees is on the request."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

from memoryhub.models import User


class AuthedRequest(HttpRequest):
    user: User  # login_required guarantees a real User here.
    htmx: HtmxDetails


class HtmxRequest(HttpRequest):
    htmx: HtmxDetails


def client_ip(request: HttpRequest) -> str | None:
    """The peer address; proxies are not trusted (no X-Forwarded-For) unless configured."""
    return request.META.get("REMOTE_ADDR") or None
