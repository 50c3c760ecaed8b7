"""manage.py consolidate_memories: fold episodes into themes, merge duplicate facts."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memoryhub.services.consolidate import consolidate_all


class Command(BaseCommand):
    help = "Group related episodes into themes and merge near-duplicate facts, losing none."

    def handle(self, *args: Any, **options: Any) -> None:
        report = consolidate_all()
        self.stdout.write(
            f"Consolidation: {report.themes} theme(s) covering {report.episodes} episode(s); "
            f"{report.facts_merged} duplicate fact(s) merged."
        )
