"""manage.py verify_audit: check the audit hash chain; exit 1 at the first broken link."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand

from memoryhub.services.audit import verify_chain


class Command(BaseCommand):
    help = "Verify the access audit's HMAC chain. Exit status 0: intact; 1: broken."

    def handle(self, *args: Any, **options: Any) -> None:
        report = verify_chain()
        if report.is_intact:
            self.stdout.write(f"Audit chain intact: {report.rows_checked} row(s) checked.")
            return
        self.stdout.write(
            f"Audit chain broken at row {report.first_broken_id}: {report.reason} "
            f"({report.rows_checked} row(s) before it are intact)."
        )
        sys.exit(1)
