"""manage.py verify_audit: check the audit log's hash chains; exit 1 at the first broken link."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.audit.log import ChainHead, verify_chain
from memoryhub.metrics import record_audit_verification


class Command(BaseCommand):
    help = (
        "Verify the access audit's HMAC chains (one per user). Exit status 0: intact; 1: "
        "broken. Prints the chain head: keep it outside the database and pass it back with "
        "--expect-head to also detect rows removed from the end of any chain."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--expect-head",
            metavar="ID:HASH",
            help="a head printed by an earlier run: no chain may have lost rows up to it",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        anchor = None
        if options["expect_head"]:
            try:
                anchor = ChainHead.parse(options["expect_head"])
            except ValueError as error:
                raise CommandError(str(error)) from None
        report = verify_chain(anchor=anchor)
        record_audit_verification(
            is_intact=report.is_intact,
            rows_checked=report.rows_checked,
            chains_checked=report.chains_checked,
        )
        if report.is_intact:
            self.stdout.write(
                f"Audit chain intact: {report.rows_checked} row(s) in "
                f"{report.chains_checked} chain(s) checked."
            )
            if anchor is not None:
                self.stdout.write(f"Anchor {anchor.row_id} found with its hash.")
            if report.head is not None:
                self.stdout.write(f"Chain head: {report.head}")
            return
        if report.first_broken_id is None:
            self.stdout.write(f"Audit chain broken: {report.reason}.")
        else:
            self.stdout.write(
                f"Audit chain broken at row {report.first_broken_id}: {report.reason} "
                f"({report.rows_checked} row(s) before it are intact)."
            )
        sys.exit(1)
