"""The operations endpoints (/healthz, /readyz, /metrics), answered before any other middleware.

An orchestrator probes a container by its own address over plain HTTP: Django's host check
would refuse that address (400) and the HTTPS redirect would send it away (301). First in the
chain, these answers need neither, read no session and open no user's data; they name
dependencies and their state only; /metrics wants a bearer token (memoryhub/metrics.py).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from memoryhub.health import probe
from memoryhub.metrics import metrics_response

HEALTHZ_PATH = "/healthz"
READYZ_PATH = "/readyz"
METRICS_PATH = "/metrics"


def healthz() -> HttpResponse:
    """The process is alive and its event loop answers; nothing else is checked."""
    return _json({"status": "ok"}, status=200)


def readyz() -> HttpResponse:
    """200 when this process can serve requests, else 503; both list every check."""
    readiness = probe.readiness()
    return _json(readiness.as_json(), status=200 if readiness.is_ready else 503)


def _json(body: dict[str, object], *, status: int) -> HttpResponse:
    response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    return response


class OperationsEndpointsMiddleware:
    """Answer the probes; hand every other request on."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in ("GET", "HEAD"):
            if request.path == HEALTHZ_PATH:
                return healthz()
            if request.path == READYZ_PATH:
                return readyz()
            if request.path == METRICS_PATH:
                return metrics_response(request)
        return self.get_response(request)
