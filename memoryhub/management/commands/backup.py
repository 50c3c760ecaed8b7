"""manage.py backup: a consistent dump of the database, and the keys written somewhere else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.backup import BackupError, create_backup


class Command(BaseCommand):
    help = (
        "Dump the database (pg_dump, one consistent snapshot) into a new folder under --to, "
        "and write the master, audit and secret keys to a file under --keys-to. Keep the two "
        "apart: the dump without the keys is unreadable, the keys without the dump hold nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--to", type=Path, required=True, help="folder for the dump")
        parser.add_argument(
            "--keys-to", type=Path, required=True, help="another folder (or medium) for the keys"
        )
        parser.add_argument(
            "--pg-bin",
            type=Path,
            help="folder of pg_dump matching the server (default: the embedded install's)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = create_backup(
                destination=Path(options["to"]),
                keys_destination=Path(options["keys_to"]),
                pg_bin=Path(options["pg_bin"]) if options["pg_bin"] else None,
            )
        except BackupError as error:
            raise CommandError(str(error)) from None
        counts = ", ".join(f"{value} {name}" for name, value in result.manifest.counts.items())
        self.stdout.write(
            f"Backup written to {result.folder} in {result.seconds:.1f} s ({counts})."
        )
        self.stdout.write(f"Keys written to {result.keys_file} (mode 0600).")
        if result.manifest.audit_head:
            self.stdout.write(f"Audit chain head at the backup: {result.manifest.audit_head}")
        self.stdout.write(
            "\nNow:\n"
            f"  1. Move {result.keys_file} into your secret store (or onto another medium), away\n"
            "     from the dump: whoever holds both reads every memory; without the keys the\n"
            "     dump can never be read. Delete it from this machine afterwards.\n"
            f"  2. Copy {result.folder} to backup storage (it is ciphertext and metadata).\n"
            "  3. To restore, into a fresh empty database:\n"
            f"     manage.py restore {result.folder} --database-url postgresql://… "
            "--keys <the keys file>\n"
        )
