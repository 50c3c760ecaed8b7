"""What the HTML views share: typed request classes, the acting person, domain errors as HTTP.

The dashboard, the reviewer pages and the staff pages all use these; the JSON API maps
domain errors in its own exception handlers (memoryhub/api/api.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from memoryhub.actors import Actor
from memoryhub.errors import NotFoundError, PermissionDeniedError
from memoryhub.models import ActorType, Channel, User

View = Callable[..., HttpResponse]


class AuthedRequest(HttpRequest):
    user: User  # login_required guarantees a real User here.
    htmx: HtmxDetails


class HtmxRequest(HttpRequest):
    htmx: HtmxDetails


def client_ip(request: HttpRequest) -> str | None:
    """The peer address; proxies are not trusted (no X-Forwarded-For) unless configured."""
    return request.META.get("REMOTE_ADDR") or None


def staff_actor(request: AuthedRequest, actor_type: ActorType, channel: Channel) -> Actor:
    """The signed-in reviewer or admin, for the audit log: every look they take is a row."""
    user = request.user
    return Actor(
        actor_type, str(user.pk), channel, label=user.email or "", client_ip=client_ip(request)
    )


def domain_errors_as_http(view: View) -> View:
    """Turn "not found" and "forbidden" from services into Django's 404 and 403."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except NotFoundError:
            # Another user's (or workspace's) id is "not found", never "forbidden": existence
            # must not leak.
            raise Http404("not found") from None
        except PermissionDeniedError:
            raise PermissionDenied from None

    return wrapper


def redirect_after_post(request: AuthedRequest, url: str) -> HttpResponse:
    """After a form post: go to the url (a client-side redirect under htmx)."""
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
