"""The one NinjaAPI at /api/v1/: auth, routers, and the mapping of errors to JSON responses."""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError
from ninja.openapi.schema import OpenAPISchema
from ninja.parser import Parser

from memoryhub.body_limit import TOO_LARGE_CODE, body_limit
from memoryhub.errors import MemoryHubError, RateLimitedError
from memoryhub.unavailable import UNAVAILABLE_CODE, UNAVAILABLE_DETAIL, log_unavailable

from . import (
    answers,
    export,
    graph,
    history,
    imports,
    journal,
    memories,
    profile,
    recall,
    sessions,
    users,
    webhooks,
)
from .auth import ApiKeyAuth
from .rate_limit_headers import LIMIT_HEADER, REMAINING_HEADER, RESET_HEADER

logger = logging.getLogger(__name__)

HTTP_ERROR_CODES = {
    400: "bad_request",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "content_too_large",
    422: "invalid_input",
    429: "rate_limited",
    503: UNAVAILABLE_CODE,
}


class InvalidBodyEncodingError(ValueError):
    """The request body is not UTF-8: a 422 for the client, not a parse failure (400)."""


class StrictJsonParser(Parser):
    """JSON bodies must be UTF-8 (RFC 8259); anything else is rejected before parsing."""

    def parse_body(self, request: HttpRequest) -> Any:
        try:
            text = request.body.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidBodyEncodingError("the request body is not valid UTF-8") from None
        return json.loads(text)


# Sent on every response, errors and 429s included (api/rate_limit_headers.py).
RATE_LIMIT_HEADERS: dict[str, dict[str, Any]] = {
    LIMIT_HEADER: {
        "description": "Requests allowed per minute: the key owner's budget (all keys of an "
        "agent, or all personal keys of a user, share one), or for a missing or invalid key "
        "the client IP's invalid-key budget. Absent when that limit is off.",
        "schema": {"type": "integer", "minimum": 1},
    },
    REMAINING_HEADER: {
        "description": "Requests left in the current one-minute window (0 when refused).",
        "schema": {"type": "integer", "minimum": 0},
    },
    RESET_HEADER: {
        "description": "Seconds until the window ends and the budget is whole again.",
        "schema": {"type": "integer", "minimum": 1, "maximum": 60},
    },
}


class MemoryHubAPI(NinjaAPI):
    """The NinjaAPI, with the rate-limit headers documented on every response."""

    def get_openapi_schema(
        self, *, path_prefix: str | None = None, path_params: dict[str, Any] | None = None
    ) -> OpenAPISchema:
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        schema.setdefault("components", {})["headers"] = RATE_LIMIT_HEADERS
        refs = {name: {"$ref": f"#/components/headers/{name}"} for name in RATE_LIMIT_HEADERS}
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                for response in operation.get("responses", {}).values():
                    response.setdefault("headers", {}).update(refs)
        return schema


api = MemoryHubAPI(
    title="MemoryHub agent API",
    version="1",
    description=(
        "Long-term memory for AI agents, per user and per mode. Authenticate with "
        "`Authorization: Bearer <key>`; errors are JSON `{detail, code}`."
    ),
    urls_namespace="api",
    docs_url="/docs",
    openapi_url="/openapi.json",
    auth=ApiKeyAuth(),
    parser=StrictJsonParser(),
)


def error_response(
    request: HttpRequest, *, status: int, code: str, detail: str, **extra: Any
) -> HttpResponse:
    """The API's one error shape: `{"detail": ..., "code": ...}` (plus optional fields)."""
    return api.create_response(request, {"detail": detail, "code": code, **extra}, status=status)


@api.exception_handler(MemoryHubError)
def on_domain_error(request: HttpRequest, exc: MemoryHubError) -> HttpResponse:
    if exc.status >= 500:
        # Details of a server-side failure (e.g. decryption) are for the logs, not the client.
        logger.error("API request failed: %s", exc.code)
        return error_response(request, status=exc.status, code=exc.code, detail="internal error")
    # The code stays English and stable; the detail, for a person reading it, follows the
    # request's Accept-Language where its message is translated (English otherwise).
    response = error_response(request, status=exc.status, code=exc.code, detail=exc.in_words())
    if isinstance(exc, RateLimitedError):
        response["Retry-After"] = str(exc.retry_after_seconds)
    return response


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    # Only location, message and type: pydantic's context may hold unserialisable objects.
    errors = [
        {"loc": [str(part) for part in error.get("loc", ())], "msg": str(error.get("msg", ""))}
        for error in exc.errors
    ]
    first = errors[0] if errors else {"loc": [], "msg": "invalid input"}
    detail = f"{'.'.join(first['loc'])}: {first['msg']}" if first["loc"] else str(first["msg"])
    return error_response(request, status=422, code="invalid_input", detail=detail, errors=errors)


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, InvalidBodyEncodingError):
        return error_response(request, status=422, code="invalid_input", detail=str(exc.__cause__))
    status = exc.status_code
    response = error_response(
        request, status=status, code=HTTP_ERROR_CODES.get(status, "error"), detail=str(exc)
    )
    wait = getattr(exc, "wait", None)
    if status == 429 and wait is not None:
        response["Retry-After"] = str(int(wait))
    return response


@api.exception_handler(RequestDataTooBig)
def on_body_too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    # Over DATA_UPLOAD_MAX_MEMORY_SIZE (memoryhub/body_limit.py refuses it earlier under ASGI).
    limit = body_limit()
    return error_response(
        request,
        status=413,
        code=TOO_LARGE_CODE,
        detail=f"the request body is over {limit} bytes",
    )


@api.exception_handler(Http404)
def on_not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(request, status=404, code="not_found", detail="not found")


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def on_database_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    # The database is down or restarting, or the pool stayed exhausted: retry, don't report a bug.
    log_unavailable(exc)
    response = error_response(request, status=503, code=UNAVAILABLE_CODE, detail=UNAVAILABLE_DETAIL)
    response["Retry-After"] = str(settings.MEMORYHUB_RETRY_AFTER_SECONDS)
    return response


@api.exception_handler(Exception)
def on_unexpected_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("unexpected API error")
    return error_response(request, status=500, code="internal_error", detail="internal error")


# Each router declares its full paths (/memories, /sessions/{id}/end, …), so all mount at the root.
api.add_router("/", users.router)
api.add_router("/", memories.router)
api.add_router("/", history.router)
api.add_router("/", export.router)
api.add_router("/", journal.router)
api.add_router("/", profile.router)
api.add_router("/", sessions.router)
api.add_router("/", recall.router)
api.add_router("/", answers.router)
api.add_router("/", graph.router)
api.add_router("/", webhooks.router)
api.add_router("/", imports.router)
