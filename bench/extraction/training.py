"""Train the learned decision (memoryhub/extraction/statements.py) on LoCoMo conversations 1-5.

Labels come from LoCoMo's human-checked observations, never from text the team wrote. Each user
sentence the model may see (`statements.is_candidate`) of a speaker's turns is labelled:

- durable (1), with the observation's kind, when it is the sentence of an observation's
  evidence turn most similar to that observation;
- not durable (0) when its turn is the evidence of no observation of the speaker;
- left out when its turn is evidence but another of its sentences carries the observation.

Logistic regressions fitted by Newton's method (iteratively reweighted least squares) in numpy:
no training dependency, and the same data gives the same weights. The threshold is chosen on
predictions for each conversation from a model trained on the other four.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.extraction.locomo import TUNING, SpeakerSession, load_speaker_sessions
from memoryhub.embeddings import Embedder
from memoryhub.extraction.sentences import split_sentences
from memoryhub.extraction.statements import (
    FEATURE_NAMES,
    LEARNED_KINDS,
    StatementModel,
    feature_matrix,
    is_candidate,
)

L2 = 1.0
# Precision first: the threshold is the lowest whose cross-validated evidence precision
# reaches this (a wrong memory costs more than a missed one).
PRECISION_FLOOR = 0.80
THRESHOLDS = tuple(round(0.2 + 0.025 * step, 3) for step in range(25))
LICENCE = "CC BY-NC 4.0 (LoCoMo, Maharana et al. 2024): the weights derive from it; non-commercial"


@dataclass(frozen=True)
class Sample:
    conversation: int
    sentence: str
    # 1 durable, 0 not, -1 left out.
    label: int
    kind: str
    is_evidence: bool


def label_samples(
    sessions: Sequence[SpeakerSession], embedder: Embedder
) -> tuple[list[Sample], np.ndarray]:
    """The candidate sentences of each speaker's turns with their labels, and their embeddings."""
    raw: list[tuple[SpeakerSession, str, str]] = []
    for session in sessions:
        for message in session.transcript.messages:
            if message.role != "user":
                continue
            for start, end in split_sentences(message.content):
                sentence = message.content[start:end]
                if is_candidate(sentence):
                    raw.append((session, message.id, sentence))
    vectors = np.asarray(embedder.embed([sentence for _, _, sentence in raw]), dtype=np.float64)
    observations = [(s, o) for s in sessions for o in s.observations]
    observation_vectors = np.asarray(
        embedder.embed([o.as_user for _, o in observations]), dtype=np.float64
    )
    by_turn: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, (session, turn, _) in enumerate(raw):
        by_turn[(session.key, turn)].append(index)
    labels = [0] * len(raw)
    kinds = [""] * len(raw)
    evidence: set[tuple[str, str]] = set()
    for row, (session, observation) in enumerate(observations):
        indices = [i for t in observation.evidence for i in by_turn.get((session.key, t), [])]
        evidence.update((session.key, t) for t in observation.evidence)
        if indices:
            best = indices[int(np.argmax(vectors[indices] @ observation_vectors[row]))]
            if labels[best] != 1:
                labels[best], kinds[best] = 1, observation.kind
    samples = []
    for index, (session, turn, sentence) in enumerate(raw):
        is_evidence = (session.key, turn) in evidence
        label = labels[index] if labels[index] == 1 or not is_evidence else -1
        samples.append(Sample(session.conversation, sentence, label, kinds[index], is_evidence))
    return samples, vectors


