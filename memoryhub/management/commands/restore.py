"""manage.py restore: a backup into a fresh, empty database, then checked with its keys."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.backup import BackupError, read_keys_file, restore_backup


class Command(BaseCommand):
    help = (
        "Restore a backup made by `manage.py backup` into an empty database, after checking "
        "that the given keys are the backup's (nothing is written otherwise); then decrypt "
        "every memory and verify the audit chains on the restored database."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("backup", type=Path, help="the backup folder (memoryhub-…)")
        parser.add_argument(
            "--database-url", required=True, help="postgresql:// URL of the empty target database"
        )
        parser.add_argument(
            "--keys",
            type=Path,
            help="the keys file written with the backup (default: this process's settings)",
        )
        parser.add_argument("--pg-bin", type=Path, help="folder of pg_restore (default: embedded)")

    def handle(self, *args: Any, **options: Any) -> None:
        keys = self._keys(Path(options["keys"]) if options["keys"] else None)
        try:
            manifest = restore_backup(
                folder=Path(options["backup"]),
                target_url=options["database_url"],
                master_keys=keys["MEMORYHUB_MASTER_KEYS"],
                audit_key=keys["MEMORYHUB_AUDIT_KEY"],
                pg_bin=Path(options["pg_bin"]) if options["pg_bin"] else None,
            )
        except BackupError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"Restored the backup of {manifest.created_at} into the target.")
        # The check runs as the restored deployment will: a process on that database and keys.
        check = subprocess.run(  # noqa: S603  # Our own interpreter and manage.py.
            [sys.executable, "manage.py", "verify_restore", str(options["backup"])],
            cwd=settings.BASE_DIR,
            env={**os.environ, **keys, "DATABASE_URL": options["database_url"]},
            capture_output=True,
            text=True,
            check=False,
        )
        self.stdout.write(check.stdout.rstrip())
        if check.returncode != 0:
            raise CommandError(f"the restored database failed its check: {check.stderr.strip()}")

    def _keys(self, path: Path | None) -> dict[str, str]:
        if path is None:
            return {
                "MEMORYHUB_MASTER_KEYS": settings.MEMORYHUB_MASTER_KEYS,
                "MEMORYHUB_AUDIT_KEY": settings.MEMORYHUB_AUDIT_KEY,
                "SECRET_KEY": settings.SECRET_KEY,
            }
        try:
            keys = read_keys_file(path)
        except BackupError as error:
            raise CommandError(str(error)) from None
        missing = [
            name
            for name in ("MEMORYHUB_MASTER_KEYS", "MEMORYHUB_AUDIT_KEY", "SECRET_KEY")
            if not keys.get(name)
        ]
        if missing:
            raise CommandError(
                f"the keys file {path} lacks {', '.join(missing)}; nothing was restored"
            )
        return keys
