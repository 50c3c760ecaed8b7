"""Grant and revoke the reviewer and admin roles, per workspace, audited."""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.db import models, transaction
from django.db.models import TextChoices
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.roles import REVIEWERS_GROUP
from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import ConflictError, NotFoundError
from memoryhub.models import User, Workspace
from memoryhub.services.user_links import holds_something


class Role(TextChoices):
    REVIEWER = "reviewer", gettext_lazy("Reviewer")
    ADMIN = "admin", gettext_lazy("Admin")


# Named …ACTION so the access-log test finds each one and checks it has words for the user.
GRANT_REVIEWER_ACTION = AuditAction.ROLE_GRANT_REVIEWER
GRANT_ADMIN_ACTION = AuditAction.ROLE_GRANT_ADMIN
REVOKE_REVIEWER_ACTION = AuditAction.ROLE_REVOKE_REVIEWER
REVOKE_ADMIN_ACTION = AuditAction.ROLE_REVOKE_ADMIN
GRANT_ACTIONS = {Role.REVIEWER: GRANT_REVIEWER_ACTION, Role.ADMIN: GRANT_ADMIN_ACTION}
REVOKE_ACTIONS = {Role.REVIEWER: REVOKE_REVIEWER_ACTION, Role.ADMIN: REVOKE_ADMIN_ACTION}


def find_account(email: str) -> User:
    """The account that signs in with this email; NotFoundError if there is none."""
    account = User.objects.filter(email__iexact=email.strip()).select_related("workspace").first()
    if account is None:
        raise NotFoundError(_("no account signs in with {email}").format(email=repr(email)))
    return account


def find_workspace(slug: str) -> Workspace:
    """The workspace with this slug; NotFoundError if there is none."""
    workspace = Workspace.objects.filter(slug=slug).first()
    if workspace is None:
        raise NotFoundError(_("no workspace {slug}").format(slug=repr(slug)))
    return workspace


def _join_workspace(account: User, workspace: Workspace) -> None:
    if account.workspace_id == workspace.pk:
        return
    # A role is held in the account's own workspace: reviewers see that workspace's queue.
    # An account with nothing in it yet (say, one made by createsuperuser, which lands in
    # "default") may move; one with memory, conversations or keys would take them along.
    if holds_something(account):
        raise ConflictError(
            _(
                "{email} belongs to workspace {current} and holds data there; a role in "
                "{workspace} needs an account of that workspace"
            ).format(
                email=account.email,
                current=repr(account.workspace.slug),
                workspace=repr(workspace.slug),
            )
        )
    account.workspace = workspace
    account.save(update_fields=["workspace"])


def grant_role(*, account: User, role: Role, workspace: Workspace, actor: Actor) -> User:
    """Give the account the role in the workspace, moving an account that holds nothing there.

    Raises ConflictError when the account holds data in another workspace.
    """
    with transaction.atomic():
        account = User.objects.select_for_update().get(pk=account.pk)
        _join_workspace(account, workspace)
        if role == Role.REVIEWER:
            group, _ = Group.objects.get_or_create(name=REVIEWERS_GROUP)
            account.groups.add(group)
        else:
            account.is_staff = True
            account.save(update_fields=["is_staff"])
        record_access(actor=actor, subject_user_id=account.pk, action=GRANT_ACTIONS[role])
    return account


def revoke_role(*, account: User, role: Role, workspace: Workspace, actor: Actor) -> User:
    """Take the role away; NotFoundError when the account is not of that workspace."""
    if account.workspace_id != workspace.pk:
        raise NotFoundError(
            _("{email} is not in workspace {workspace}").format(
                email=account.email, workspace=repr(workspace.slug)
            )
        )
    with transaction.atomic():
        if role == Role.REVIEWER:
            account.groups.remove(*Group.objects.filter(name=REVIEWERS_GROUP))
        else:
            account.is_staff = False
            account.save(update_fields=["is_staff"])
        record_access(actor=actor, subject_user_id=account.pk, action=REVOKE_ACTIONS[role])
    return account


def role_holders() -> list[User]:
    """Every active reviewer and admin, by workspace then email (for the admin tools page)."""
    return list(
        User.objects.filter(is_active=True)
        .filter(models.Q(is_staff=True) | models.Q(groups__name=REVIEWERS_GROUP))
        .select_related("workspace")
        .prefetch_related("groups")
        .distinct()
        .order_by("workspace__slug", "email")
    )
