"""manage.py bench_extraction: recall and forbidden-stored items of the extractors, by category.

Runs in a database of its own (`memoryhub_bench_extraction` by default), never the development
one. The offline extractor always runs; Claude only when ANTHROPIC_API_KEY is set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection

from bench.extraction.dataset import DATA_PATH, SPLITS, Conversation, load_conversations
from bench.extraction.runner import RESULTS_DIR, format_table, run_benchmark, write_report
from bench.retrieval import machine
from memoryhub.celery import app
from memoryhub.embeddings import Embedder, default_embedder
from memoryhub.extraction import Extractor
from memoryhub.extraction.anthropic import AnthropicExtractor
from memoryhub.extraction.offline import OfflineExtractor
from memoryhub.services.agents import get_or_create_workspace


class Command(BaseCommand):
    help = (
        "Benchmark extraction: labelled conversations through the write path, scored by category."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--data", type=Path, default=DATA_PATH, help="conversations.json")
        parser.add_argument("--database", default="memoryhub_bench_extraction")
        parser.add_argument("--split", choices=[*SPLITS, "all"], default="all")
        parser.add_argument("--ids", nargs="*", default=[], help="only these conversations")
        parser.add_argument("--skip-claude", action="store_true", help="offline extractor only")
        parser.add_argument("--out", type=Path, help="results folder (default bench/results)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        splits = SPLITS if options["split"] == "all" else (options["split"],)
        conversations = load_conversations(options["data"], splits=splits, ids=options["ids"])
        progress = not options["no_progress"]
        # One thread: the embedder is fastest that way on a small shared machine.
        torch.set_num_threads(1)
        embedder = default_embedder()
        # Ending a session queues its extraction; the bench runs it itself with the extractor
        # under test, so the queued copy must stay in this process, not reach a real worker.
        app.conf.broker_url = "memory://"
        app.conf.broker_transport_options = {}
        app.conf.task_always_eager = False
        creation = connection.creation
        # The test-database machinery gives a fresh, migrated database and switches to it.
        connection.settings_dict["TEST"] = {**connection.settings_dict.get("TEST", {})}
        connection.settings_dict["TEST"]["NAME"] = options["database"]
        original = connection.settings_dict["NAME"]
        creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
        report: dict[str, Any] = {
            "machine": machine(),
            "data": str(options["data"]),
            "split": options["split"],
            "extractors": {},
        }
        try:
            report["extractors"]["offline"] = self._run(
                "offline", OfflineExtractor, conversations, embedder, progress
            )
            if options["skip_claude"]:
                claude: dict[str, Any] = {"status": "not run", "reason": "--skip-claude"}
            elif not settings.ANTHROPIC_API_KEY:
                claude = {"status": "not run", "reason": "ANTHROPIC_API_KEY unset"}
            else:
                claude = self._run("claude", _claude, conversations, embedder, progress)
            report["extractors"]["claude"] = claude
            if claude["status"] != "run":
                self.stdout.write(f"\nClaude: not run ({claude['reason']})")
            path = write_report(report, options["out"] or RESULTS_DIR)
            self.stdout.write(f"\nResults written to {path}")
        finally:
            creation.destroy_test_db(original, verbosity=0)

    def _run(
        self,
        name: str,
        factory: Callable[[], Extractor],
        conversations: Sequence[Conversation],
        embedder: Embedder,
        progress: bool,
    ) -> dict[str, Any]:
        workspace = get_or_create_workspace(slug=f"bench-extraction-{name}")
        result, _ = run_benchmark(
            conversations,
            extractor_factory=factory,
            embedder=embedder,
            workspace=workspace,
            progress=progress,
        )
        self.stdout.write(format_table(name, result))
        return result


def _claude() -> Extractor:
    return AnthropicExtractor(
        api_key=settings.ANTHROPIC_API_KEY or "",
        model=settings.MEMORYHUB_EXTRACTION_MODEL,
        base_url=settings.ANTHROPIC_BASE_URL,
        timeout=float(settings.MEMORYHUB_LLM_TIMEOUT_SECONDS),
        max_retries=settings.MEMORYHUB_LLM_MAX_RETRIES,
    )
