"""Find a date in English or French text and resolve it against the day the message was sent."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from memoryhub import text_patterns

WEEKDAYS = {
    "monday": 0,
    "tuesday": 1,
    "wednesday": 2,
    "thursday": 3,
    "friday": 4,
    "saturday": 5,
    "sunday": 6,
    "lundi": 0,
    "mardi": 1,
    "mercredi": 2,
    "jeudi": 3,
    "vendredi": 4,
    "samedi": 5,
    "dimanche": 6,
}

MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
    "janvier": 1,
    "février": 2,
    "fevrier": 2,
    "mars": 3,
    "avril": 4,
    "mai": 5,
    "juin": 6,
    "juillet": 7,
    "août": 8,
    "aout": 8,
    "septembre": 9,
    "octobre": 10,
    "novembre": 11,
    "décembre": 12,
    "decembre": 12,
}

RELATIVE_DAYS = {
    "the day after tomorrow": 2,
    "après-demain": 2,
    "apres-demain": 2,
    "tomorrow": 1,
    "demain": 1,
    "today": 0,
    "tonight": 0,
    "this evening": 0,
    "aujourd'hui": 0,
    "aujourd’hui": 0,
    "ce soir": 0,
}


def _alternatives(words: dict[str, int]) -> str:
    # Longest first, so "après-demain" wins over "demain" and "sept" over "sep".
    return "|".join(text_patterns.escape(word) for word in sorted(words, key=len, reverse=True))


_MONTH = _alternatives(MONTHS)
_ORDINAL = r"(?:st|nd|rd|th|er)?"
# A calendar day as written ("3 March 1990", "March 3rd", "1er mars", "1990-03-03"), no groups.
CALENDAR_DATE = (
    rf"(?i:\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}{_ORDINAL}(?:\s+of)?\s+(?:{_MONTH})\b(?:,?\s+\d{{4}})?"
    rf"|(?:{_MONTH})\.?\s+\d{{1,2}}{_ORDINAL}\b(?:,?\s+\d{{4}})?)"
)
DATE_PATTERN = text_patterns.compile(
    rf"""
    \b(?P<iso_year>\d{{4}})-(?P<iso_month>\d{{2}})-(?P<iso_day>\d{{2}})\b
    | \b(?P<dm_day>\d{{1,2}}){_ORDINAL}(?:\s+of)?\s+(?P<dm_month>{_MONTH})\b(?:,?\s+(?P<dm_year>\d{{4}}))?
    | \b(?P<md_month>{_MONTH})\.?\s+(?P<md_day>\d{{1,2}}){_ORDINAL}\b(?:,?\s+(?P<md_year>\d{{4}}))?
    | (?<![\w-])(?P<relative>{_alternatives(RELATIVE_DAYS)})\b
    | \b(?:(?:next|this|ce)\s+)?(?P<weekday>{_alternatives(WEEKDAYS)})\b(?:\s+prochain\b)?
    """,
    text_patterns.IGNORECASE | text_patterns.VERBOSE,
)


@dataclass(frozen=True)
class DateMention:
    start: int
    end: int
    text: str
    date: date
    # "Friday" or "tomorrow" go stale in stored text; a calendar date does not.
    is_relative: bool


def find_date(text: str, reference: date) -> DateMention | None:
    """Return the first date mentioned in `text`, resolved relative to `reference`."""
    for match in DATE_PATTERN.finditer(text):
        resolved = _resolve(match, reference)
        if resolved is not None:
            is_relative = bool(match.group("relative") or match.group("weekday"))
            return DateMention(match.start(), match.end(), match.group(0), resolved, is_relative)
    return None


def _resolve(match: text_patterns.Match[str], reference: date) -> date | None:
    groups = match.groupdict()
    if groups["iso_year"]:
        return _safe_date(int(groups["iso_year"]), int(groups["iso_month"]), int(groups["iso_day"]))
    if groups["dm_day"]:
        return _month_day(groups["dm_month"], groups["dm_day"], groups["dm_year"], reference)
    if groups["md_day"]:
        return _month_day(groups["md_month"], groups["md_day"], groups["md_year"], reference)
    if groups["relative"]:
        return reference + timedelta(days=RELATIVE_DAYS[groups["relative"].lower()])
    weekday = WEEKDAYS[groups["weekday"].lower()]
    # "By Friday" said on a Friday means next week's: a weekday is always 1 to 7 days ahead.
    return reference + timedelta(days=(weekday - reference.weekday() - 1) % 7 + 1)


def _month_day(month_name: str, day: str, year: str | None, reference: date) -> date | None:
    month = MONTHS[month_name.lower()]
    if year is not None:
        return _safe_date(int(year), month, int(day))
    # Without a year, the next such day on or after the message date.
    this_year = _safe_date(reference.year, month, int(day))
    if this_year is not None and this_year >= reference:
        return this_year
    return _safe_date(reference.year + 1, month, int(day))


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None
