"""Time cues in a search query (queries/query_dates.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoryhub.queries.query_dates import query_period

NOW = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)


def _day(year, month, day):
    return datetime(year, month, day, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What painting did she show on October 13, 2023?", _day(2023, 10, 12), _day(2023, 10, 20)),
        ("What did Gina find on 1 February, 2023?", _day(2023, 1, 31), _day(2023, 2, 8)),
        ("What setback did Melanie face in October 2023?", _day(2023, 10, 1), _day(2023, 11, 8)),
        ("Qu'a-t-il fait en décembre 2024 ?", _day(2024, 12, 1), _day(2025, 1, 8)),
        ("How many times has she gone to the beach in 2023?", _day(2023, 1, 1), _day(2024, 1, 8)),
        ("Where did we go camping last year?", _day(2025, 1, 1), _day(2026, 1, 8)),
        ("What did I eat yesterday?", _day(2026, 11, 30), _day(2026, 12, 2)),
        ("What did I buy last month?", _day(2026, 11, 1), _day(2026, 12, 8)),
    ],
)
def test_a_named_period_becomes_a_window(query, start, end):
    period = query_period(query, now=NOW)
    assert period is not None
    assert (period.start, period.end) == (start, end)


@pytest.mark.parametrize(
    "query",
    [
        "When did she go camping?",  # asks for a date, names none
        "She may come to the party",  # "may" the verb, not the month
        "What happened on 31 February, 2023?",  # no such day
        "Room 12, floor 3",
    ],
)
def test_a_query_naming_no_period_has_none(query):
    assert query_period(query, now=NOW) is None
