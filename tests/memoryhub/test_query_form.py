"""The form of a search query (queries/query_form.py)."""

from __future__ import annotations

import pytest

from memoryhub.queries.query_form import is_speculative


@pytest.mark.parametrize(
    "query",
    [
        "Would Caroline pursue writing as a career option?",
        "What might John's degree be in?",
        "What would Caroline's political leaning likely be?",
        "Could Alice enjoy a hiking trip?",
        "Is Bob probably a morning person?",
    ],
)
def test_a_question_asking_for_a_guess_is_speculative(query):
    assert is_speculative(query)


@pytest.mark.parametrize(
    "query",
    [
        "What books has Melanie read?",
        "When did Alice move to Lyon?",
        "Where does Bob work?",
        "Could you remind me where Bob works?",
        "Would you tell me what I said about Lyon?",
        "Qu'est-ce qu'Alice aimerait faire ?",
        "wouldn't-be-a-word",
    ],
)
def test_a_question_asking_for_a_stated_fact_or_a_request_is_not_speculative(query):
    assert not is_speculative(query)
