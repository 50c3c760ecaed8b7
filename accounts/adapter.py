"""Account adapter: new sign-ups join the default workspace and get the default modes; a new
password revokes the user's personal keys.

A sign-up never claims an agent-created user, whatever its email: agents set no login
identity. A person reaches such a user by opening the agent's one-time link while signed in
(memoryhub/services/user_links.py).

A person's language is kept at sign-in (accounts/languages.py) and sets the pages' language
on a browser that has not chosen one.

The MFA adapter stores TOTP secrets and recovery seeds sealed under a master key.
"""

from __future__ import annotations

import time
from typing import Any

from allauth.account import app_settings as account_settings
from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.authentication import get_authentication_records
from allauth.core import context
from allauth.mfa.adapter import DefaultMFAAdapter
from allauth.mfa.models import Authenticator
from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.views.decorators.debug import sensitive_variables

from accounts.languages import keep_browser_language
from memoryhub.actors import Actor
from memoryhub.keyring import open_secret, seal_secret
from memoryhub.models import (
    DEFAULT_MODE_NAMES,
    DEFAULT_MODES,
    DEFAULT_WORKSPACE_NAME,
    DEFAULT_WORKSPACE_SLUG,
    Mode,
)
from memoryhub.services.agents import get_or_create_workspace, revoke_personal_keys

MFA_SEAL_PURPOSE = "mfa"
# What allauth names its two-factor pages when it asks whether they need a re-authentication.
MFA_APP = "allauth.mfa"
# Where allauth keeps what it passes through encrypt(): the TOTP secret, the recovery seed.
SEALED_FIELDS = {
    Authenticator.Type.TOTP: ("secret",),
    Authenticator.Type.RECOVERY_CODES: ("seed",),
}


class AccountAdapter(DefaultAccountAdapter):  # type: ignore[misc]  # allauth is untyped.
    def save_user(self, request: HttpRequest, user: Any, form: Any, commit: bool = True) -> Any:
        if not getattr(user, "workspace_id", None):
            user.workspace = get_or_create_workspace(
                slug=DEFAULT_WORKSPACE_SLUG, name=DEFAULT_WORKSPACE_NAME
            )
        saved = super().save_user(request, user, form, commit=commit)
        if commit:
            for slug in DEFAULT_MODES:
                Mode.objects.get_or_create(
                    user=saved, slug=slug, defaults={"name": DEFAULT_MODE_NAMES[slug]}
                )
        return saved

    def login(self, request: HttpRequest, user: Any) -> None:
        super().login(request, user)
        keep_browser_language(request, user)

    def post_login(self, request: HttpRequest, user: Any, **kwargs: Any) -> HttpResponse:
        """After sign-in the pages follow the person's kept language on any browser (a
        cookie, as the switch sets), where this browser would show another."""
        response: HttpResponse = super().post_login(request, user, **kwargs)
        browser_language = translation.get_language_from_request(request)
        if user.language and user.language != browser_language:
            response.set_cookie(
                settings.LANGUAGE_COOKIE_NAME,
                user.language,
                max_age=settings.LANGUAGE_COOKIE_AGE,
                path=settings.LANGUAGE_COOKIE_PATH,
                domain=settings.LANGUAGE_COOKIE_DOMAIN,
                secure=settings.LANGUAGE_COOKIE_SECURE,
                httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
                samesite=settings.LANGUAGE_COOKIE_SAMESITE,
            )
        return response

    def is_reauthentication_required(self, *, app: str, **kwargs: Any) -> bool:
        """Two-factor pages need no second password right after a login: one typed seconds ago
        proves as much. Minting a personal key still asks (dashboard/views/account.py).

        allauth counts only a re-authentication as recent, so a reviewer sent to set up
        two-factor straight after logging in had to type the password again (issue 29).
        """
        if not super().is_reauthentication_required(app=app, **kwargs):
            return False
        return not (app == MFA_APP and _logged_in_recently(context.request))

    def set_password(self, user: Any, password: str) -> None:
        """A new password (changed, reset or set) also revokes every personal key of the user.

        allauth sets every password through here, so no flow can skip the revocation.
        """
        with transaction.atomic():
            super().set_password(user, password)
            revoke_personal_keys(user=user, actor=Actor.for_user(user.pk))


def _logged_in_recently(request: HttpRequest | None) -> bool:
    """Whether this session's user authenticated (login or re-authentication) moments ago."""
    if request is None or not request.user.is_authenticated:
        return False
    records = get_authentication_records(request, request.user)
    if not records:
        return False
    age = time.time() - float(records[-1]["at"])
    return age < int(account_settings.REAUTHENTICATION_TIMEOUT)


class MFAAdapter(DefaultMFAAdapter):  # type: ignore[misc]  # allauth is untyped.
    """TOTP secrets and recovery seeds are sealed under a master key, never stored in clear."""

    @sensitive_variables("text")
    def encrypt(self, text: str) -> str:
        return seal_secret(text, purpose=MFA_SEAL_PURPOSE)

    def decrypt(self, encrypted_text: str) -> str:
        # A secret stored before sealing existed is plaintext and opens as it is.
        return open_secret(encrypted_text, purpose=MFA_SEAL_PURPOSE)


@sensitive_variables("data", "codes")
def reseal_mfa_secrets() -> int:
    """Seal every stored MFA secret under the newest master key (plaintext ones too); count them.

    manage.py rotate_master_key runs it, so that no secret depends on an old master key.
    """
    count = 0
    adapter = MFAAdapter()
    for authenticator in Authenticator.objects.filter(type__in=list(SEALED_FIELDS)).iterator():
        data = dict(authenticator.data)
        for name in SEALED_FIELDS[authenticator.type]:
            if isinstance(data.get(name), str):
                data[name] = adapter.encrypt(adapter.decrypt(data[name]))
        codes = data.get("migrated_codes")
        if isinstance(codes, list):
            data["migrated_codes"] = [adapter.encrypt(adapter.decrypt(c)) for c in codes]
        Authenticator.objects.filter(pk=authenticator.pk).update(data=data)
        count += 1
    return count
