"""Answer confidence: the composite, signal checks, hallucination signals, failure classes."""

from __future__ import annotations

from datetime import date

import pytest

from memoryhub.errors import InvalidInputError
from memoryhub.knowledge.scoring import (
    MEMORY_ID_NOT_IN_CONTEXT,
    PAST_DATE_AS_UPCOMING,
    Signals,
    check_signals,
    classify_failure,
    composite_confidence,
    find_hallucination_signals,
    signal_weights,
)
from memoryhub.models import FailureClass

TODAY = date(2025, 6, 15)
MEMORY_ID = "2b1f7c3e-8a44-4a4e-9c55-0f6b1f3f9d21"


def signals(retrieval=1.0, policy=1.0, completeness=1.0, memory=1.0):
    return Signals(retrieval=retrieval, policy=policy, completeness=completeness, memory=memory)


def test_composite_uses_the_default_weights_for_an_empty_setting():
    weights = signal_weights({})
    value = composite_confidence(signals(0.5, 1.0, 0.0, 1.0), weights)
    assert value == pytest.approx(0.4 * 0.5 + 0.2 * 1.0 + 0.2 * 0.0 + 0.2 * 1.0)


def test_composite_uses_the_workspace_weights_scaled_to_one():
    weights = signal_weights({"retrieval": 2, "policy": 0, "completeness": 0, "memory": 2})
    assert composite_confidence(signals(1.0, 0.0, 0.0, 0.0), weights) == pytest.approx(0.5)


def test_workspace_weights_may_set_only_some_signals():
    weights = signal_weights({"retrieval": 0.0})
    # Without retrieval, the other three defaults (0.2 each) share the whole weight.
    assert composite_confidence(signals(0.0, 1.0, 1.0, 1.0), weights) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "configured",
    [
        {"retrieval": -1},
        {"retrieval": "heavy"},
        {"retrieval": True},
        {"retrieval": 0, "policy": 0, "completeness": 0, "memory": 0},
    ],
)
def test_malformed_workspace_weights_fall_back_to_the_defaults(configured):
    assert signal_weights(configured) == signal_weights({})


def test_check_signals_accepts_the_bounds():
    checked = check_signals({"retrieval": 0, "policy": 1, "completeness": 0.5, "memory": 1.0})
    assert checked == signals(0.0, 1.0, 0.5, 1.0)


@pytest.mark.parametrize(
    "values",
    [
        {"policy": 1, "completeness": 1, "memory": 1},
        {"retrieval": 1.5, "policy": 1, "completeness": 1, "memory": 1},
        {"retrieval": -0.1, "policy": 1, "completeness": 1, "memory": 1},
        {"retrieval": "high", "policy": 1, "completeness": 1, "memory": 1},
        {"retrieval": True, "policy": 1, "completeness": 1, "memory": 1},
        {"retrieval": float("nan"), "policy": 1, "completeness": 1, "memory": 1},
    ],
)
def test_check_signals_refuses_missing_or_out_of_range_values(values):
    with pytest.raises(InvalidInputError):
        check_signals(values)


def test_low_retrieval_is_a_retrieval_miss():
    assert classify_failure(signals(retrieval=0.2)) == FailureClass.RETRIEVAL_MISS


def test_low_policy_is_a_policy_block_even_when_retrieval_is_low_too():
    assert classify_failure(signals(retrieval=0.1, policy=0.0)) == FailureClass.POLICY_BLOCK


def test_low_completeness_is_an_incomplete_answer():
    assert classify_failure(signals(completeness=0.3)) == FailureClass.INCOMPLETE


def test_weak_memory_support_alone_is_a_retrieval_miss():
    assert classify_failure(signals(0.7, 0.9, 0.9, 0.55)) == FailureClass.RETRIEVAL_MISS


def test_the_weakest_signal_names_the_class_when_none_is_low():
    assert classify_failure(signals(0.9, 0.9, 0.6, 0.9)) == FailureClass.INCOMPLETE


def test_a_hallucination_finding_wins_over_low_signals():
    assert (
        classify_failure(signals(retrieval=0.1), findings=[PAST_DATE_AS_UPCOMING])
        == FailureClass.HALLUCINATION
    )


@pytest.mark.parametrize(
    "answer",
    [
        "Your upcoming dentist appointment is on 2025-03-02.",
        "Don't forget: the team offsite will take place on March 3, 2025.",
        "The next board meeting is scheduled for 12 January 2024.",
        "Votre prochain rendez-vous est le 3 mars 2025.",
        "La réunion aura lieu le 1er février 2025.",
    ],
)
def test_a_past_date_presented_as_upcoming_is_a_hallucination_signal(answer):
    assert find_hallucination_signals(answer, context_ids=(), today=TODAY) == (
        PAST_DATE_AS_UPCOMING,
    )


@pytest.mark.parametrize(
    "answer",
    [
        "Your upcoming dentist appointment is on 2025-07-02.",
        "You went to the dentist on 2025-03-02.",
        "The offsite took place on March 3, 2025. The next one will be announced soon.",
        # 03/07/2025 is 3 July or 7 March: not certainly past, so not flagged.
        "Your next appointment is on 03/07/2025.",
    ],
)
def test_future_dates_and_past_events_are_not_hallucination_signals(answer):
    assert find_hallucination_signals(answer, context_ids=(), today=TODAY) == ()


def test_an_ambiguous_numeric_date_past_in_both_readings_is_flagged():
    answer = "Your next appointment is on 03/04/2025."
    assert find_hallucination_signals(answer, context_ids=(), today=TODAY) == (
        PAST_DATE_AS_UPCOMING,
    )


def test_citing_a_memory_id_not_in_the_context_is_a_hallucination_signal():
    answer = f"According to memory {MEMORY_ID}, you prefer tea."
    assert find_hallucination_signals(answer, context_ids=["other"], today=TODAY) == (
        MEMORY_ID_NOT_IN_CONTEXT,
    )


def test_citing_a_memory_id_from_the_context_is_fine_whatever_its_case():
    answer = f"According to memory {MEMORY_ID.upper()}, you prefer tea."
    assert find_hallucination_signals(answer, context_ids=[MEMORY_ID], today=TODAY) == ()
