"""manage.py reindex_memories: rebuild memories' blind indexes from their text (safe to rerun)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.models import User
from memoryhub.services.reindex import reindex_memories


class Command(BaseCommand):
    help = (
        "Recompute the blind index (word and speaker tokens) of every memory, or of one user's "
        "memories: once after an upgrade that adds speaker tokens."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", help="Only this user's memories (the user's id).")

    def handle(self, *args: Any, **options: Any) -> None:
        users = None
        if options["user"]:
            try:
                users = [User.objects.get(pk=options["user"])]
            except (User.DoesNotExist, ValidationError) as error:
                raise CommandError(f"No user with id {options['user']!r}.") from error
        report = reindex_memories(users=users)
        self.stdout.write(
            f"Reindex: {report.users} users, {report.examined} memories examined, "
            f"{report.changed} changed."
        )
