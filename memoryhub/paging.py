"""The ?page= number of the dashboard's and the review queue's paged lists."""

from __future__ import annotations

from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest

# Far past any real list, and short enough that int() never meets Python's digit limit.
MAX_PAGE_DIGITS = 9


def page_number(request: HttpRequest) -> int:
    """The ?page= number, 1 when absent.

    Raises BadRequest (400) unless it is a positive whole number in ASCII digits, and Http404
    for a number too long to be any page. A page past the end is the paginator's business.
    """
    value = request.GET.get("page", "1")
    # str.isdigit() also accepts "²" and other digits that int() refuses: only 0-9 make a page.
    if not value or not value.isascii() or not value.isdigit():
        raise BadRequest("page must be a positive whole number")
    if len(value) > MAX_PAGE_DIGITS:
        raise Http404("no such page")
    if int(value) < 1:
        raise BadRequest("page must be a positive whole number")
    return int(value)
