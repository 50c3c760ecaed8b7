"""The offline extractor: deterministic English/French rules, tuned for precision over recall.

Only the user's own messages are mined. A sentence yields an item only when it states something
plainly: questions, hedged or hypothetical sentences ("maybe I'll move to Lyon") and negated
ones yield nothing, because a wrong memory costs more than a missed one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .base import (
    SINGLE_VALUED_SLOTS,
    ExtractedItem,
    ExtractionResult,
    Transcript,
    TranscriptMessage,
    unique_items,
)
from .dates import find_date
from .rules import APOS, RULES, Language, Rule, to_third_person
from .sentences import split_sentences
from .summary import summarise

# Values longer than this are rambling, not a statement worth storing.
MAX_VALUE_CHARS = 160

# A polite question that is really a request: "Can you remind me to …?" is an instruction.
_REQUEST = re.compile(
    r"^(?:(?:can|could|would|will) you (?:please\s+)?"
    rf"|(?:est-ce que\s+)?(?:tu peux|tu pourrais|peux-tu|pourrais-tu|vous pouvez|vous pourriez"
    rf"|pouvez-vous|pourriez-vous)\s+(?:s{APOS}il (?:te|vous) pla[iî]t\s+)?)",
    re.IGNORECASE,
)
_EXPLICIT = re.compile(
    r"^(?:(?:also|and|oh|ok|okay|aussi|et|bon|ah)[,!]?\s+)?(?:please\s+)?(?:"
    r"(?P<en_that>remember|don't forget|do not forget|keep in mind|note)\s*(?:that\b|:|,)"
    r"|(?P<fr_that>souviens-toi|souvenez-vous|rappelle-toi|rappelez-vous|n'oublie pas"
    r"|n'oubliez pas|retiens|retenez|notez?|garde en tête)\s*(?:que\b|qu'|:|,)"
    r"|(?P<en_to>remember|don't forget|do not forget)\s+to\b"
    r"|(?P<fr_to>n'oublie pas|n'oubliez pas|pense à|pensez à)\s+(?:de\b|d')"
    r")\s*",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"^\W*(?:actually|in fact|correction|sorry|oops|no|not|wait|my bad|en fait|en réalité|pardon"
    r"|non|oups|attends|désolée?)\b|\bactually\b|\bi meant\b|\ben fait\b|\bje voulais dire\b",
    re.IGNORECASE,
)
# "Alex, not Alice" / "Alex, pas Alice": the value replaces another one.
_REPLACED_VALUE = re.compile(r",?\s+(?:not|pas|et non(?: pas)?)\s+[A-ZÀ-ÖØ-Þ]")
# Contrast splits a sentence into parts judged on their own: "I live in Paris but maybe …".
_SEGMENT_BREAK = re.compile(
    r"\s*;\s*|,?\s+(?:but|however|although|though|whereas|mais|cependant|pourtant|alors que"
    r"|tandis que)\s+",
    re.IGNORECASE,
)
_POLITENESS = re.compile(
    rf"s{APOS}il (?:te|vous) pla[iî]t|si possible|if possible|if you can|if you don{APOS}t mind",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"\b(?:might|maybe|perhaps|probably|possibly|could|would|if|unless|whether|someday|one day"
    r"|thinking (?:about|of)|considering|wondering|not sure|unsure|guess|think|thinks|believe"
    r"|suppose|imagine|hope|wish|pretend|hypothetically|let's say|what if|in theory|kidding"
    r"|joking|try to|try and|used to|said|says|told|tells|claims|claimed|heard"
    r"|peut-être|peut être|probablement|sans doute|éventuellement|si|s'il|s'ils|pense|pensais"
    r"|crois|suppose|imagine|envisage|songe|il se peut|pas sûre?|hésite|un jour|imaginons"
    r"|supposons|disons|rêve|essayer|tenter|dit|disait|raconte)\b"
    r"|\b(?:je|j'|tu|il|elle|on|nous|vous)\s*\w+(?:rais|rait|rions|riez|raient)\b"
    r"|^\s*(?:when|whenever|quand|lorsqu)",
    re.IGNORECASE,
)
# Words before a statement that make it someone else's text: "Translate: my name is Bond".
_FRAME = re.compile(
    r"\b(?:translate|translation|draft|write|rewrite|story|novel|example|for instance|character"
    r"|roleplay|role-play|saying|traduis|traduire|traduction|rédige|écris|histoire|roman|exemple"
    r"|personnage|disant)\b",
    re.IGNORECASE,
)
# "may" is a hedge, "May 3" a date.
_MAY = re.compile(r"\bmay\b")
_NEGATION = re.compile(
    r"\b(?:not|never|no longer|don't|doesn't|didn't|do not|does not|did not|won't|can't|cannot"
    r"|isn't|wasn't|aren't|ne|pas|plus|jamais)\b|n't\b|\bn'",
    re.IGNORECASE,
)
_VALUE_TAIL = re.compile(
    r",?\s+(?:and|but|so|because|since|as|et|mais|donc|car|parce que|puisque)\s+"
    rf"(?:i|i{APOS}m|i{APOS}ve|i{APOS}ll|my|we|we{APOS}re|je|j{APOS}|mon|ma|mes|nous|on)\b.*$"
    rf"|,?\s*(?:please|thanks|thank you|merci|s{APOS}il (?:te|vous) pla[iî]t|if possible|si possible"
    rf"|if you can|if you don{APOS}t mind)\s*$",
    re.IGNORECASE,
)
# fmt: off
_NOT_NAMES = frozenset((
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "lundi", "mardi",
    "mercredi", "jeudi", "vendredi", "samedi", "dimanche", "january", "february", "march", "april",
    "june", "july", "august", "september", "october", "november", "december", "janvier", "février",
    "avril", "juin", "juillet", "août", "septembre", "octobre", "novembre", "décembre", "today",
    "tomorrow", "tonight", "back", "later", "please", "when", "if", "maybe", "demain", "ce", "plus",
    "french", "english", "british", "american", "canadian", "german", "spanish", "italian", "here",
    "ready", "good", "fine", "okay", "ok", "sorry", "new"
))
# fmt: on
_DUE_SUFFIX = {"en": " (due {date})", "fr": " (échéance : {date})"}
_EXPLICIT_FACT = {
    "en": "The user asked to remember: {value}",
    "fr": "L'utilisateur a demandé de retenir : {value}",
}
_EXPLICIT_TASK = {"en": "Remind the user to {value}", "fr": "Rappel pour l'utilisateur : {value}"}


@dataclass(frozen=True)
class _Sentence:
    """A sentence of a user message, stripped of request and "remember that" wrappers."""

    quote: str
    text: str
    message: TranscriptMessage
    is_correction: bool
    # Set for "remember that …" ("fact") and "remember to …" ("task") sentences.
    explicit_form: Literal["fact", "task"] | None = None
    explicit_language: Language = "en"

    @property
    def is_explicit(self) -> bool:
        return self.explicit_form is not None


class OfflineExtractor:
    """Rule-based extractor that needs no network; the fallback when the LLM is unavailable."""

    name = "offline"

    def extract(self, transcript: Transcript) -> ExtractionResult:
        """Return the summary and the items stated plainly in the user's messages."""
        mined = [
            item for message in transcript.messages for item in self.extract_from_message(message)
        ]
        items = _latest_per_slot(mined)
        summary = summarise(transcript, frozenset(item.quote for item in items))
        return ExtractionResult(summary=summary, items=tuple(items), extractor=self.name)

    def extract_from_message(self, message: TranscriptMessage) -> list[ExtractedItem]:
        """Return the items of one message, for real-time corrections and "remember that …"."""
        if message.role != "user":
            return []
        items: list[ExtractedItem] = []
        for start, end in split_sentences(message.content):
            sentence = _read_sentence(message.content[start:end], message)
            if sentence is not None:
                items.extend(_mine_sentence(sentence))
        return unique_items(items)


