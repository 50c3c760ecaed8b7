"""The logins people linked to agent-created users, as an admin of their workspace sees them."""

from __future__ import annotations

from django.db.models import QuerySet

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.models import User, UserLink

LIST_ACTION = AuditAction.ADMIN_USER_LINKS


def linked_logins(*, admin: User, actor: Actor) -> QuerySet[UserLink]:
    """Used links of the admin's workspace (every workspace's for a superuser), newest first.

    The list shows the addresses people linked, so looking at it is an audit row itself.
    """
    record_access(actor=actor, subject_user_id=None, action=LIST_ACTION)
    return (
        UserLink.objects.used()
        .visible_to_admin(admin)
        .select_related("agent", "user__workspace")
        .order_by("-used_at")
    )
