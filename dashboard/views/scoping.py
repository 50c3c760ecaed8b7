"""What every dashboard view needs: the acting user, their mode or 404, domain errors as HTTP."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse

from memoryhub import paging
from memoryhub.actors import Actor
from memoryhub.errors import NotFoundError, PermissionDeniedError
from memoryhub.http import AuthedRequest, client_ip
from memoryhub.models import Mode, User
from memoryhub.services.users import ensure_mode

View = Callable[..., HttpResponse]


def actor_of(request: AuthedRequest) -> Actor:
    """The signed-in user, acting through the dashboard (for the audit log)."""
    return Actor.for_user(request.user.pk, client_ip=client_ip(request))


def mode_or_404(user: User, slug: str) -> Mode:
    """The user's mode with this slug; another user's mode does not exist for them."""
    try:
        return ensure_mode(user=user, slug=slug)
    except NotFoundError:
        raise Http404("no such mode") from None


def page_number(request: HttpRequest) -> int:
    """The ?page= number; anything else is a 400 (see memoryhub/paging.py)."""
    return paging.page_number(request)


def domain_errors_as_http(view: View) -> View:
    """Turn "not found" and "forbidden" from services into Django's 404 and 403."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except NotFoundError:
            # Another user's id is "not found", never "forbidden": existence must not leak.
            raise Http404("not found") from None
        except PermissionDeniedError:
            raise PermissionDenied from None

    return wrapper
