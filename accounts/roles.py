"""Roles: end user (default), reviewer (the "reviewers" group) and admin (staff), with MFA gates."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property, wraps
from typing import Any

from allauth.mfa.models import Authenticator
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _

from memoryhub.models import LearningCandidate, User

REVIEWERS_GROUP = "reviewers"
# Where a reviewer or admin was going when they were sent to set up TOTP; the MFA pages link
# back there once it is on.
MFA_SETUP_NEXT_KEY = "mfa_setup_next"

View = Callable[..., HttpResponse]


def is_reviewer(user: Any) -> bool:
    """Whether the user may review answers and candidates (the "reviewers" group, or superuser)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.is_superuser:
        return True
    return bool(user.groups.filter(name=REVIEWERS_GROUP).exists())


def is_admin(user: Any) -> bool:
    """Whether the user is an admin of the platform (Django staff)."""
    return bool(getattr(user, "is_authenticated", False)) and bool(user.is_active and user.is_staff)


def has_totp(user: User) -> bool:
    """Whether the user has an active TOTP authenticator (allauth.mfa)."""
    return bool(
        Authenticator.objects.filter(user_id=user.pk, type=Authenticator.Type.TOTP).exists()
    )


def needs_mfa_setup(user: Any) -> bool:
    """Reviewers and admins must use TOTP before they may see anything of other people."""
    return (is_reviewer(user) or is_admin(user)) and not has_totp(user)


def redirect_to_mfa_setup(request: HttpRequest) -> HttpResponse:
    """Send the user to TOTP set-up with a message saying why, remembering where they were."""
    if request.method == "GET":
        request.session[MFA_SETUP_NEXT_KEY] = request.get_full_path()
    messages.warning(
        request,
        _(
            "Reviewers and admins must turn on two-factor authentication (an authenticator app) "
            "before they can continue."
        ),
    )
    return redirect("mfa_activate_totp")


def _require_role(has_role: Callable[[Any], bool]) -> Callable[[View], View]:
    def decorator(view: View) -> View:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            # The role is checked on the server for every request: hiding a link is not access
            # control. A missing role is 403, never a redirect that hints at what exists.
            if not has_role(request.user):
                raise PermissionDenied("this page is for another role")
            if not has_totp(request.user):  # type: ignore[arg-type]  # Authenticated here.
                return redirect_to_mfa_setup(request)
            request.session.pop(MFA_SETUP_NEXT_KEY, None)  # Arrived: no "continue" link now.
            return view(request, *args, **kwargs)

        return login_required(wrapper)

    return decorator


def require_reviewer(view: View) -> View:
    """Let only reviewers with TOTP through; others get 403, or the MFA set-up page."""
    return _require_role(is_reviewer)(view)


def require_staff(view: View) -> View:
    """Let only staff with TOTP through; others get 403, or the MFA set-up page."""
    return _require_role(is_admin)(view)


class Roles:
    """What the header and the account pages show a person; each role is checked on first use."""

    def __init__(self, user: Any) -> None:
        self._user = user

    @cached_property
    def is_reviewer(self) -> bool:
        return is_reviewer(self._user)

    @cached_property
    def is_admin(self) -> bool:
        return is_admin(self._user)

    @cached_property
    def waiting_for_review(self) -> int:
        """How many candidates wait in a reviewer's workspace (the header's count; 0 for others).

        One count on the queue index (workspace, status), on pages whose header shows it.
        """
        if not self.is_reviewer:
            return 0
        return (
            LearningCandidate.objects.filter(workspace_id=self._user.workspace_id).pending().count()
        )

    @cached_property
    def has_totp(self) -> bool:
        return bool(getattr(self._user, "is_authenticated", False)) and has_totp(self._user)
