"""manage.py train_extraction_model: rebuild the offline extractor's learned decision from LoCoMo.

Reads LoCoMo conversations 1-5 in place (never 6-10, the held-out part) and writes
memoryhub/extraction/statement_model.npz plus a training report under bench/results/.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from django.core.management.base import BaseCommand, CommandError, CommandParser

from bench.extraction import locomo, training
from memoryhub.embeddings import default_embedder
from memoryhub.extraction.statements import MODEL_PATH, save_statement_model
from memoryhub.extraction.token_vectors import token_mean_embedder


class Command(BaseCommand):
    help = "Train the offline extractor's learned decision on LoCoMo conversations 1-5."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--locomo-data", type=Path, default=locomo.DATA_PATH)
        parser.add_argument("--out", type=Path, default=MODEL_PATH, help="the .npz to write")
        parser.add_argument("--threshold", type=float, help="default: chosen by cross-validation")
        parser.add_argument(
            "--features",
            choices=("token-mean", "minilm"),
            default="token-mean",
            help="the sentence vectors the weights read: MiniLM's token means (shipped) or the "
            "full model's",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["locomo_data"].is_file():
            raise CommandError(f"LoCoMo data not found at {options['locomo_data']}")
        torch.set_num_threads(1)
        labeller = default_embedder()
        model, report = training.train(
            labeller,
            options["locomo_data"],
            threshold=options["threshold"],
            features_from=token_mean_embedder() if options["features"] == "token-mean" else None,
        )
        save_statement_model(model, options["out"])
        locomo.RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        path = locomo.RESULTS_DIR / "extraction-model-training.json"
        path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        for row in report["cross_validated_curve"]:
            self.stdout.write(
                f"threshold {row['threshold']:.3f}: kept {row['kept']:>5}, "
                f"evidence precision {row['evidence_precision']}, recall {row['recall']}"
            )
        self.stdout.write(
            f"model {model.version}, threshold {model.threshold}, samples {report['samples']}\n"
            f"written to {options['out']} ({options['out'].stat().st_size} bytes); report {path}"
        )
