"""Answer confidence: weigh the agent's signals, spot hallucination signals, name the failure."""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import date

from django.utils.translation import gettext_noop

from memoryhub import text_patterns
from memoryhub.errors import InvalidInputError
from memoryhub.models import FailureClass

logger = logging.getLogger(__name__)

DEFAULT_SIGNAL_WEIGHTS: Mapping[str, float] = {
    "retrieval": 0.4,
    "policy": 0.2,
    "completeness": 0.2,
    "memory": 0.2,
}
SIGNAL_NAMES = tuple(DEFAULT_SIGNAL_WEIGHTS)
# Below this a signal is "low": it names the failure class of a captured answer.
LOW_SIGNAL = 0.5

PAST_DATE_AS_UPCOMING = "past_date_as_upcoming"
MEMORY_ID_NOT_IN_CONTEXT = "memory_id_not_in_context"


@dataclass(frozen=True)
class Signals:
    """The agent's own estimates, each in [0, 1]: higher is better."""

    retrieval: float
    policy: float
    completeness: float
    memory: float

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in SIGNAL_NAMES}


def check_signals(values: Mapping[str, object]) -> Signals:
    """Validate the four signals; raise InvalidInputError on a missing or out-of-range one."""
    checked: dict[str, float] = {}
    for name in SIGNAL_NAMES:
        value = values.get(name)
        # bool is an int subclass: "true" is not a signal strength.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInputError(
                gettext_noop("signals.{name} must be a number between 0 and 1"), name=name
            )
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise InvalidInputError(
                gettext_noop("signals.{name} must be between 0 and 1"), name=name
            )
        checked[name] = float(value)
    return Signals(**checked)


def signal_weights(configured: Mapping[str, object] | None) -> dict[str, float]:
    """The workspace's weights (defaults for an empty setting), scaled to sum to 1.

    A malformed setting is an admin's typo, not the agent's fault: it is logged and the
    defaults are used rather than failing every answer report.
    """
    if not configured:
        return dict(DEFAULT_SIGNAL_WEIGHTS)
    weights: dict[str, float] = {}
    for name in SIGNAL_NAMES:
        value = configured.get(name, DEFAULT_SIGNAL_WEIGHTS[name])
        if not _is_weight(value):
            logger.warning("workspace signal_weights are malformed; using the defaults")
            return dict(DEFAULT_SIGNAL_WEIGHTS)
        weights[name] = float(value)  # type: ignore[arg-type]  # _is_weight checked it.
    total = sum(weights.values())
    if total <= 0:
        logger.warning("workspace signal_weights are all zero; using the defaults")
        return dict(DEFAULT_SIGNAL_WEIGHTS)
    return {name: weight / total for name, weight in weights.items()}


