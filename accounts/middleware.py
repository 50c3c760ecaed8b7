"""Keep the Django admin behind allauth's login, TOTP and the staff role; tell pages the roles."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.cache import add_never_cache_headers, patch_vary_headers

from accounts.roles import (
    MFA_SETUP_NEXT_KEY,
    Roles,
    is_admin,
    needs_mfa_setup,
    redirect_to_mfa_setup,
)


class AdminRequiresMfaMiddleware:
    """Staff reach /admin/ only after allauth's login and with a TOTP authenticator.

    Django's own admin login form checks the password alone, which would skip the TOTP step
    allauth adds to its login; so that form is replaced by allauth's. Staff without TOTP are
    sent to set it up first (issue 6: two-factor is required for staff). A signed-in person
    who is not staff gets 403: sending them to the login page would bounce them straight back
    to /admin/ (they are signed in), which redirects to the login again, until the browser
    gives up.

    Every request also gets `request.roles` (accounts.roles.Roles, checked on first use), so
    the header can link the review and admin pages for those who may open them.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.roles = Roles(request.user)  # type: ignore[attr-defined]  # Our own attribute.
        admin_root = reverse("admin:index")
        if request.path_info.startswith(admin_root):
            is_signed_in = request.user.is_authenticated
            if is_signed_in and not is_admin(request.user):
                raise PermissionDenied("the admin is for staff")
            if request.path_info == reverse("admin:login"):
                query = urlencode({"next": request.GET.get("next", admin_root)})
                return HttpResponseRedirect(f"{reverse('account_login')}?{query}")
            if is_signed_in and needs_mfa_setup(request.user):
                return redirect_to_mfa_setup(request)
            if is_signed_in:
                request.session.pop(MFA_SETUP_NEXT_KEY, None)
        return self.get_response(request)


class NeverCacheSignedInPagesMiddleware:
    """Pages of a signed-in person (any browser with a session) are never kept by a cache.

    They show memory, which can be deleted or forgotten a second later: Back, the back-forward
    cache or a shared proxy must not bring a deleted item (or a dead Undo) back from a copy.
    Back then asks the server again. htmx's own history snapshots are off too (base.html).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # The session cookie, not request.user: this runs on every answer, the 503 of a lost
        # database included, and must not need the database to decide.
        if settings.SESSION_COOKIE_NAME in request.COOKIES:
            add_never_cache_headers(response)
        # The same URL answers a whole page or an htmx fragment: never mix the two up.
        patch_vary_headers(response, ["HX-Request"])
        return response
