"""Session summaries: the offline extractive summary, and the bound every summary keeps.

A summary is read back into later sessions' context, so it holds only what is worth recalling:
the user's sentences that carry facts, decisions and commitments. Small talk, questions and
requests to the assistant, hypotheticals and quoted text are left out. A summary is never
longer than MAX_SUMMARY_SHARE of the user's own text, nor than MAX_SUMMARY_SENTENCES sentences.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from memoryhub import text_patterns
from memoryhub.injection import looks_like_instructions

from .base import ExtractedItem, SessionSummary, Transcript, normalise_text
from .hedges import has_hedge, has_leading_hedge, is_framed, is_inside_quote
from .sentences import content_words, split_sentences

MAX_SUMMARY_SENTENCES = 5
# Of the characters the user wrote in the session.
MAX_SUMMARY_SHARE = 0.4
MAX_TOPIC_WORDS = 3
# Longer sentences are usually pasted text, not the gist of the session.
MAX_SENTENCE_CHARS = 300
MIN_SENTENCE_WORDS = 4
# A cut-off sentence shorter than this says nothing; better no summary.
MIN_CUT_CHARS = 24
DEFAULT_TOPIC = "conversation"

# What a clause carries, by the kind of item taken from it. Facts, preferences and procedures
# are in the profile already; what happened (decisions, commitments, plans) is the summary's own.
_ITEM_WEIGHTS = {"episode": 6, "open_item": 6, "fact": 3, "preference": 3, "procedure": 2}
# A plain statement no rule understood: a plan with names, dates or numbers ("I'm planning a
# trip to Porto in May") tells what the session was about; one without them, less.
_STATEMENT_WEIGHT = 1
_SPECIFIC_STATEMENT_WEIGHT = 4

# Openers that add nothing to a summary: "Ok, we decided …" -> "we decided …".
_OPENER = text_patterns.compile(
    r"^(?:(?:oh|ok|okay|so|well|also|and|anyway|sorry|yes|yeah|hi|hello|hey|morning|bon|alors"
    r"|et|oui|ah|salut|bonjour|coucou|honestly|franchement|bref|update|quick update|recap"
    r"|correction|petite correction|heads up|au fait)\b\s*[,!:]?\s+)+",
    text_patterns.IGNORECASE,
)
# Small talk: laughter, moods and thanks.
_SMALL_TALK = text_patterns.compile(
    r"\b(?:lol|haha\w*|hehe|mdr|ptdr|lmao|ugh|omg|thanks|thank you|merci|cheers)\b",
    text_patterns.IGNORECASE,
)
# A statement about the user has the user (or "we") for subject; "my cousin works at …" is
# about the cousin.
_FIRST_PERSON = text_patterns.compile(
    r"^(?:i|i['’]m|i['’]ve|i['’]ll|i['’]d|we|we['’]re|we['’]ve|je|j['’]|nous|on)\b",
    text_patterns.IGNORECASE,
)
# Statements that are requests to the assistant: "I need help with …", "je cherche un …".
_REQUEST = text_patterns.compile(
    r"^(?:i need (?:help|you|a|an|some)|i want you|i['’]d like you|i would like you|i['’]m looking"
    r"|i am looking|let me|let['’]s|j['’]ai besoin|je cherche|je voudrais|je veux que|aide-moi"
    r"|dis-moi)\b",
    text_patterns.IGNORECASE,
)


# A word that is the user ("I", "I'm,"): not what makes a statement specific.
_FIRST_PERSON_WORD = text_patterns.compile(r"I(?:['’]\w+)?\W*$")
# Where a sentence splits into clauses that stand on their own: "I'm based in Vancouver, and I
# speak English" -> "I'm based in Vancouver" + "I speak English".
# A break inside a run of spaces starts at its first space (see offline._SEGMENT_BREAK).
_CLAUSE_BREAK = text_patterns.compile(
    r"[,;:]\s+|(?<!\s)\s++(?:and|but|so|et|mais|donc)\s+(?=(?:i|i['’]m|i['’]ve|i['’]ll|i['’]d|my|we"
    r"|we['’]re|our|je|j['’]|mon|ma|mes|nous|on)\b)",
    text_patterns.IGNORECASE,
)


@dataclass(frozen=True)
class _Candidate:
    position: tuple[int, int]
    message_id: str
    text: str
    weight: int


def summary_limit(transcript: Transcript) -> int:
    """The most characters a summary of this transcript may have."""
    user_chars = sum(len(m.content) for m in transcript.messages if m.role == "user")
    return int(MAX_SUMMARY_SHARE * user_chars)


def summarise(
    transcript: Transcript,
    items: Sequence[ExtractedItem],
    *,
    stale_quotes: frozenset[str] = frozenset(),
    instructing: frozenset[str] | None = None,
) -> SessionSummary | None:
    """Pick the user's clauses that carry the most, in order, within the bound; None if none.

    `items` are the memory items taken from the transcript: the clause holding each one is a
    candidate. Sentences in `stale_quotes` said something corrected later and are left out.
    `instructing` holds the ids of the messages that read like instructions, when the caller
    has already looked (else each user message is looked at here); they give no clause.
    """
    limit = summary_limit(transcript)
    by_quote: dict[str, list[ExtractedItem]] = {}
    for item in items:
        by_quote.setdefault(item.quote, []).append(item)
    if instructing is None:
        instructing = frozenset(
            message.id
            for message in transcript.messages
            if message.role == "user" and looks_like_instructions(message.content)
        )
    candidates = _candidates(transcript, by_quote, stale_quotes, instructing)
    ranked = sorted(candidates, key=lambda c: (-c.weight, len(c.text), c.position))
    chosen: list[_Candidate] = []
    seen: set[str] = set()
    used = sentences = 0
    for candidate in ranked:
        key = normalise_text(candidate.text)
        cost = len(candidate.text) + (1 if chosen else 0)
        # "Dr. Chen" reads as two sentences to a splitter: count them as a reader would.
        count = len(split_sentences(candidate.text))
        if key in seen or used + cost > limit or sentences + count > MAX_SUMMARY_SENTENCES:
            continue
        seen.add(key)
        chosen.append(candidate)
        used += cost
        sentences += count
    if not chosen:
        return None
    chosen.sort(key=lambda candidate: candidate.position)
    texts = [candidate.text for candidate in chosen]
    return SessionSummary(
        text=" ".join(texts),
        topic=find_topic(texts),
        quote_message_ids=tuple(dict.fromkeys(candidate.message_id for candidate in chosen)),
    )


def fit_summary(summary: SessionSummary, transcript: Transcript) -> SessionSummary | None:
    """Hold a summary to the bound: whole sentences first, a cut first sentence at worst."""
    limit = summary_limit(transcript)
    spans = split_sentences(summary.text)
    if len(summary.text) <= limit and len(spans) <= MAX_SUMMARY_SENTENCES:
        return summary
    kept: list[str] = []
    for start, end in spans[:MAX_SUMMARY_SENTENCES]:
        sentence = summary.text[start:end]
        if len(" ".join([*kept, sentence])) > limit:
            break
        kept.append(sentence)
    if not kept and spans:
        start, end = spans[0]
        cut = summary.text[start:end][: max(limit - 1, 0)].rsplit(" ", 1)[0].rstrip(" ,;:")
        if len(cut) < MIN_CUT_CHARS:
            return None
        kept = [cut + "…"]
    if not kept:
        return None
    return dataclasses.replace(summary, text=" ".join(kept))


def find_topic(texts: Iterable[str]) -> str:
    """Return the most frequent content words of the texts (the first form seen is shown)."""
    scores: Counter[str] = Counter()
    surface: dict[str, str] = {}
    for text in texts:
        for word in content_words(text):
            # "hotel" and "hotels" are one topic.
            key = word[:-1] if len(word) > 4 and word.endswith("s") else word
            surface.setdefault(key, word)
            scores[key] += 1
    order = {key: index for index, key in enumerate(surface)}
    ranked = sorted(scores, key=lambda key: (-scores[key], order[key]))
    return ", ".join(surface[key] for key in ranked[:MAX_TOPIC_WORDS]) or DEFAULT_TOPIC


def _candidates(
    transcript: Transcript,
    by_quote: Mapping[str, Sequence[ExtractedItem]],
    stale_quotes: frozenset[str],
    instructing: frozenset[str],
) -> list[_Candidate]:
    candidates = []
    position = 0
    for message in transcript.messages:
        if message.role != "user" or message.id in instructing:
            continue
        for start, end in split_sentences(message.content):
            position += 1
            quote = message.content[start:end]
            if is_inside_quote(message.content[:start]) or len(quote) > MAX_SENTENCE_CHARS:
                continue
            if quote in stale_quotes and quote not in by_quote:
                continue
            for (offset, clause), weight in _weigh_clauses(quote, by_quote.get(quote, ())).items():
                text = _as_sentence(_OPENER.sub("", clause))
                candidates.append(_Candidate((position, offset), message.id, text, weight))
    return candidates


def _weigh_clauses(sentence: str, items: Sequence[ExtractedItem]) -> dict[tuple[int, str], int]:
    """The clauses of a sentence worth a place in the summary, by (offset, text), weighed."""
    weights: dict[tuple[int, str], int] = {}
    for item in items:
        span = _evidence(sentence, item)
        weights[span] = max(weights.get(span, 0), _ITEM_WEIGHTS[item.kind])
    # Beside an item's clause, another clause of the sentence may say something of its own.
    parts = _clauses(sentence) if weights else [(0, sentence)]
    for offset, clause in parts:
        if any(_overlaps(offset, clause, taken) for taken in weights):
            continue
        statement = _OPENER.sub("", clause)
        if _is_plain_statement(statement):
            specific = _is_specific(statement)
            weights[(offset, clause)] = (
                _SPECIFIC_STATEMENT_WEIGHT if specific else _STATEMENT_WEIGHT
            )
    return weights


def _evidence(sentence: str, item: ExtractedItem) -> tuple[int, str]:
    """The clauses of the sentence an item was read from, with their offset in the sentence.

    "Sorry, correction: my manager is Tim Becker, not Tom" -> "my manager is Tim Becker": from
    the first clause that shares words with the item to the last (or the one with its value).
    """
    if item.kind == "procedure":
        # "From now on, reply in French": the framing is what makes it a standing instruction.
        return 0, sentence
    clauses = _clauses(sentence)
    wanted = set(content_words(item.content))
    value = normalise_text(item.value) if item.value else ""
    hits = [
        index
        for index, (_, clause) in enumerate(clauses)
        if wanted & set(content_words(clause)) or (value and value in normalise_text(clause))
    ]
    if not hits:
        return 0, sentence
    start = clauses[hits[0]][0]
    last_offset, last_clause = clauses[hits[-1]]
    return start, sentence[start : last_offset + len(last_clause)]


def _clauses(sentence: str) -> list[tuple[int, str]]:
    clauses = []
    start = 0
    for match in _CLAUSE_BREAK.finditer(sentence):
        clauses.append((start, sentence[start : match.start()]))
        start = match.end()
    clauses.append((start, sentence[start:]))
    # A fragment too short to stand alone stays with the sentence.
    if any(len(clause.split()) < 3 for _, clause in clauses if content_words(clause)):
        return [(0, sentence)] if len(clauses) == 1 else _merge_fragments(clauses, sentence)
    return clauses


def _merge_fragments(clauses: list[tuple[int, str]], sentence: str) -> list[tuple[int, str]]:
    """Glue each short fragment to the clause before it (or after it, when it comes first)."""
    merged: list[tuple[int, int]] = []
    for offset, clause in clauses:
        end = offset + len(clause)
        if merged and len(clause.split()) < 3:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((offset, end))
    if len(merged) > 1 and len(sentence[merged[0][0] : merged[0][1]].split()) < 3:
        merged[1] = (merged[0][0], merged[1][1])
        merged.pop(0)
    return [(start, sentence[start:end]) for start, end in merged]


def _overlaps(offset: int, clause: str, taken: tuple[int, str]) -> bool:
    return offset < taken[0] + len(taken[1]) and taken[0] < offset + len(clause)


def _is_specific(text: str) -> bool:
    """Say whether a statement names something: a capitalised word past the first, or a number."""
    words = [w for w in text.split()[1:] if not _FIRST_PERSON_WORD.match(w)]
    return any(word[:1].isupper() or any(ch.isdigit() for ch in word) for word in words)


def _is_plain_statement(text: str) -> bool:
    """A first-person statement of substance: no question, request, hedge, joke or quote."""
    return (
        not text.rstrip().endswith("?")
        and len(text.split()) >= MIN_SENTENCE_WORDS
        and _FIRST_PERSON.match(text) is not None
        and _REQUEST.match(text) is None
        and _SMALL_TALK.search(text) is None
        and not has_leading_hedge(text)
        and not has_hedge(text)
        and not is_framed(text)
        and len(set(content_words(text))) >= 2
    )


def _as_sentence(text: str) -> str:
    text = text.strip().rstrip(",;:")
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?", "…")) else text + "."