def _read_sentence(quote: str, message: TranscriptMessage) -> _Sentence | None:
    text = quote
    request = _REQUEST.match(text)
    if request and text.rstrip().endswith("?"):
        text = text[request.end() :].rstrip().rstrip("?")
    if text.rstrip().endswith("?"):
        return None
    is_correction = _CORRECTION.search(quote) is not None
    explicit = _EXPLICIT.match(_straight_apostrophes(text))
    if explicit is None:
        return _Sentence(quote, text, message, is_correction)
    form: Literal["fact", "task"] = "task" if explicit["en_to"] or explicit["fr_to"] else "fact"
    language: Language = "fr" if explicit["fr_that"] or explicit["fr_to"] else "en"
    return _Sentence(quote, text[explicit.end() :], message, is_correction, form, language)


def _mine_sentence(sentence: _Sentence) -> list[ExtractedItem]:
    items = []
    for offset, segment in _segments(sentence.text):
        for rule in RULES:
            for match in rule.pattern.finditer(segment):
                if _is_framed(sentence.text[: offset + match.start()]):
                    continue
                item = _build_item(rule, match, segment, sentence)
                if item is not None:
                    items.append(item)
    if not items and sentence.is_explicit:
        fallback = _build_explicit_fallback(sentence)
        if fallback is not None:
            items.append(fallback)
    return items


def _segments(text: str) -> list[tuple[int, str]]:
    segments = []
    start = 0
    for match in _SEGMENT_BREAK.finditer(text):
        segments.append((start, text[start : match.start()]))
        start = match.end()
    segments.append((start, text[start:]))
    return segments


