"""What the HTML views share: typed request classes, the acting person, domain errors as HTTP.

The dashboard, the reviewer pages and the staff pages all use these; the JSON API maps
domain errors in its own exception handlers (memoryhub/api/api.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from functools import wraps
from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied
from django.core.handlers.asgi import ASGIRequest
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
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


async def _each_on_the_request_thread(parts: Iterator[str]) -> AsyncIterator[str]:
    # thread_sensitive: every piece is made on the request's thread, with its DB connection.
    next_part = sync_to_async(_next_or_none, thread_sensitive=True)
    while (part := await next_part(parts)) is not None:
        yield part


def _next_or_none(parts: Iterator[str]) -> str | None:
    return next(parts, None)


class StreamedDownload(StreamingHttpResponse):
    """A body sent as it is made, without the whole of it ever in memory.

    Under ASGI the pieces are made through an async iterator: Django collects a sync iterator
    into one list before it sends anything there. `content` reads the whole body at once, for
    callers that want it so (the tests, through the WSGI test client).
    """

    def __init__(self, request: HttpRequest, parts: Iterator[str], *, content_type: str) -> None:
        content = _each_on_the_request_thread(parts) if isinstance(request, ASGIRequest) else parts
        super().__init__(content, content_type=content_type)

    @property
    def content(self) -> bytes:  # type: ignore[override]  # Readable here; the stubs say Never.
        body = b"".join(self.streaming_content)  # type: ignore[arg-type]  # Sync under WSGI.
        self.streaming_content = [body]
        return body
