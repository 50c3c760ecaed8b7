"""Give back an API request's concurrent-request slot when the request ends, however it ends."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponseBase

from memoryhub.api.auth import REQUEST_SLOT_KEY
from memoryhub.services.request_slots import release_request_slot

logger = logging.getLogger(__name__)


class ReleaseRequestSlotMiddleware:
    """Release the slot ApiKeyAuth took, on every exit: a response, an exception, a disconnect.

    Under ASGI a client that disconnects cancels the coroutine awaiting the view, not the
    thread running it: the view finishes and this `finally` still runs. A worker killed
    mid-request leaves its slot until the lease ends (MEMORYHUB_REQUEST_SLOT_LEASE_SECONDS).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        try:
            return self.get_response(request)
        finally:
            try:
                release_request_slot(request.META.pop(REQUEST_SLOT_KEY, None))
            except DatabaseError:
                # The response stands; the slot goes when its lease ends.
                logger.warning("could not release a request slot", exc_info=True)
