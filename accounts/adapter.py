"""Account adapter: new sign-ups join the default workspace and get the default modes.

A sign-up never claims an agent-created user, whatever its email: agents set no login
identity. A person reaches such a user by opening the agent's one-time link while signed in
(memoryhub/services/user_links.py).
"""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from django.http import HttpRequest

from memoryhub.models import DEFAULT_MODES, Mode
from memoryhub.services.agents import get_or_create_workspace


class AccountAdapter(DefaultAccountAdapter):  # type: ignore[misc]  # allauth is untyped.
    def save_user(self, request: HttpRequest, user: Any, form: Any, commit: bool = True) -> Any:
        if not getattr(user, "workspace_id", None):
            user.workspace = get_or_create_workspace(slug="default", name="Default workspace")
        saved = super().save_user(request, user, form, commit=commit)
        if commit:
            for slug in DEFAULT_MODES:
                Mode.objects.get_or_create(
                    user=saved, slug=slug, defaults={"name": slug.capitalize()}
                )
        return saved
