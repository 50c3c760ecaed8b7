"""manage.py index_heavy_users: give each heavy user their own vector index (docs/retrieval.md)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.services.nearest_index import index_heavy_users


class Command(BaseCommand):
    help = (
        "Build an HNSW index over the memories of each user with MEMORYHUB_NEAREST_FROM active "
        "memories in a mode (their searches read it), and drop those of users who left or fell "
        "below half of it. Built concurrently: safe while agents read and write."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--threshold",
            type=int,
            default=settings.MEMORYHUB_NEAREST_FROM,
            help="active memories in a mode that make a user heavy",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["threshold"] <= 0:
            raise CommandError("--threshold must be at least 1 (0 would index every user)")
        changes = index_heavy_users(threshold=options["threshold"])
        if changes.busy:
            raise CommandError("another index_heavy_users run is at work; nothing done")
        self.stdout.write(
            f"{len(changes.created)} index(es) built, {len(changes.dropped)} dropped, "
            f"{len(changes.repaired)} interrupted build(s) repaired"
        )
