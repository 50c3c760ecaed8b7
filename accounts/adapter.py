"""Account adapter: new sign-ups join a workspace and claim an agent-created user by email."""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from django.http import HttpRequest

from memoryhub.models import DEFAULT_MODES, Mode, User


class AccountAdapter(DefaultAccountAdapter):  # type: ignore[misc]  # allauth is untyped.
    def save_user(self, request: HttpRequest, user: Any, form: Any, commit: bool = True) -> Any:
        from memoryhub.services.agents import get_or_create_workspace

        # An agent may have created this person already (POST /api/v1/users with an email):
        # signing up with that email claims that user instead of creating a second one.
        email = (form.cleaned_data.get("email") or "").strip().lower()
        # Unusable passwords start with "!": such users were created by an agent, not signed up.
        unclaimed = User.objects.filter(email=email).exclude(password__regex=r"^[^!]")  # noqa: S106
        existing = unclaimed.first()
        if existing is not None:
            existing.set_password(form.cleaned_data["password1"])
            existing.save(update_fields=["password"])
            return existing
        if not getattr(user, "workspace_id", None):
            user.workspace = get_or_create_workspace(slug="default", name="Default workspace")
        saved = super().save_user(request, user, form, commit=commit)
        if commit:
            for slug in DEFAULT_MODES:
                Mode.objects.get_or_create(
                    user=saved, slug=slug, defaults={"name": slug.capitalize()}
                )
        return saved
