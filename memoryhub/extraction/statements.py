"""The learned decision: does a user sentence state something durable about the user, and what kind.

A small logistic model over the sentence's all-MiniLM-L6-v2 embedding plus a few surface
features (length, first person, closing mark). It is trained by `manage.py
train_extraction_model` on LoCoMo conversations 1-5 (docs/extraction.md: data, licence,
figures) and shipped as `statement_model.npz` beside this file: a few kilobytes of weights,
loaded with numpy only, never downloaded. Its weights read one embedding model's vectors (the
one it was trained with, `embedding_model`): the decision embeds with that model whatever
`MEMORYHUB_EMBEDDING_MODEL` stores memories with. The rules in `rules.py` stay in charge of what they
recognise; this model decides only on the sentences they leave, and never makes a procedure:
a standing instruction must be said in a shape the rules know.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from memoryhub import text_patterns
from memoryhub.embeddings import MINILM, Embedder

from .base import ItemKind
from .hedges import has_hedge, has_leading_hedge, has_negation, is_framed
from .token_vectors import TOKEN_VECTORS, token_mean_embedder

MODEL_PATH = Path(__file__).resolve().with_name("statement_model.npz")
# The kinds the model chooses among; procedures are the rules' alone.
LEARNED_KINDS: tuple[ItemKind, ...] = ("fact", "preference", "episode", "open_item")
# Shorter is an exclamation or a greeting; longer is a ramble better split than stored whole.
MIN_WORDS = 4
MAX_WORDS = 60
FEATURE_NAMES = ("log_words", "first_person", "opens_first_person", "exclaims", "has_digit")

_WORD = text_patterns.compile(r"[^\W\d_][\w'’]*+")
_FIRST_PERSON = frozenset(
    (
        "i",
        "i'm",
        "i've",
        "i'll",
        "i'd",
        "me",
        "my",
        "mine",
        "myself",
        "we",
        "we're",
        "we've",
        "we'll",
        "our",
        "us",
        "je",
        "j'",
        "j'ai",
        "j'aime",
        "j'adore",
        "j'habite",
        "j'étais",
        "j'y",
        "m'",
        "moi",
        "mon",
        "ma",
        "mes",
        "nous",
        "notre",
        "nos",
        "on",
    )
)
# "I have to say, …", "I must admit …": a remark about the conversation, not about the speaker.
_OPENING_REMARK = text_patterns.compile(
    r"\A\W*+i (?:have to|must|gotta|got to|need to) (?:say|admit|confess|tell you)\b"
    r"|\A\W*i(?:'m|’m| am) (?:so |really |very )?(?:glad|happy|sorry|thrilled|excited) (?:to hear|you)\b",
    text_patterns.IGNORECASE,
)
# Words that may open a sentence before its subject: "Yeah, I …", "Bon, je …".
INTERJECTIONS = frozenset(
    (
        "yeah", "yes", "yep", "wow", "oh", "ah", "aw", "aww", "well", "so", "and", "but", "also",
        "actually", "honestly", "anyway", "anyways", "ok", "okay", "hey", "hi", "hello", "um",
        "sure", "thanks", "totally", "absolutely", "definitely", "alors", "et", "mais", "bon",
        "bref", "sinon", "oui", "donc", "ouais", "salut", "merci",
    )
)  # fmt: skip
# The speaker as the subject. "My cousin works at …" is about the cousin, not the speaker.
# Someone else's words inside the sentence: whatever follows the mark is not the speaker's.
_QUOTE_MARKS = ('"', "“", "«")
_JOKE = text_patterns.compile(
    r"(?<!\w)(?:ha(?:ha)++|lol|lmao|jk|mdr|😂|🤣)(?!\w)", text_patterns.IGNORECASE
)
_OPENERS = frozenset(("i", "i'm", "i've", "i'll", "i'd", "we", "we're", "we've", "je"))
# A time said before the subject: "Last Friday, I went …", "Yesterday I …", "Recently, I …".
# Not "this morning" or "today": a state of the moment is no memory.
_TIME_WORDS = frozenset(("yesterday", "recently", "lately", "hier"))
_TIME_DETERMINERS = frozenset(("last", "next", "on"))
_TIME_UNITS = frozenset(
    (
        *("night", "week", "weekend", "month", "year", "summer", "winter", "spring", "fall"),
        *("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
        *("mon", "tue", "tues", "wed", "thu", "thurs", "fri", "sat", "sun"),
    )
)
_OPENERS_PREFIX = ("j'",)
_FIRST_PERSON_PREFIX = ("j'", "m'")


def words(sentence: str) -> list[str]:
    """The sentence's words, casefolded, with straight apostrophes."""
    return [word.replace("’", "'") for word in _WORD.findall(sentence.casefold())]


def is_first_person(sentence: str) -> bool:
    """Say whether the speaker is in the sentence (I, my, we, je, mon…): only then about them."""
    return any(_is_first_person(word) for word in words(sentence))


def opens_first_person(sentence: str, *, after_time: bool = False) -> bool:
    """Say whether the sentence's subject is the speaker ("I …", "Yeah, I …", "J'…").

    With `after_time`, also after a time said first ("Last Friday, I went …", "Yesterday I …").
    """
    found = words(sentence)
    while found[:1] and found[0] in INTERJECTIONS:
        found = found[1:]
    if after_time:
        found = _after_time_opening(found)
    return bool(found) and (found[0] in _OPENERS or found[0].startswith(_OPENERS_PREFIX))


