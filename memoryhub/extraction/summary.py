"""Extractive session summaries: the most informative sentences, picked deterministically."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .base import SessionSummary, Transcript, normalise_text
from .sentences import content_words, split_sentences

MAX_SUMMARY_SENTENCES = 3
MAX_TOPIC_WORDS = 3
# Longer sentences are usually pasted text, not the gist of the session.
MAX_SENTENCE_CHARS = 300
MIN_SENTENCE_WORDS = 4
# Below this score a sentence is small talk ("Thanks, that's great!").
MIN_SCORE = 3
DEFAULT_TOPIC = "conversation"


@dataclass(frozen=True)
class _Candidate:
    position: int
    message_id: str
    text: str
    score: int


def summarise(
    transcript: Transcript, highlighted: frozenset[str] = frozenset()
) -> SessionSummary | None:
    """Pick up to three sentences of the transcript, in order, with a keyword topic.

    `highlighted` holds the sentences memory items were taken from; they count for more.
    """
    candidates = _candidates(transcript, highlighted)
    if not candidates:
        return None
    ranked = sorted(candidates, key=lambda candidate: (-candidate.score, candidate.position))
    chosen: list[_Candidate] = []
    seen: set[str] = set()
    for candidate in ranked:
        key = normalise_text(candidate.text)
        if key in seen:
            continue
        if candidate.score < MIN_SCORE and chosen:
            break
        seen.add(key)
        chosen.append(candidate)
        if len(chosen) == MAX_SUMMARY_SENTENCES:
            break
    chosen.sort(key=lambda candidate: candidate.position)
    message_ids = tuple(dict.fromkeys(candidate.message_id for candidate in chosen))
    return SessionSummary(
        text=" ".join(candidate.text for candidate in chosen),
        topic=find_topic(transcript),
        quote_message_ids=message_ids,
    )


def find_topic(transcript: Transcript) -> str:
    """Return the session's most frequent content words, the user's counting double."""
    scores: Counter[str] = Counter()
    surface: dict[str, str] = {}
    for message in transcript.messages:
        weight = 2 if message.role == "user" else 1
        for word in content_words(message.content):
            # "hotel" and "hotels" are one topic; the first form seen is the one shown.
            key = word[:-1] if len(word) > 4 and word.endswith("s") else word
            surface.setdefault(key, word)
            scores[key] += weight
    order = {key: index for index, key in enumerate(surface)}
    ranked = sorted(scores, key=lambda key: (-scores[key], order[key]))
    return ", ".join(surface[key] for key in ranked[:MAX_TOPIC_WORDS]) or DEFAULT_TOPIC


def _candidates(transcript: Transcript, highlighted: frozenset[str]) -> list[_Candidate]:
    first_user_id = next((m.id for m in transcript.messages if m.role == "user"), None)
    candidates = []
    position = 0
    for message in transcript.messages:
        for start, end in split_sentences(message.content):
            text = message.content[start:end]
            position += 1
            if len(text) > MAX_SENTENCE_CHARS or len(text.split()) < MIN_SENTENCE_WORDS:
                continue
            score = min(len(set(content_words(text))), 12)
            if text in highlighted:
                score += 4
            if message.id == first_user_id:
                score += 2
            if message.role == "user":
                score += 1
            if text.endswith("?"):
                score -= 2
            candidates.append(_Candidate(position, message.id, text, score))
    if candidates:
        return candidates
    # Only very short lines: fall back to the first user line, so a summary still exists.
    for message in transcript.messages:
        spans = split_sentences(message.content)
        if message.role == "user" and spans:
            start, end = spans[0]
            return [_Candidate(0, message.id, message.content[start:end], 0)]
    return []