def _build_item(
    rule: Rule, match: re.Match[str], segment: str, sentence: _Sentence
) -> ExtractedItem | None:
    if _is_hedged(segment, match) or (rule.checks_negation and _is_negated(segment, match)):
        return None
    groups = {key: value or "" for key, value in match.groupdict().items()}
    value = _clean_value(groups["value"], is_free_text=rule.slot is None)
    if not value or len(value) > MAX_VALUE_CHARS:
        return None
    if rule.slot == "name" and value.split()[0].casefold() in _NOT_NAMES:
        return None
    reference = sentence.message.created_at.date()
    due = find_date(value, reference) if rule.date_use != "none" else None
    if due is None and rule.date_use == "required":
        return None
    content = rule.template.format(**{**groups, "value": _rewrite(value, rule)})
    if due is not None and due.is_relative:
        content += _DUE_SUFFIX[rule.language].format(date=due.date.isoformat())
    is_correction = sentence.is_correction or (
        rule.slot is not None and _REPLACED_VALUE.match(segment, match.end("value")) is not None
    )
    return ExtractedItem(
        kind=rule.kind,
        content=_as_sentence(content),
        quote=sentence.quote,
        message_ids=(sentence.message.id,),
        slot=rule.slot,
        value=value if rule.kind == "fact" else None,
        importance="high" if sentence.is_explicit else rule.importance,
        event_type=rule.event_type,
        event_date=reference if rule.event_type == "decision" else None,
        due_date=due.date if due is not None else None,
        is_explicit=sentence.is_explicit,
        is_correction=is_correction,
    )


def _build_explicit_fallback(sentence: _Sentence) -> ExtractedItem | None:
    """ "Remember that the demo is on staging-2": no rule knows it, the user vouched for it."""
    value = _clean_value(sentence.text, is_free_text=True)
    if not value or len(value) > MAX_VALUE_CHARS or _has_hedge(value):
        return None
    language = sentence.explicit_language
    reference = sentence.message.created_at.date()
    is_task = sentence.explicit_form == "task"
    due = find_date(value, reference) if is_task else None
    template = (_EXPLICIT_TASK if is_task else _EXPLICIT_FACT)[language]
    content = template.format(value=to_third_person(value, language))
    if due is not None and due.is_relative:
        content += _DUE_SUFFIX[language].format(date=due.date.isoformat())
    return ExtractedItem(
        kind="open_item" if is_task else "fact",
        content=_as_sentence(content),
        quote=sentence.quote,
        message_ids=(sentence.message.id,),
        importance="high",
        due_date=due.date if due is not None else None,
        is_explicit=True,
        is_correction=sentence.is_correction,
    )


def _is_hedged(segment: str, match: re.Match[str]) -> bool:
    # The trigger itself may hold a hedge word ("I would prefer"); only the rest of the segment counts.
    value_start = match.start("value")
    masked = segment[: match.start()] + " " * (value_start - match.start()) + segment[value_start:]
    return _has_hedge(masked)


def _has_hedge(text: str) -> bool:
    text = _POLITENESS.sub(" ", _straight_apostrophes(text))
    return _HEDGE.search(text) is not None or _MAY.search(text) is not None


def _is_framed(prefix: str) -> bool:
    """Say whether the statement is quoted, translated or made up, not the user's own."""
    is_quoted = (
        prefix.count('"') % 2 == 1
        or prefix.count("“") > prefix.count("”")
        or prefix.count("«") > prefix.count("»")
    )
    return is_quoted or _FRAME.search(prefix) is not None


def _is_negated(segment: str, match: re.Match[str]) -> bool:
    # Only the clause the trigger is in: "Not Alice, my name is Alex" is not a negation.
    prefix = re.split(r"[,:]", segment[: match.start()])[-1]
    return _NEGATION.search(_straight_apostrophes(prefix)) is not None


def _straight_apostrophes(text: str) -> str:
    # Same length, so match offsets stay valid in the original text.
    return text.replace("’", "'")


def _clean_value(value: str, *, is_free_text: bool) -> str:
    if is_free_text:
        value = _VALUE_TAIL.sub("", value)
    return " ".join(value.split()).strip(" ,:;-\"'’”»«“").rstrip(".")


def _rewrite(value: str, rule: Rule) -> str:
    return to_third_person(value, rule.language) if rule.is_rewritten else value


def _as_sentence(text: str) -> str:
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def _latest_per_slot(items: list[ExtractedItem]) -> list[ExtractedItem]:
    """Keep the last statement of each single-valued slot: later in a session, more current."""
    last_index = {
        item.slot: index for index, item in enumerate(items) if item.slot in SINGLE_VALUED_SLOTS
    }
    kept = [
        item
        for index, item in enumerate(items)
        if item.slot not in SINGLE_VALUED_SLOTS or last_index[item.slot] == index
    ]
    return unique_items(kept)
