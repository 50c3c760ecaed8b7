"""manage.py bench_retrieval: LoCoMo recall, latency at scale, ingestion and token economy.

Runs in a database of its own (`memoryhub_bench` by default), never the development one: it
fills it with a million synthetic memories. The LoCoMo file is read in place, never copied.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from bench.growth import measure_growth
from bench.load_report import code_version
from bench.load_stack import base_database_url, database_url
from bench.locomo import DEFAULT_DATA_PATH, load_locomo
from bench.memoryhub_retriever import CachedEmbedder
from bench.metrics import format_table
from bench.retrieval import (
    RESULTS_DIR,
    format_report,
    machine,
    run_locomo,
    speed_probe,
    token_economy,
    write_report,
)
from bench.scale import measure_ingestion, measure_latency, populate_other_users
from bench.web_memory import measure_web_memory
from memoryhub.embeddings import default_embedder
from memoryhub.services.agents import get_or_create_workspace


class Command(BaseCommand):
    help = (
        "Benchmark retrieval: LoCoMo recall vs BM25 and MiniLM, latency at 1M memories, ingestion."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH, help="locomo10.json")
        parser.add_argument("--database", default="memoryhub_bench", help="bench database name")
        parser.add_argument(
            "--keep-db",
            action="store_true",
            help="keep the bench database (and reuse it next time)",
        )
        parser.add_argument("--others", type=int, default=1_000_000, help="synthetic memories")
        parser.add_argument("--conversations", type=int, help="only the first N conversations")
        parser.add_argument("--latency-queries", type=int, default=300)
        parser.add_argument("--skip-locomo", action="store_true")
        parser.add_argument("--skip-scale", action="store_true")
        parser.add_argument(
            "--skip-growth", action="store_true", help="no growth curve (1k, 10k, 100k memories)"
        )
        parser.add_argument(
            "--growth-only",
            action="store_true",
            help="the growth curve alone (no LoCoMo recall, no latency or ingestion at 1k)",
        )
        parser.add_argument(
            "--growth-queries", type=int, default=100, help="LoCoMo questions per growth user"
        )
        parser.add_argument(
            "--recall-only",
            action="store_true",
            help="LoCoMo: MemoryHub's recall alone (no baselines, no token economy)",
        )
        parser.add_argument(
            "--embedding-cache",
            type=Path,
            help="keep LoCoMo's vectors in this file between runs (outside the repo: e.g. "
            "$MEMORYHUB_DATA_DIR/bench/locomo-vectors.npz)",
        )
        parser.add_argument("--out", type=Path, help="results folder (default bench/results)")
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument(
            "--embedding-threads",
            type=int,
            default=1,
            help="torch threads (MEMORYHUB_EMBEDDING_RUNTIME=torch only; 0: one per core)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        data: Path = options["data"]
        if not data.is_file():
            raise CommandError(f"no LoCoMo file at {data}; pass --data")
        conversations = load_locomo(data)[: options["conversations"]]
        progress = not options["no_progress"]
        if options["growth_only"]:
            options.update(skip_locomo=True, skip_scale=True, skip_growth=False)
        embedder = default_embedder()
        runtime = settings.MEMORYHUB_EMBEDDING_RUNTIME
        threads: int | None = None
        if runtime == "torch":
            import torch

            if options["embedding_threads"]:
                # On a busy 2-core machine two spinning OpenMP threads make one short query take
                # ~700 ms instead of ~60 ms: a request embeds one sentence, one thread is enough.
                torch.set_num_threads(options["embedding_threads"])
            threads = torch.get_num_threads()
        creation = connection.creation
        # The test-database machinery gives a fresh, migrated database and switches to it.
        connection.settings_dict["TEST"] = {**connection.settings_dict.get("TEST", {})}
        connection.settings_dict["TEST"]["NAME"] = options["database"]
        original = connection.settings_dict["NAME"]
        creation.create_test_db(
            verbosity=0, autoclobber=True, serialize=False, keepdb=options["keep_db"]
        )
        report: dict[str, Any] = {
            "machine": {
                **machine(),
                "embedding_runtime": runtime,
                # ONNX Runtime: one thread for a query, one per core for a batch (embeddings.py).
                "embedding_threads": threads,
            },
            "data": str(data),
            "code": code_version(settings.BASE_DIR),
        }
        try:
            report["speed_probe"] = {"start": speed_probe()}
            if not options["skip_locomo"]:
                result, memoryhub = run_locomo(
                    conversations,
                    embedder=embedder,
                    progress=progress,
                    with_baselines=not options["recall_only"],
                    embedding_cache=options["embedding_cache"],
                )
                report["locomo"] = result
                self.stdout.write(format_table(result))
                if not options["recall_only"]:
                    report["token_economy"] = token_economy(
                        conversations, memoryhub, embedder=embedder, progress=progress
                    )
            if not options["skip_scale"]:
                populate_other_users(total=options["others"], progress=progress)
                turns = [t.text for c in conversations for t in c.turns][:1000]
                questions = [q.question for c in conversations for q in c.questions]
                figures, scale_user = measure_ingestion(
                    texts=turns,
                    single=100,
                    embedder=embedder,
                    workspace=get_or_create_workspace(slug="bench-scale"),
                )
                report["ingestion"] = figures
                report["latency"] = measure_latency(
                    scale_user=scale_user,
                    queries=questions[: options["latency_queries"]],
                    embedder=embedder,
                    progress=progress,
                )
                report["web_memory"] = measure_web_memory(
                    database_url=database_url(
                        base_database_url(), connection.settings_dict["NAME"]
                    ),
                    agent_key=scale_user.agent_key,
                    user=str(scale_user.user.pk),
                    mode=scale_user.mode.slug,
                    query=questions[0],
                )
            if not options["skip_growth"]:
                populate_other_users(total=options["others"], progress=progress)
                turns = [t.text for c in conversations for t in c.turns]
                cached = CachedEmbedder(embedder, path=options["embedding_cache"])
                vectors = np.asarray(cached.embed(turns), dtype=np.float32)
                cached.save()
                report["growth"] = measure_growth(
                    texts=turns,
                    vectors=vectors,
                    queries=[q.question for c in conversations for q in c.questions][
                        : options["growth_queries"]
                    ],
                    embedder=embedder,
                    progress=progress,
                )
            report["machine"]["load_average_after"] = machine()["load_average"]
            report["speed_probe"]["end"] = speed_probe()
            self.stdout.write(format_report(report))
            path = write_report(
                report,
                options["out"] or RESULTS_DIR,
                name="retrieval-growth" if options["growth_only"] else "retrieval",
            )
            self.stdout.write(f"Results written to {path}")
        finally:
            if not options["keep_db"]:
                creation.destroy_test_db(original, verbosity=0)
