"""The self-tuning threshold: windows of decisions move it within its bounds, and are recorded."""

from __future__ import annotations

import pytest

from review import decisions
from review.models import ThresholdChange
from review.tuning import next_threshold

MARKS = {"high_mark": 0.8, "low_mark": 0.3, "step": 0.05, "floor": 0.3, "ceiling": 0.9}


@pytest.mark.parametrize(
    ("threshold", "rate", "expected"),
    [
        (0.6, 0.9, 0.55),  # Mostly approved: capture more.
        (0.6, 0.2, 0.65),  # Mostly rejected: cut noise.
        (0.6, 0.8, 0.6),  # At the high mark exactly: no change.
        (0.6, 0.3, 0.6),  # At the low mark exactly: no change.
        (0.32, 1.0, 0.3),  # Never below the floor.
        (0.88, 0.0, 0.9),  # Never above the ceiling.
        (0.3, 1.0, 0.3),
        (0.9, 0.0, 0.9),
    ],
)
def test_next_threshold(threshold, rate, expected):
    assert next_threshold(threshold=threshold, approval_rate=rate, **MARKS) == expected


@pytest.fixture
def small_windows(workspace):
    workspace.review_window = 4
    workspace.save(update_fields=["review_window"])
    return workspace


@pytest.fixture
def decide(report, reviewer, reviewer_actor, embedder):
    """Capture `count` distinct answers and approve or reject each."""
    topics = [
        "the Lyon store's Sunday hours",
        "returning a damaged parcel",
        "gift wrapping prices",
        "delivery to Belgium",
        "the loyalty card",
        "lost passwords",
        "invoice copies",
        "student discounts",
        "click and collect",
        "the repair service",
    ]
    counter = iter(range(1000))

    def run(outcome, count):
        for _ in range(count):
            n = next(counter)
            candidate = report(
                f"Question {n} about {topics[n % len(topics)]}?", "No idea."
            ).candidate
            if outcome == "approve":
                decisions.approve_candidate(
                    workspace=reviewer.workspace,
                    candidate_id=candidate.pk,
                    reviewer=reviewer,
                    actor=reviewer_actor,
                    embedder=embedder,
                    answer=f"Answer {n}.",
                )
            else:
                decisions.reject_candidate(
                    workspace=reviewer.workspace,
                    candidate_id=candidate.pk,
                    reviewer=reviewer,
                    actor=reviewer_actor,
                    reason="not useful",
                )

    return run


def threshold_of(workspace):
    workspace.refresh_from_db()
    return workspace.review_threshold


def test_a_window_of_approvals_lowers_the_threshold_and_is_recorded(small_windows, decide):
    decide("approve", 3)
    assert threshold_of(small_windows) == 0.6  # The window is not full yet.
    decide("approve", 1)
    assert threshold_of(small_windows) == 0.55
    change = ThresholdChange.objects.get(workspace=small_windows)
    assert (change.previous_threshold, change.threshold) == (0.6, 0.55)
    assert (change.window_size, change.approvals, change.rejections) == (4, 4, 0)
    assert change.approval_rate == 1.0
    assert change.decisions.count() == 4


def test_a_window_of_rejections_raises_the_threshold(small_windows, decide):
    decide("reject", 4)
    assert threshold_of(small_windows) == 0.65
    change = ThresholdChange.objects.get(workspace=small_windows)
    assert (change.approvals, change.rejections, change.approval_rate) == (0, 4, 0.0)


def test_a_mixed_window_keeps_the_threshold_but_is_still_recorded(small_windows, decide):
    decide("approve", 2)
    decide("reject", 2)
    assert threshold_of(small_windows) == 0.6
    change = ThresholdChange.objects.get(workspace=small_windows)
    assert not change.is_change
    assert change.approval_rate == 0.5


def test_the_threshold_never_passes_its_floor_or_its_ceiling(small_windows, decide):
    small_windows.review_floor = 0.5
    small_windows.review_ceiling = 0.7
    small_windows.save(update_fields=["review_floor", "review_ceiling"])
    decide("approve", 4 * 3)
    assert threshold_of(small_windows) == 0.5
    decide("reject", 4 * 5)
    assert threshold_of(small_windows) == 0.7
    thresholds = ThresholdChange.objects.filter(workspace=small_windows).values_list(
        "threshold", flat=True
    )
    assert len(thresholds) == 8
    assert all(0.5 <= value <= 0.7 for value in thresholds)


def test_skips_do_not_count_as_decisions(small_windows, report, reviewer, reviewer_actor):
    for n in range(4):
        candidate = report(f"Skipped question number {n} about parcels?", "No idea.").candidate
        decisions.skip_candidate(
            workspace=reviewer.workspace, candidate_id=candidate.pk, actor=reviewer_actor
        )
    assert not ThresholdChange.objects.filter(workspace=small_windows).exists()


def test_a_lowered_threshold_no_longer_captures_answers_just_below_the_old_one(
    small_windows, decide, report
):
    signals = {"retrieval": 0.5, "policy": 1.0, "completeness": 0.4, "memory": 0.5}  # 0.58
    assert report("What is the warranty on headphones?", "Two years.", signals).is_captured
    decide("approve", 4)
    assert not report("What is the warranty on speakers?", "Two years.", signals).is_captured
