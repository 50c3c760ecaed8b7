"""The language switch, and the language a person keeps on their account for emails."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.views.decorators.http import require_POST
from django.views.i18n import set_language

from memoryhub.models import User
from memoryhub.services.preferences import set_language as keep_language


@require_POST
def choose_language(request: HttpRequest) -> HttpResponse:
    """The English / Français switch: Django's set_language (a cookie, then back to the page).

    A signed-in person's choice is kept on their account too, so that what is sent to them
    without a request (the review digest) is in it.
    """
    response = set_language(request)
    language = request.POST.get("language", "")
    if isinstance(request.user, User) and language in dict(settings.LANGUAGES):
        keep_language(user=request.user, language=language)
    return response


def keep_browser_language(request: HttpRequest, person: User) -> None:
    """At sign-in, a person who never chose keeps the language this browser asked for."""
    # Only what the browser said (a cookie or Accept-Language), never the hub's default.
    said = (
        settings.LANGUAGE_COOKIE_NAME in request.COOKIES or "HTTP_ACCEPT_LANGUAGE" in request.META
    )
    if not person.language and said:
        language = translation.get_language_from_request(request)
        if language in dict(settings.LANGUAGES):
            keep_language(user=person, language=language)
