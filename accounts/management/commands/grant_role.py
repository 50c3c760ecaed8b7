"""manage.py grant_role EMAIL reviewer|admin --workspace SLUG [--revoke]."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.role_grants import Role, find_account, find_workspace, grant_role, revoke_role
from memoryhub.actors import Actor
from memoryhub.errors import ConflictError, NotFoundError


class Command(BaseCommand):
    help = (
        "Make an account a reviewer or an admin of a workspace (or, with --revoke, take the role "
        "away). An account that holds nothing yet moves into the workspace."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email", help="the email the person signs in with")
        parser.add_argument("role", choices=Role.values)
        parser.add_argument("--workspace", required=True, help="the workspace's slug")
        parser.add_argument("--revoke", action="store_true", help="take the role away")

    def handle(self, *args: Any, **options: Any) -> None:
        role = Role(options["role"])
        actor = Actor.system("grant_role")
        try:
            account = find_account(options["email"])
            workspace = find_workspace(options["workspace"])
            if options["revoke"]:
                revoke_role(account=account, role=role, workspace=workspace, actor=actor)
                self.stdout.write(
                    f"{account.email} is no longer {role.label.lower()} of {workspace.slug}."
                )
                return
            grant_role(account=account, role=role, workspace=workspace, actor=actor)
        except (NotFoundError, ConflictError) as error:
            raise CommandError(str(error)) from error
        self.stdout.write(
            f"{account.email} is now {role.label.lower()} of {workspace.slug}; "
            "they set up two-factor authentication at their next sign-in."
        )
