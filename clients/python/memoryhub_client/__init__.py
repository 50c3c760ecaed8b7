"""Typed sync and async clients for the MemoryHub agent API; answers are the TypedDicts of
`memoryhub_client.responses`, generated from the OpenAPI schema."""

from .aio import AsyncMemoryHub
from .errors import (
    ApiError,
    BadRequestError,
    ConflictError,
    ContentTooLargeError,
    InvalidInputError,
    MemoryHubError,
    NotAuthenticatedError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    ServerError,
    TransportError,
    UnavailableError,
)
from .operations import OPERATIONS, Call
from .retry import NO_RETRY, RetryPolicy
from .sync import MemoryHub

__all__ = [
    "NO_RETRY",
    "OPERATIONS",
    "ApiError",
    "AsyncMemoryHub",
    "BadRequestError",
    "Call",
    "ConflictError",
    "ContentTooLargeError",
    "InvalidInputError",
    "MemoryHub",
    "MemoryHubError",
    "NotAuthenticatedError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitedError",
    "RetryPolicy",
    "ServerError",
    "TransportError",
    "UnavailableError",
]
