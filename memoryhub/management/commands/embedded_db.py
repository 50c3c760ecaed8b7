"""manage.py embedded_db start|stop|url: control the project-local PostgreSQL."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from memoryhub.embedded_db import ensure_embedded_postgres, stop_embedded_postgres


class Command(BaseCommand):
    help = "Start, stop or locate the embedded PostgreSQL (used when DATABASE_URL is unset)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["start", "stop", "url"])

    def handle(self, *args: Any, **options: Any) -> None:
        data_dir = settings.DATA_DIR / "postgres"
        if options["action"] == "stop":
            stopped = stop_embedded_postgres(data_dir)
            self.stdout.write("Embedded PostgreSQL stopped." if stopped else "It was not running.")
            return
        self.stdout.write(ensure_embedded_postgres(data_dir))
