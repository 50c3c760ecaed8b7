"""manage.py compact_threads: summarise the older messages of long threads."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memoryhub.services.compaction import compact_long_threads


class Command(BaseCommand):
    help = "Fold the older messages of long sessions into a summary keeping names, numbers, dates."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--threshold", type=int, help="compact past this many messages")
        parser.add_argument("--keep-recent", type=int, help="messages left as they are")

    def handle(self, *args: Any, **options: Any) -> None:
        report = compact_long_threads(
            threshold=options["threshold"],
            keep_recent=options["keep_recent"],
        )
        self.stdout.write(
            f"Compaction: {report.messages} message(s) of {report.sessions} session(s) folded."
        )