def fit_logistic(features: np.ndarray, targets: np.ndarray, *, l2: float = L2) -> np.ndarray:
    """L2-regularised logistic regression by Newton steps; the last weight is the bias."""
    design = np.hstack([features, np.ones((len(features), 1))])
    weights = np.zeros(design.shape[1])
    penalty = np.full(design.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(30):
        probabilities = 1.0 / (1.0 + np.exp(-(design @ weights)))
        gradient = design.T @ (probabilities - targets) + penalty * weights
        curvature = probabilities * (1 - probabilities)
        hessian = (design.T * curvature) @ design + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-6:
            break
    return weights


def fit_model(samples: Sequence[Sample], features: np.ndarray, threshold: float) -> StatementModel:
    """The durable model on every labelled sample, the kind models on the durable ones."""
    labelled = np.array([s.label >= 0 for s in samples])
    targets = np.array([float(s.label == 1) for s in samples])
    durable = fit_logistic(features[labelled], targets[labelled])
    positives = np.array([s.label == 1 for s in samples])
    kind_rows = []
    for kind in LEARNED_KINDS:
        kind_targets = np.array([float(s.kind == kind) for s in samples])[positives]
        kind_rows.append(fit_logistic(features[positives], kind_targets))
    kind_weights = np.array(kind_rows)
    return StatementModel(
        version="",
        weights=durable[:-1],
        bias=float(durable[-1]),
        kind_weights=kind_weights[:, :-1],
        kind_bias=kind_weights[:, -1],
        threshold=threshold,
    )


def cross_validate(samples: Sequence[Sample], features: np.ndarray) -> np.ndarray:
    """Each conversation's probabilities from a model trained on the others."""
    conversations = np.array([s.conversation for s in samples])
    probabilities = np.zeros(len(samples))
    for conversation in sorted(set(conversations.tolist())):
        held = conversations == conversation
        model = fit_model(
            [s for s, h in zip(samples, held, strict=True) if not h], features[~held], 0.5
        )
        scores = features[held] @ model.weights + model.bias
        probabilities[held] = 1.0 / (1.0 + np.exp(-scores))
    return probabilities


def curve(samples: Sequence[Sample], probabilities: np.ndarray) -> list[dict[str, Any]]:
    """Evidence precision and recall of the durable sentences over thresholds."""
    is_evidence = np.array([s.is_evidence for s in samples])
    positive = np.array([s.label == 1 for s in samples])
    rows = []
    for threshold in THRESHOLDS:
        chosen = probabilities >= threshold
        rows.append(
            {
                "threshold": threshold,
                "kept": int(chosen.sum()),
                "evidence_precision": round(float(is_evidence[chosen].mean()), 4)
                if chosen.any()
                else None,
                "recall": round(float((chosen & positive).sum() / max(1, positive.sum())), 4),
            }
        )
    return rows


def choose_threshold(rows: Sequence[dict[str, Any]]) -> float:
    for row in rows:
        if row["evidence_precision"] is not None and row["evidence_precision"] >= PRECISION_FLOOR:
            return float(row["threshold"])
    return float(rows[-1]["threshold"])


def train(
    embedder: Embedder,
    data: Path,
    *,
    threshold: float | None = None,
    features_from: Embedder | None = None,
) -> tuple[StatementModel, dict[str, Any]]:
    """Label, cross-validate, choose the threshold and fit the shipped model; its report.

    `embedder` labels (which sentence of an evidence turn says the observation); the weights
    read the vectors of `features_from` (the token means by default, or `embedder`'s own).
    """
    features_from = features_from or embedder
    sessions = load_speaker_sessions(TUNING, data)
    samples, vectors = label_samples(sessions, embedder)
    sentences = [s.sentence for s in samples]
    if features_from is not embedder:
        vectors = np.asarray(features_from.embed(sentences), dtype=np.float64)
    features = feature_matrix(vectors, sentences)
    rows = curve(samples, cross_validate(samples, features))
    chosen = threshold if threshold is not None else choose_threshold(rows)
    model = fit_model(samples, features, chosen)
    digest = hashlib.sha256(np.round(model.weights, 6).tobytes()).hexdigest()[:12]
    counts = Counter(
        "left out" if s.label < 0 else (s.kind if s.label else "not durable") for s in samples
    )
    card = {
        "trained_on": "LoCoMo conversations 1-5 (locomo10.json), observations as labels",
        "features": f"{features_from.name} vectors and {len(FEATURE_NAMES)} surface features",
        "licence": LICENCE,
        "samples": dict(sorted(counts.items())),
        "l2": L2,
        "threshold": chosen,
        "threshold_rule": f"lowest cross-validated evidence precision >= {PRECISION_FLOOR}",
    }
    version = f"2-{digest}"
    model = StatementModel(
        version=version,
        weights=model.weights,
        bias=model.bias,
        kind_weights=model.kind_weights,
        kind_bias=model.kind_bias,
        threshold=chosen,
        card=json.dumps({"version": version, **card}, sort_keys=True),
        embedding_model=features_from.name,
    )
    return model, {"version": version, **card, "cross_validated_curve": rows}