def _is_weight(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value >= 0


def composite_confidence(signals: Signals, weights: Mapping[str, float]) -> float:
    """The weighted sum of the signals, in [0, 1], rounded to 4 places."""
    total = sum(weights[name] * value for name, value in signals.as_dict().items())
    return round(min(1.0, max(0.0, total)), 4)


_UUID = text_patterns.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
# A full stop ends a sentence only before a capital: "Mar. 3, 2024" stays one date.
_SENTENCE_END = text_patterns.compile(r"(?<=[.!?])\s+(?=[A-ZÀ-ÖØ-Þ])|\n+")
_MONTHS = {
    # English, full and abbreviated.
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12,
    # French.
    "janvier": 1, "février": 2, "fevrier": 2, "mars": 3, "avril": 4, "mai": 5, "juin": 6,
    "juillet": 7, "août": 8, "aout": 8, "septembre": 9, "octobre": 10, "novembre": 11,
    "décembre": 12, "decembre": 12,
}  # fmt: skip
_MONTH = "(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_ISO_DATE = text_patterns.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")
_DAY_MONTH_YEAR = text_patterns.compile(
    rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th|er)?\s+(?:of\s+)?{_MONTH}\s+(?P<year>\d{{4}})\b",
    text_patterns.IGNORECASE,
)
_MONTH_DAY_YEAR = text_patterns.compile(
    rf"\b{_MONTH}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>\d{{4}})\b",
    text_patterns.IGNORECASE,
)
# 03/04/2024 is March or April depending on the reader: past only if both readings are.
_NUMERIC_DATE = text_patterns.compile(
    r"\b(?P<first>\d{1,2})[/.](?P<second>\d{1,2})[/.](?P<year>\d{4})\b"
)
_UPCOMING = text_patterns.compile(
    r"\b(?:upcoming|coming\s+up|will|is\s+(?:scheduled|planned|due|set)|scheduled\s+for"
    r"|planned\s+for|due\s+on|next|soon|don['’]t\s+forget|remember\s+to|looking\s+forward"
    r"|à\s+venir|prochaine?s?|aura\s+lieu|se\s+tiendra|est\s+prévue?|prévue?s?\s+(?:pour|le)"
    r"|n['’]oubliez\s+pas|n['’]oublie\s+pas|va\s+avoir\s+lieu)\b",
    text_patterns.IGNORECASE,
)


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _dates_in(sentence: str) -> list[tuple[date, ...]]:
    """Each date the sentence mentions, as its possible readings (one, or two for 03/04/2024)."""
    found: list[tuple[int, int, int]] = []
    for match in _ISO_DATE.finditer(sentence):
        found.append((int(match["year"]), int(match["month"]), int(match["day"])))
    for pattern in (_DAY_MONTH_YEAR, _MONTH_DAY_YEAR):
        for match in pattern.finditer(sentence):
            month = _MONTHS[match["month"].casefold()]
            found.append((int(match["year"]), month, int(match["day"])))
    readings: list[tuple[date, ...]] = [
        tuple(d for d in [_safe_date(*parts)] if d is not None) for parts in found
    ]
    for match in _NUMERIC_DATE.finditer(sentence):
        year, first, second = int(match["year"]), int(match["first"]), int(match["second"])
        both = {_safe_date(year, second, first), _safe_date(year, first, second)}
        readings.append(tuple(d for d in both if d is not None))
    return [dates for dates in readings if dates]


def presents_past_date_as_upcoming(answer: str, *, today: date) -> bool:
    """Whether a sentence speaks of something coming while naming a date already past."""
    for sentence in _SENTENCE_END.split(answer):
        if not _UPCOMING.search(sentence):
            continue
        if any(all(d < today for d in readings) for readings in _dates_in(sentence)):
            return True
    return False


def cites_unknown_memory(answer: str, *, context_ids: Collection[str]) -> bool:
    """Whether the answer cites an id (a UUID) that was not among the context it was given."""
    known = {value.casefold() for value in context_ids}
    return any(match.group().casefold() not in known for match in _UUID.finditer(answer))


def find_hallucination_signals(
    answer: str, *, context_ids: Collection[str], today: date
) -> tuple[str, ...]:
    """The codes of the hallucination signals the answer shows (empty when none)."""
    findings = []
    if presents_past_date_as_upcoming(answer, today=today):
        findings.append(PAST_DATE_AS_UPCOMING)
    if cites_unknown_memory(answer, context_ids=context_ids):
        findings.append(MEMORY_ID_NOT_IN_CONTEXT)
    return tuple(findings)


def classify_failure(signals: Signals, *, findings: Collection[str] = ()) -> FailureClass:
    """Name why an answer was weak: hallucination, then policy, retrieval, completeness."""
    if findings:
        return FailureClass.HALLUCINATION
    # A refusal on policy grounds explains every other low signal, so it is checked first.
    if signals.policy < LOW_SIGNAL:
        return FailureClass.POLICY_BLOCK
    if signals.retrieval < LOW_SIGNAL:
        return FailureClass.RETRIEVAL_MISS
    if signals.completeness < LOW_SIGNAL:
        return FailureClass.INCOMPLETE
    # No signal is low on its own: the weakest one names the failure. The memory signal says
    # how well recalled memory supported the answer, so a weak one is a retrieval miss too.
    by_signal = {
        "retrieval": FailureClass.RETRIEVAL_MISS,
        "memory": FailureClass.RETRIEVAL_MISS,
        "completeness": FailureClass.INCOMPLETE,
        "policy": FailureClass.POLICY_BLOCK,
    }
    values = signals.as_dict()
    weakest = min(SIGNAL_NAMES, key=lambda name: values[name])
    return by_signal[weakest]
