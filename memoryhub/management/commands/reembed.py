"""manage.py reembed: embed stored vectors again with their workspace's model (a switch)."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import QuerySet
from tqdm import tqdm

from memoryhub.actors import Actor
from memoryhub.embeddings import MODELS, embedder_for, workspace_model
from memoryhub.errors import InvalidInputError
from memoryhub.models import Workspace
from memoryhub.services.reembed import (
    BATCH,
    choose_embedding_model,
    following_default,
    only,
    reembed,
    remaining_rows,
)

# With --workspace, the --model that puts a workspace back on the deployment's default.
DEFAULT = "default"


class Command(BaseCommand):
    help = (
        "Re-embed memories, messages, knowledge chunks and candidates that another model "
        "embedded. Without --workspace: the workspaces that follow the deployment's default, "
        "with MEMORYHUB_EMBEDDING_MODEL (or --model). With --workspace: that workspace's rows, "
        "with its model (--model chooses it first). Batched, resumable, safe while agents read "
        "and write; run it again after an interruption."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--model",
            help=(
                "Target model. Without --workspace: default MEMORYHUB_EMBEDDING_MODEL. With "
                f"--workspace: set as the workspace's model first ('{DEFAULT}': back to the "
                f"deployment's). One of: {', '.join(MODELS)}."
            ),
        )
        parser.add_argument(
            "--workspace", help="Slug of the one workspace to re-embed (to its own model)."
        )
        parser.add_argument("--batch", type=int, default=BATCH, help="Rows per page.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Only count what is left to re-embed."
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1.")
        if options["workspace"]:
            model, workspaces = self._one_workspace(options["workspace"], options["model"])
            whose = f"workspace {options['workspace']}"
        else:
            model = options["model"] or settings.MEMORYHUB_EMBEDDING_MODEL
            if model not in MODELS:
                raise CommandError(f"Unknown model {model!r}; known: {', '.join(MODELS)}.")
            workspaces = following_default()
            whose = "the workspaces on the deployment's default"
        left = remaining_rows(model, workspaces=workspaces)
        total = sum(left.values())
        self.stdout.write(
            f"Left to re-embed with {model} in {whose}: {_counts(left)} ({total} in all)."
        )
        if options["dry_run"] or total == 0:
            return
        if not options["workspace"] and model != settings.MEMORYHUB_EMBEDDING_MODEL:
            self.stdout.write(
                f"Note: the application embeds with {settings.MEMORYHUB_EMBEDDING_MODEL}; set "
                f"MEMORYHUB_EMBEDDING_MODEL={model} too, or its searches keep the old vectors."
            )
        started = time.monotonic()
        # tqdm shows the rate and the time left; its total is an estimate: rows written while
        # this runs, or edited during a page, make it a little longer.
        with tqdm(
            total=total, unit="row", desc="re-embedding", disable=options["no_progress"]
        ) as bar:
            report = reembed(
                embedder=embedder_for(model),
                workspaces=workspaces,
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
            self.stdout.write(f"Every stored vector is now of {model} ({whose}).")

    def _one_workspace(self, slug: str, model: str | None) -> tuple[str, QuerySet[Workspace]]:
        workspace = Workspace.objects.filter(slug=slug).first()
        if workspace is None:
            raise CommandError(f"No workspace {slug!r}.")
        if model is not None:
            try:
                choose_embedding_model(
                    workspace=workspace,
                    model="" if model == DEFAULT else model,
                    actor=Actor.system("manage.py reembed"),
                )
            except InvalidInputError as error:
                raise CommandError(
                    f"Unknown model {model!r}; known: {', '.join(MODELS)}."
                ) from error
            self.stdout.write(f"Workspace {slug} now embeds with {workspace_model(workspace)}.")
        return workspace_model(workspace), only(workspace)


def _counts(figures: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in figures.items())
