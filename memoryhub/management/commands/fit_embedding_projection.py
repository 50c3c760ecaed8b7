"""manage.py fit_embedding_projection: the Universal Sentence Encoder's 512 dimensions onto 384.

The `embedding` columns hold 384 dimensions, the Universal Sentence Encoder gives 512. The
projection keeps the first 384 right singular vectors of the model's vectors of a bilingual
corpus that ships with the project's own dependencies: the English and French interface texts
of Django and django-allauth (their `fr` message catalogues: each English text and its French
translation; BSD-3-Clause and MIT). Not centred, so a vector's direction is kept as the model
gave it. Deterministic: the same packages give the same matrix, written to
`memoryhub/use_projection.npz` (docs/retrieval.md).
"""

from __future__ import annotations

import gettext
from pathlib import Path
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand, CommandParser

from memoryhub.embeddings import DIMENSIONS, PROJECTION_PATH, UseMultilingualEmbedder

# Texts of at most this many characters (a few help texts are paragraphs of markup).
LONGEST = 300


def catalogue_paths() -> list[Path]:
    """The French message catalogues of Django (core and contrib) and of django-allauth."""
    import allauth
    import django

    paths = [
        *Path(django.__file__).parent.glob("**/locale/fr/LC_MESSAGES/django.mo"),
        *Path(allauth.__file__).parent.glob("locale/fr/LC_MESSAGES/django.mo"),
    ]
    return sorted(paths)


def corpus_texts(paths: list[Path]) -> list[str]:
    """Every English text and its French translation, each once, sorted."""
    texts: set[str] = set()
    for path in paths:
        with path.open("rb") as handle:
            catalogue: dict[Any, str] = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
        for source, translation in catalogue.items():
            english = source if isinstance(source, str) else source[0]
            for text in (english, translation):
                if isinstance(text, str) and text.strip() and len(text) <= LONGEST:
                    texts.add(text.strip())
    return sorted(texts)


def fit_projection(vectors: np.ndarray[Any, np.dtype[np.float32]]) -> np.ndarray[Any, Any]:
    """The (512, 384) matrix: the top right singular vectors, each signed so that its largest
    component is positive (an SVD may flip a vector's sign from one library to another)."""
    _, _, right = np.linalg.svd(vectors.astype(np.float64), full_matrices=False)
    basis = right[:DIMENSIONS]
    largest = np.argmax(np.abs(basis), axis=1)
    basis *= np.sign(basis[np.arange(DIMENSIONS), largest])[:, None]
    return basis.T.astype(np.float32)


class Command(BaseCommand):
    help = (
        "Fit the Universal Sentence Encoder's 512 -> 384 projection on Django's and allauth's "
        "English and French interface texts, and write it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, default=PROJECTION_PATH, help="the .npz to write")

    def handle(self, *args: Any, **options: Any) -> None:
        paths = catalogue_paths()
        texts = corpus_texts(paths)
        vectors = UseMultilingualEmbedder().embed_native(texts)
        matrix = fit_projection(vectors)
        pairs = np.triu_indices(len(vectors), 1)
        native = (vectors @ vectors.T)[pairs]
        projected = vectors @ matrix
        projected /= np.linalg.norm(projected, axis=1, keepdims=True)
        kept = (projected @ projected.T)[pairs]
        fidelity = float(np.corrcoef(native, kept)[0, 1])
        np.savez_compressed(options["out"], matrix=matrix)
        self.stdout.write(
            f"{len(texts)} texts from {len(paths)} catalogues; cosines after the projection "
            f"correlate {fidelity:.4f} with the model's own; written to {options['out']}"
        )
