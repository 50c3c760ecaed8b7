"""manage.py create_agent NAME --workspace SLUG: register an agent and print its key last."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.errors import MemoryHubError
from memoryhub.services.agents import create_agent, get_or_create_workspace


class Command(BaseCommand):
    help = "Register an agent in a workspace (created if missing) and print its new API key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument("--persona", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["workspace"].strip()
        if not slug:
            raise CommandError("--workspace must not be empty")
        workspace = get_or_create_workspace(slug=slug)
        try:
            agent, issued = create_agent(
                workspace=workspace, name=options["name"], persona=options["persona"]
            )
        except MemoryHubError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"Agent {agent.name!r} in workspace {workspace.slug!r} (id {agent.id}).")
        self.stdout.write("Its API key is shown once; store it now:")
        self.stdout.write(issued.raw_key)
