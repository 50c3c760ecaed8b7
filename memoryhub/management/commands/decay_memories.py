"""manage.py decay_memories: recompute decay priorities and dormancy (safe to run twice)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memoryhub.services.decay import decay_memories


class Command(BaseCommand):
    help = "Lower the priority of memories nobody uses and mark the oldest dormant."

    def handle(self, *args: Any, **options: Any) -> None:
        report = decay_memories()
        self.stdout.write(
            f"Decay: {report.examined} memories examined, {report.changed} changed, "
            f"{report.dormant} dormant."
        )
