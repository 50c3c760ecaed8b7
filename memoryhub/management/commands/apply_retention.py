"""manage.py apply_retention: forget what is past each user's retention limit (safe to re-run)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memoryhub.services.retention import apply_retention


class Command(BaseCommand):
    help = "Delete memories past retention, expired working memory and stale candidate facts."

    def handle(self, *args: Any, **options: Any) -> None:
        report = apply_retention()
        counts = ", ".join(f"{count} {kind}" for kind, count in sorted(report.counts.items()))
        self.stdout.write(
            f"Retention: {report.users} user(s) trimmed ({counts or 'nothing'}); "
            f"{report.working_memory_expired} working memories and "
            f"{report.candidates_expired} candidate facts expired."
        )