def _after_time_opening(found: list[str]) -> list[str]:
    if found[:1] and found[0] in _TIME_WORDS:
        return found[1:]
    if len(found) > 2 and found[0] in _TIME_DETERMINERS and found[1] in _TIME_UNITS:
        return found[2:]
    return found


def _is_first_person(word: str) -> bool:
    return word in _FIRST_PERSON or word.startswith(_FIRST_PERSON_PREFIX)


def is_candidate(sentence: str) -> bool:
    """A sentence the model may decide on: about the speaker, plainly said, a few words long.

    Its subject is the speaker ("I …", "Last week I …", "Je …"). Questions, hedges, conditions,
    reported speech, negations and quoted or translated text ("maybe", "if", "I think", "she
    said", "not", "translate: …") never reach the model, whatever it would say: a wrong memory
    costs more than a missed one, and a negation the model cannot read would store the opposite.
    """
    count = len(words(sentence))
    return (
        MIN_WORDS <= count <= MAX_WORDS
        and not sentence.rstrip().endswith("?")
        and opens_first_person(sentence, after_time=True)
        and not has_leading_hedge(sentence)
        and not has_hedge(sentence)
        and not has_negation(sentence)
        and not is_framed(sentence)
        and not any(mark in sentence for mark in _QUOTE_MARKS)
        and _OPENING_REMARK.match(sentence) is None
        and _JOKE.search(sentence) is None
    )


def sentence_features(sentence: str) -> list[float]:
    """The surface features beside the embedding, in FEATURE_NAMES order."""
    found = words(sentence)
    stripped = sentence.rstrip()
    return [
        float(np.log1p(len(found)) / 3),
        float(any(_is_first_person(word) for word in found)),
        float(opens_first_person(sentence)),
        float(stripped.endswith("!")),
        float(any(character.isdigit() for character in sentence)),
    ]


@dataclass(frozen=True)
class Decision:
    probability: float
    kind: ItemKind


@dataclass(frozen=True)
class StatementModel:
    """Logistic weights: one model for "durable", one per kind (the highest score wins)."""

    version: str
    weights: np.ndarray  # (features,)
    bias: float
    kind_weights: np.ndarray  # (kinds, features)
    kind_bias: np.ndarray  # (kinds,)
    threshold: float
    # What it was trained on, its figures and its licence, shown in docs and checked by tests.
    card: str = "{}"
    # The embedding model whose vectors the weights read (memoryhub/embeddings.py MODELS).
    embedding_model: str = MINILM

    def decide(
        self, vectors: Sequence[Sequence[float]], sentences: Sequence[str]
    ) -> list[Decision]:
        """The probability that each sentence is durable about the user, and its likeliest kind."""
        if not sentences:
            return []
        features = feature_matrix(vectors, sentences)
        scores = features @ self.weights + self.bias
        probabilities = 1.0 / (1.0 + np.exp(-scores))
        kinds = np.argmax(features @ self.kind_weights.T + self.kind_bias, axis=1)
        return [
            Decision(probability=float(p), kind=LEARNED_KINDS[int(k)])
            for p, k in zip(probabilities, kinds, strict=True)
        ]

    def keeps(self, decision: Decision) -> bool:
        return decision.probability >= self.threshold


def feature_matrix(
    vectors: Sequence[Sequence[float]] | np.ndarray, sentences: Sequence[str]
) -> np.ndarray:
    """Embeddings and surface features side by side, one row per sentence."""
    embedded = np.asarray(vectors, dtype=np.float64).reshape(len(sentences), -1)
    surface = np.asarray([sentence_features(s) for s in sentences], dtype=np.float64)
    return np.hstack([embedded, surface])


def save_statement_model(model: StatementModel, path: Path = MODEL_PATH) -> None:
    """Write the weights as float32 arrays (no pickle), with the version and card."""
    with path.open("wb") as handle:
        np.savez_compressed(
            handle,
            version=np.array(model.version),
            weights=model.weights.astype(np.float32),
            bias=np.array(model.bias, dtype=np.float32),
            kind_weights=model.kind_weights.astype(np.float32),
            kind_bias=model.kind_bias.astype(np.float32),
            threshold=np.array(model.threshold, dtype=np.float32),
            card=np.array(model.card),
            embedding_model=np.array(model.embedding_model),
        )


@cache
def load_statement_model(path: Path = MODEL_PATH) -> StatementModel:
    """Read the shipped weights once per process; numpy only, pickles refused."""
    with np.load(path, allow_pickle=False) as data:
        return StatementModel(
            version=str(data["version"]),
            weights=data["weights"].astype(np.float64),
            bias=float(data["bias"]),
            kind_weights=data["kind_weights"].astype(np.float64),
            kind_bias=data["kind_bias"].astype(np.float64),
            threshold=float(data["threshold"]),
            card=str(data["card"]),
            # Weights saved before the model was recorded were all trained on MiniLM.
            embedding_model=str(data["embedding_model"]) if "embedding_model" in data else MINILM,
        )


def decision_embedder(model: StatementModel) -> Embedder:
    """The embedder whose vectors the model's weights read (token means, or a stored model)."""
    if model.embedding_model == TOKEN_VECTORS:
        return token_mean_embedder()
    from memoryhub.embeddings import embedder_for

    return embedder_for(model.embedding_model)


def model_card(model: StatementModel) -> dict[str, object]:
    """The model's card: training data, licence, figures."""
    card: dict[str, object] = json.loads(model.card)
    return card
