"""One-time links that let a person take over an agent-created user with their own login."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from .workspaces import Agent, User


class UserLink(models.Model):
    """A link an agent hands a person: opened while signed in, it gives the user that login.

    Only a SHA-256 of the link's token is stored; the token is in the URL shown once to the
    agent. A used link is kept (with `used_at`) so that opening it again says so.
    """

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    token_digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"link for {self.user_id} until {self.expires_at:%Y-%m-%d %H:%M}"
