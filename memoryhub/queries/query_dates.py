"""Read a time cue in a search query ("in October 2023", "on 1 February, 2023", "last year").

Recall gives a small bonus to memories whose time falls in the period the query names; it does
not filter (a wrong guess must not hide the answer). Pure Python: no database, no keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memoryhub import text_patterns

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan", "janvier"),
            ("february", "feb", "fevrier", "février"),
            ("march", "mar", "mars"),
            ("april", "apr", "avril"),
            ("may", "mai"),
            ("june", "jun", "juin"),
            ("july", "jul", "juillet"),
            ("august", "aug", "aout", "août"),
            ("september", "sep", "sept", "septembre"),
            ("october", "oct", "octobre"),
            ("november", "nov", "novembre"),
            ("december", "dec", "decembre", "décembre"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"((?:19|20)\d\d)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th|er)?"
# "13 October 2023", "October 13, 2023", "October 2023", "2023": most precise first.
_DAY_MONTH_YEAR = text_patterns.compile(
    rf"\b{_DAY}\s+{_MONTH},?\s+{_YEAR}\b", text_patterns.IGNORECASE
)
_MONTH_DAY_YEAR = text_patterns.compile(
    rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", text_patterns.IGNORECASE
)
_MONTH_YEAR = text_patterns.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", text_patterns.IGNORECASE)
_YEAR_ONLY = text_patterns.compile(rf"\b{_YEAR}\b")
_RELATIVE = text_patterns.compile(
    r"\b(yesterday|hier|last\s+(?:week|month|year)|(?:l'|la\s+)?(?:semaine|mois|année|annee)"
    r"\s+derni[eè]re?)\b",
    text_patterns.IGNORECASE,
)
# What a day or a month named in a question covers: the turn telling of it is often a few days
# later ("we went yesterday", "last weekend").
SLACK = timedelta(days=7)


@dataclass(frozen=True)
class Period:
    """A half-open period [start, end) that a query's words point at."""

    start: datetime
    end: datetime


def _month_period(year: int, month: int) -> Period:
    start = datetime(year, month, 1, tzinfo=UTC)
    following = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return Period(start, following + SLACK)


def _relative_period(cue: str, now: datetime) -> Period:
    cue = cue.casefold()
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if cue in ("yesterday", "hier"):
        return Period(today - timedelta(days=1), today + timedelta(days=1))
    if "week" in cue or "semaine" in cue:
        return Period(today - timedelta(days=14), today + timedelta(days=1))
    if "month" in cue or "mois" in cue:
        last = (today.replace(day=1) - timedelta(days=1)).replace(day=1)
        return Period(last, today.replace(day=1) + SLACK)
    return Period(
        datetime(today.year - 1, 1, 1, tzinfo=UTC), datetime(today.year, 1, 1, tzinfo=UTC) + SLACK
    )


def query_period(query: str, *, now: datetime) -> Period | None:
    """The period the query names, if it names one: a day, a month, a year or a relative one."""
    for pattern, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        match = pattern.search(query)
        if match:
            parts = dict(zip(order, match.groups(), strict=True))
            try:
                day = datetime(
                    int(parts["y"]), _MONTHS[parts["m"].casefold()], int(parts["d"]), tzinfo=UTC
                )
            except ValueError:  # "31 February": no such day, so no cue
                return None
            return Period(day - timedelta(days=1), day + SLACK)
    match = _MONTH_YEAR.search(query)
    if match:
        return _month_period(int(match.group(2)), _MONTHS[match.group(1).casefold()])
    match = _YEAR_ONLY.search(query)
    if match:
        year = int(match.group(1))
        return Period(
            datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC) + SLACK
        )
    match = _RELATIVE.search(query)
    if match:
        return _relative_period(match.group(1), now)
    return None
