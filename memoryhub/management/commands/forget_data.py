"""manage.py forget_data --user EMAIL|ID --mode SLUG [--memory-id ID …] [--since/--until] [--topic]."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.errors import MemoryHubError
from memoryhub.services.deletion_requests import carry_out_deletion_request


class Command(BaseCommand):
    help = "Carry out a data-deletion request: specific memories, a period or a topic."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="the user's email or id")
        parser.add_argument("--mode", required=True, help="mode slug, e.g. personal")
        parser.add_argument("--memory-id", action="append", default=[], dest="memory_ids")
        parser.add_argument("--since", help="ISO 8601 date-time with a time zone")
        parser.add_argument("--until", help="ISO 8601 date-time with a time zone")
        parser.add_argument("--topic")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            receipt = carry_out_deletion_request(
                user_ref=options["user"],
                mode_slug=options["mode"],
                memory_ids=options["memory_ids"],
                since=options["since"],
                until=options["until"],
                topic=options["topic"],
            )
        except MemoryHubError as error:
            raise CommandError(str(error)) from error
        counts = ", ".join(f"{count} {kind}" for kind, count in sorted(receipt.counts.items()))
        self.stdout.write(
            f"Forgotten at {receipt.deleted_at:%Y-%m-%d %H:%M:%S %Z}: {counts or 'nothing'}."
        )
