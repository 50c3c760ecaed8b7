"""manage.py bench_extraction: recall and forbidden-stored items of the extractors, by category.

The project's own conversations run in a database of its own (`memoryhub_bench_extraction` by
default), never the development one. With `--locomo`, LoCoMo's observations are the labels
instead (bench/extraction/locomo.py; no database). The offline extractor always runs unless
`--extractor anthropic`; Claude only when ANTHROPIC_API_KEY is set (asked for by name without
a key, the command says so and exits).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from bench.extraction import locomo
from bench.extraction.dataset import DATA_PATH, SPLITS, Conversation, load_conversations
from bench.extraction.runner import RESULTS_DIR, format_table, run_benchmark, write_report
from bench.retrieval import machine
from memoryhub.celery import app
from memoryhub.embeddings import MINILM, Embedder, default_embedder, embedder_for
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
        parser.add_argument(
            "--extractor",
            choices=["offline", "anthropic", "all"],
            default="all",
            help="all: offline, and Claude when ANTHROPIC_API_KEY is set",
        )
        parser.add_argument(
            "--locomo", action="store_true", help="score against LoCoMo's observations instead"
        )
        parser.add_argument("--locomo-data", type=Path, default=locomo.DATA_PATH)
        parser.add_argument(
            "--conversations",
            choices=[*locomo.SPLIT_NAMES, "all"],
            default="all",
            help="LoCoMo: tuning (1-5), held_out (6-10) or all",
        )
        parser.add_argument(
            "--limit", type=int, default=0, help="LoCoMo: at most this many sessions per part"
        )
        parser.add_argument("--threshold", type=float, default=locomo.MATCH_THRESHOLD)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["extractor"] == "anthropic" and not settings.ANTHROPIC_API_KEY:
            raise CommandError(
                "ANTHROPIC_API_KEY is not set: the anthropic extractor cannot run. "
                "Set it, or run --extractor offline."
            )
        if options["skip_claude"]:
            options["extractor"] = "offline"
        if options["locomo"]:
            self._locomo(options)
            return
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
            if options["extractor"] != "anthropic":
                report["extractors"]["offline"] = self._run(
                    "offline", OfflineExtractor, conversations, embedder, progress
                )
            if options["extractor"] == "offline":
                claude: dict[str, Any] = {"status": "not run", "reason": "--extractor offline"}
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

    def _locomo(self, options: dict[str, Any]) -> None:
        parts = locomo.SPLIT_NAMES
        chosen = parts if options["conversations"] == "all" else [options["conversations"]]
        sessions = []
        for part in chosen:
            loaded = locomo.load_speaker_sessions(parts[part], options["locomo_data"])
            sessions.extend(loaded[: options["limit"]] if options["limit"] else loaded)
        torch.set_num_threads(1)
        # The match threshold was chosen on MiniLM's cosine: scored with MiniLM whatever model
        # the deployment stores memories with.
        embedder = embedder_for(MINILM)
        names = (
            ["offline", "anthropic"] if options["extractor"] == "all" else [options["extractor"]]
        )
        for name in names:
            if name == "anthropic" and not settings.ANTHROPIC_API_KEY:
                self.stdout.write("\nClaude: not run (ANTHROPIC_API_KEY unset)")
                continue
            factory: Callable[[], Extractor] = OfflineExtractor if name == "offline" else _claude
            started = time.perf_counter()
            runs = locomo.extract_sessions(sessions, factory, progress=not options["no_progress"])
            report = locomo.score_runs(runs, embedder, threshold=options["threshold"])
            report = {
                "machine": machine(),
                "data": str(options["locomo_data"]),
                "extractor": name,
                "seconds": round(time.perf_counter() - started, 1),
                **report,
            }
            self.stdout.write(locomo.format_table(name, report))
            path = locomo.write_report(report, name, options["out"] or locomo.RESULTS_DIR)
            self.stdout.write(f"Results written to {path}")

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
