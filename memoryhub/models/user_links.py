"""One-time links that let a person take over an agent-created user with their own login."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from .workspaces import Agent, User


class UserLinkQuerySet(models.QuerySet["UserLink"]):
    def used(self) -> UserLinkQuerySet:
        return self.filter(used_at__isnull=False)

    def visible_to_admin(self, admin: User) -> UserLinkQuerySet:
        """The links of the admin's own workspace; a superuser sees every workspace's."""
        # Security invariant: a workspace's admin never sees, nor undoes, another's links.
        if admin.is_superuser:
            return self
        return self.filter(user__workspace_id=admin.workspace_id)


class UserLink(models.Model):
    """A link an agent hands a person: opened while signed in, it gives the user that login.

    Only a SHA-256 of the link's token is stored; the token is in the URL shown once to the
    agent. The link is bound to the person's email address: only an account that verified
    that address may use it. A used link is kept (with `used_at`) so that opening it again
    says so, and so that an admin can undo it (`undone_at`).
    """

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    token_digest = models.CharField(max_length=64, unique=True)
    email = models.EmailField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    undone_at = models.DateTimeField(null=True, blank=True)

    objects = UserLinkQuerySet.as_manager()

    def __str__(self) -> str:
        return f"link for {self.user_id} until {self.expires_at:%Y-%m-%d %H:%M}"
