"""Turn "the database cannot serve this request now" into 503 with Retry-After, never a 500.

It covers the database being down or restarting and the connection pool staying exhausted for
DATABASE_POOL_TIMEOUT_SECONDS (psycopg_pool's PoolTimeout is an OperationalError, which Django
re-raises as its own). Statement timeouts, deadlocks and serialisation failures are
OperationalErrors too: all of them are worth retrying, which is what 503 + Retry-After says.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views import defaults

logger = logging.getLogger(__name__)

DATABASE_UNAVAILABLE_ERRORS = (OperationalError, InterfaceError)
UNAVAILABLE_CODE = "service_unavailable"
UNAVAILABLE_DETAIL = "the service is briefly unavailable; retry after the Retry-After seconds"


def log_unavailable(exc: BaseException) -> None:
    # The class and first line only: a driver message names hosts and states, never memory text.
    first_line = str(exc).splitlines()[0] if str(exc) else ""
    logger.warning("database unavailable: %s: %s", type(exc).__name__, first_line)


def unavailable_response(request: HttpRequest) -> HttpResponse:
    """503 as JSON for the API (and clients asking for JSON), as a small page for people."""
    wants_json = request.path.startswith("/api/") or "json" in request.headers.get("Accept", "")
    response: HttpResponse
    if wants_json:
        response = JsonResponse(
            {"detail": UNAVAILABLE_DETAIL, "code": UNAVAILABLE_CODE}, status=503
        )
    else:
        # A page of its own, not base.html: the header would query the database again.
        response = HttpResponse(render_to_string("503.html"), status=503)
    response["Retry-After"] = str(settings.MEMORYHUB_RETRY_AFTER_SECONDS)
    return response


class DatabaseUnavailableMiddleware:
    """Answer 503 when a view fails because the database is unavailable."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, DATABASE_UNAVAILABLE_ERRORS):
            return None
        log_unavailable(exception)
        return unavailable_response(request)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a middleware (session, auth) that lost the database still gets a 503."""
    exc = sys.exc_info()[1]
    if isinstance(exc, DATABASE_UNAVAILABLE_ERRORS):
        log_unavailable(exc)
        return unavailable_response(request)
    return defaults.server_error(request)
