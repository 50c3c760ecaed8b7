"""Put X-RateLimit-Limit, -Remaining and -Reset on every agent API response, errors included."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase

from memoryhub.api.auth import budget_of

# Where urls.py mounts the agent API; the dashboard and the MCP server are not this API.
API_PATH_PREFIX = "/api/v1/"
LIMIT_HEADER = "X-RateLimit-Limit"
REMAINING_HEADER = "X-RateLimit-Remaining"
RESET_HEADER = "X-RateLimit-Reset"


class RateLimitHeadersMiddleware:
    """Tell an API client its budget on every response: a 401, a 422 and a 429 as much as a 200.

    The budget is the one the request was counted against (api/auth.py): the key owner's, or
    for an invalid key (or none) the client IP's invalid-key budget. A budget turned off
    (a limit of 0) has no headers.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if not request.path_info.startswith(API_PATH_PREFIX):
            return response
        state = budget_of(request)
        if state is not None:
            response[LIMIT_HEADER] = str(state.limit)
            response[REMAINING_HEADER] = str(state.remaining)
            response[RESET_HEADER] = str(state.reset_seconds)
        return response
