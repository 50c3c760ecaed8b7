"""What the sync and async clients share around httpx: URLs, headers, answers, retry decisions."""

from __future__ import annotations

from typing import Any

import httpx

from .errors import ApiError, error_for
from .retry import RETRY_STATUSES, RetryPolicy, parse_retry_after

API_PREFIX = "/api/v1"
USER_AGENT = "memoryhub-client-python/0.1.0"


def api_root(base_url: str) -> str:
    """The API's root from the server's address; `…/api/v1` may be given or left out."""
    base = base_url.rstrip("/")
    return base if base.endswith(API_PREFIX) else base + API_PREFIX


def headers_for(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "User-Agent": USER_AGENT}


def result_of(response: httpx.Response) -> Any:
    """The JSON of a success; raises the ApiError subclass for an error answer."""
    if response.is_success:
        return response.json() if response.content else {}
    raise error_of(response)


def error_of(response: httpx.Response) -> ApiError:
    body: Any
    try:
        body = response.json()
    except ValueError:
        body = None
    retry_after = parse_retry_after(response.headers.get("Retry-After"))
    return error_for(response.status_code, body, retry_after)


def wait_before_retry(response: httpx.Response, attempt: int, policy: RetryPolicy) -> float | None:
    """Seconds to wait before trying again after this answer, or None to return/raise it.

    429 and 503 are answered before (or instead of) doing the work, so every operation may be
    retried after them; Retry-After is honoured as sent. A 429 without it (`quota_exceeded`: a
    quota does not pass in seconds) is raised at once.
    """
    if response.status_code not in RETRY_STATUSES:
        return None
    retry_after = parse_retry_after(response.headers.get("Retry-After"))
    if response.status_code == 429 and retry_after is None:
        return None
    return policy.delay(attempt, retry_after)
