"""Account forms: sign-up that claims agent-created users safely, and deleting the account."""

from __future__ import annotations

from typing import Any

from allauth.account import forms as allauth_forms
from allauth.account.adapter import get_adapter
from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from memoryhub.models import User


class DeleteAccountForm(forms.Form):
    """Deleting an account asks for the password again, so a borrowed session cannot do it."""

    password = forms.CharField(
        label="Your password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self) -> str:
        password: str = self.cleaned_data["password"]
        if not self.user.check_password(password):
            raise forms.ValidationError("That is not your password.")
        return password


class SignupForm(allauth_forms.SignupForm):  # type: ignore[misc]  # allauth is untyped.
    """Sign-up that lets a person claim the user an agent created for their email.

    An agent may create a user with an email and no password (POST /api/v1/users). Signing up
    with that email must claim that user, not fail with "email taken" — but only once the
    person proves the address is theirs, or anyone could read another person's memory by
    typing their email. So nothing is saved here: allauth's "account already exists" mail
    sends a password-reset link to the address, and setting the password claims the user.
    """

    is_claim = False

    def validate_unique_email(self, value: str) -> str:
        if is_unclaimed_email(value):
            self.is_claim = True
            return value
        email: str = super().validate_unique_email(value)
        return email

    def try_save(self, request: HttpRequest) -> tuple[Any, HttpResponse | None]:
        if not self.is_claim:
            return super().try_save(request)  # type: ignore[no-any-return]  # Untyped base.
        # Nobody is signed in and nothing is saved: the emailed link is the only way in.
        get_adapter().send_account_already_exists_mail(self.cleaned_data["email"])
        return None, redirect("account_email_verification_sent")


def is_unclaimed_email(email: str) -> bool:
    """Whether an agent-created user (no usable password yet) holds this email."""
    return any(
        not user.has_usable_password() for user in User.objects.filter(email__iexact=email.strip())
    )
