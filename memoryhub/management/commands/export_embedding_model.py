"""manage.py export_embedding_model: write the ONNX graph of the shipped MiniLM under DATA_DIR."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memoryhub.embeddings import export_onnx_model


class Command(BaseCommand):
    help = "Export the embedding model to ONNX from the installed weights (once; run by setup)."

    def handle(self, *args: Any, **options: Any) -> None:
        # Each export revision is its own ~90 MB file; setup keeps only the current one.
        path = export_onnx_model(remove_stale=True)
        self.stdout.write(f"Embedding model: {path}")
