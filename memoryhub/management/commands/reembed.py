"""manage.py reembed: embed every stored vector again with the configured model (a switch)."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from memoryhub.embeddings import MODELS, embedder_for
from memoryhub.services.reembed import BATCH, reembed, remaining_rows


class Command(BaseCommand):
    help = (
        "Re-embed memories, messages, knowledge chunks and candidates that another model "
        "embedded, with MEMORYHUB_EMBEDDING_MODEL (or --model). Batched, resumable, safe while "
        "agents read and write; run it again after an interruption."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--model",
            help=f"Target model (default: MEMORYHUB_EMBEDDING_MODEL). One of: {', '.join(MODELS)}.",
        )
        parser.add_argument("--batch", type=int, default=BATCH, help="Rows per page.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Only count what is left to re-embed."
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        model = options["model"] or settings.MEMORYHUB_EMBEDDING_MODEL
        if model not in MODELS:
            raise CommandError(f"Unknown model {model!r}; known: {', '.join(MODELS)}.")
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1.")
        left = remaining_rows(model)
        total = sum(left.values())
        self.stdout.write(f"Left to re-embed with {model}: {_counts(left)} ({total} in all).")
        if options["dry_run"] or total == 0:
            return
        if model != settings.MEMORYHUB_EMBEDDING_MODEL:
            self.stdout.write(
                f"Note: the application embeds with {settings.MEMORYHUB_EMBEDDING_MODEL}; set "
                f"MEMORYHUB_EMBEDDING_MODEL={model} too, or its searches keep the old vectors."
            )
        embedder = embedder_for(model)
        started = time.monotonic()
        # tqdm shows the rate and the time left; its total is an estimate: rows written while
        # this runs, or edited during a page, make it a little longer.
        with tqdm(
            total=total, unit="row", desc="re-embedding", disable=options["no_progress"]
        ) as bar:
            report = reembed(
                embedder=embedder,
                batch=options["batch"],
                on_page=lambda _table, rows: bar.update(rows),
            )
        elapsed = time.monotonic() - started
        done = sum(report.embedded.values())
        rate = done / elapsed if elapsed > 0 else 0.0
        self.stdout.write(
            f"Re-embedded {_counts(report.embedded)} in {elapsed:.0f} s ({rate:.0f} rows/s)."
        )
        left_after = sum(report.remaining.values())
        if left_after:
            self.stdout.write(
                f"Still left: {_counts(report.remaining)} (unreadable: {_counts(report.skipped)}; "
                "written while this ran: run it again)."
            )
        else:
            self.stdout.write(f"Every stored vector is now of {model}.")


def _counts(figures: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in figures.items())
