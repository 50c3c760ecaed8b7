"""manage.py bench_bilingual: every embedding model side by side, in French and in English.

For each model (`memoryhub/embeddings.py` MODELS), in one run and one database of its own: the
bilingual benchmark (bench/bilingual.py, tuning and held-out halves), the query embedding p50,
batch throughput, `remember_many` per second, and LoCoMo recall (codes 1-4 R@10, MemoryHub's own
search). The speed figures of the models are taken in turns, twice, so a change in the shared
machine's load hits each alike; the load averages are in the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from bench.bilingual import (
    format_bilingual,
    load_facts,
    measure_remember_many,
    measure_speed,
    run_bilingual,
    write_bilingual,
)
from bench.load_report import code_version
from bench.locomo import DEFAULT_DATA_PATH, load_locomo
from bench.retrieval import RESULTS_DIR, machine, run_locomo, speed_probe
from memoryhub.embeddings import MODELS, embedder_for


class Command(BaseCommand):
    help = "Benchmark every embedding model: French/English recall, speed and LoCoMo."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--models", nargs="+", default=list(MODELS), help=f"Of: {', '.join(MODELS)}."
        )
        parser.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH, help="locomo10.json")
        parser.add_argument(
            "--conversations", type=int, default=10, help="LoCoMo conversations (0: skip LoCoMo)"
        )
        parser.add_argument("--database", default="memoryhub_bench_bilingual")
        parser.add_argument("--out", type=Path, help="results folder (default bench/results)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        unknown = [model for model in options["models"] if model not in MODELS]
        if unknown:
            raise CommandError(
                f"unknown model(s): {', '.join(unknown)}; known: {', '.join(MODELS)}"
            )
        conversations = []
        if options["conversations"]:
            if not options["data"].is_file():
                raise CommandError(f"no LoCoMo file at {options['data']}; pass --data")
            conversations = load_locomo(options["data"])[: options["conversations"]]
        facts = load_facts()
        questions = [fact.question[language] for fact in facts for language in ("en", "fr")]
        turns = [turn.text for c in conversations for turn in c.turns][:500] or [
            fact.text[language] for fact in facts for language in ("en", "fr")
        ]
        creation = connection.creation
        connection.settings_dict["TEST"] = {**connection.settings_dict.get("TEST", {})}
        connection.settings_dict["TEST"]["NAME"] = options["database"]
        original = connection.settings_dict["NAME"]
        creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
        report: dict[str, Any] = {
            "benchmark": "bilingual",
            "machine": machine(),
            "code": code_version(settings.BASE_DIR),
            "default_model": settings.MEMORYHUB_EMBEDDING_MODEL,
            "models": {model: {} for model in options["models"]},
        }
        try:
            report["speed_probe"] = {"start": speed_probe()}
            embedders = {model: embedder_for(model) for model in options["models"]}
            rounds: dict[str, list[dict[str, Any]]] = {model: [] for model in embedders}
            for number in range(2):
                order = list(embedders) if number == 0 else list(reversed(embedders))
                for model in order:
                    speed = measure_speed(embedders[model], queries=questions, texts=turns[:256])
                    speed.update(measure_remember_many(embedders[model], texts=turns[:300]))
                    rounds[model].append(speed)
            for model, embedder in embedders.items():
                figures = report["models"][model]
                best = min(rounds[model], key=lambda speed: speed["query_p50_ms"])
                figures["speed"] = best
                figures["ingestion"] = {
                    "remember_many_per_second": max(
                        speed["remember_many_per_second"] for speed in rounds[model]
                    )
                }
                figures["speed_rounds"] = rounds[model]
                figures["bilingual"] = run_bilingual(embedder)
                if conversations:
                    result, _ = run_locomo(
                        conversations,
                        embedder=embedder,
                        progress=not options["no_progress"],
                        with_baselines=False,
                    )
                    memoryhub = result["retrievers"]["memoryhub"]
                    figures["locomo_codes_1_4_recall_at_10"] = memoryhub["groups"]["1-4"][
                        "metrics"
                    ]["recall_at_10"]
                    figures["locomo"] = memoryhub
            report["machine"]["load_average_after"] = machine()["load_average"]
            report["speed_probe"]["end"] = speed_probe()
            self.stdout.write(format_bilingual(report))
            self.stdout.write(
                f"Load average before {report['machine']['load_average']}, "
                f"after {report['machine']['load_average_after']}."
            )
            path = write_bilingual(report, options["out"] or RESULTS_DIR)
            self.stdout.write(f"Results written to {path}")
        finally:
            creation.destroy_test_db(original, verbosity=0)
