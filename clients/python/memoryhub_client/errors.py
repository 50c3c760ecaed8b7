"""The API's error answers as exceptions, one class per status, each carrying the API's `code`."""

from __future__ import annotations

from typing import Any


class MemoryHubError(Exception):
    """Anything this client raises."""


class TransportError(MemoryHubError):
    """The server could not be reached, or the connection broke (after the retries)."""


class ApiError(MemoryHubError):
    """An error answer: HTTP `status`, the stable `code` to branch on, and a human `detail`."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        errors: list[dict[str, Any]] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.errors = errors or []
        self.retry_after = retry_after


class BadRequestError(ApiError):
    """400: the request could not be read (e.g. malformed JSON)."""


class NotAuthenticatedError(ApiError):
    """401: missing, unknown or revoked key."""


class PermissionDeniedError(ApiError):
    """403: the key may not do this (e.g. `agent_blocked`, `forbidden`)."""


class NotFoundError(ApiError):
    """404: no such user, mode, memory, session… within the key's reach."""


class ConflictError(ApiError):
    """409: the request conflicts with what exists."""


class ContentTooLargeError(ApiError):
    """413: the body or a field is over the server's limit."""


class InvalidInputError(ApiError):
    """422: the input failed validation; `errors` lists each field's problem."""


class RateLimitedError(ApiError):
    """429: over the key owner's budget; `retry_after` says when to come back."""


class UnavailableError(ApiError):
    """503: the server is briefly unavailable; `retry_after` says when to come back."""


class ServerError(ApiError):
    """Any other 5xx."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: NotAuthenticatedError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: ContentTooLargeError,
    422: InvalidInputError,
    429: RateLimitedError,
    503: UnavailableError,
}


def error_for(status: int, body: Any, retry_after: float | None) -> ApiError:
    """The exception for an error answer; a body that is not the API's JSON still gets one."""
    if not isinstance(body, dict):
        body = {}
    errors = body.get("errors")
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    return cls(
        status,
        str(body.get("code") or f"http_{status}"),
        str(body.get("detail") or "no detail"),
        errors=errors if isinstance(errors, list) else None,
        retry_after=retry_after,
    )
