"""Keep the Django admin behind allauth's login (with its TOTP step) and behind MFA set-up."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from accounts.roles import is_admin, needs_mfa_setup, redirect_to_mfa_setup


class AdminRequiresMfaMiddleware:
    """Staff reach /admin/ only after allauth's login and with a TOTP authenticator.

    Django's own admin login form checks the password alone, which would skip the TOTP step
    allauth adds to its login; so that form is replaced by allauth's. Staff without TOTP are
    sent to set it up first (issue 6: two-factor is required for staff).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        admin_root = reverse("admin:index")
        if request.path_info.startswith(admin_root):
            if request.path_info == reverse("admin:login"):
                query = urlencode({"next": request.GET.get("next", admin_root)})
                return HttpResponseRedirect(f"{reverse('account_login')}?{query}")
            if is_admin(request.user) and needs_mfa_setup(request.user):
                return redirect_to_mfa_setup(request)
        return self.get_response(request)
