"""manage.py verify_restore: on a restored database, decrypt every memory and verify the audit."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.backup import BackupError, Manifest, verify_restored_database


class Command(BaseCommand):
    help = (
        "Check the database this process uses against a backup's manifest: the same counts, "
        "every data key opens and every memory decrypts with the configured master keys, and "
        "the audit chains verify up to the head the backup recorded. Exit 1 on any problem."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("backup", type=Path, help="the backup folder (for its manifest)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            manifest = Manifest.read(Path(options["backup"]))
        except BackupError as error:
            raise CommandError(str(error)) from None
        check = verify_restored_database(manifest)
        self.stdout.write(
            f"{check.memories_decrypted} memories decrypted with {check.keys_opened} user data "
            f"key(s); audit chain intact over {check.audit_rows_checked} row(s) up to the "
            "backup's head."
            if check.is_sound
            else "Restore check failed: " + "; ".join(check.problems)
        )
        if not check.is_sound:
            sys.exit(1)
