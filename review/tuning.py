"""The self-tuning review threshold: after each window of decisions, move it by a step.

As issue #7 specifies: an approval rate above the high mark lowers the threshold, one below
the low mark raises it, and it never leaves [floor, ceiling]. Every closed window is recorded
with its figures, also when the threshold stays.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from memoryhub.models import LearningCandidate, User, Workspace

from .models import ReviewDecision, ThresholdChange


def next_threshold(
    *,
    threshold: float,
    approval_rate: float,
    high_mark: float,
    low_mark: float,
    step: float,
    floor: float,
    ceiling: float,
) -> float:
    """The threshold after a window with this approval rate, kept within [floor, ceiling]."""
    if approval_rate > high_mark:
        threshold -= step
    elif approval_rate < low_mark:
        threshold += step
    # Rounded so repeated steps of 0.05 do not drift into 0.5499999.
    return round(min(ceiling, max(floor, threshold)), 4)


def close_full_windows(*, workspace: Workspace) -> list[ThresholdChange]:
    """Close every full window of decisions not yet counted, adjusting the threshold each time."""
    changes: list[ThresholdChange] = []
    with transaction.atomic():
        # The lock serialises reviewers deciding at once, so no decision lands in two windows.
        locked = Workspace.objects.select_for_update().get(pk=workspace.pk)
        size = max(1, locked.review_window)
        while True:
            window = list(
                ReviewDecision.objects.filter(workspace=locked, window__isnull=True).order_by("id")[
                    :size
                ]
            )
            if len(window) < size:
                break
            approvals = sum(d.outcome == ReviewDecision.Outcome.APPROVED for d in window)
            rate = approvals / size
            previous = locked.review_threshold
            locked.review_threshold = next_threshold(
                threshold=previous,
                approval_rate=rate,
                high_mark=locked.review_high_mark,
                low_mark=locked.review_low_mark,
                step=locked.review_step,
                floor=locked.review_floor,
                ceiling=locked.review_ceiling,
            )
            locked.save(update_fields=["review_threshold"])
            change = ThresholdChange.objects.create(
                workspace=locked,
                previous_threshold=previous,
                threshold=locked.review_threshold,
                window_size=size,
                approvals=approvals,
                rejections=size - approvals,
                approval_rate=round(rate, 4),
                queue_size=LearningCandidate.objects.filter(workspace=locked).pending().count(),
            )
            ReviewDecision.objects.filter(pk__in=[d.pk for d in window]).update(window=change)
            changes.append(change)
    # Keep the caller's workspace object current (it holds the threshold the API reads).
    workspace.review_threshold = locked.review_threshold
    return changes


def record_decisions(
    *,
    workspace: Workspace,
    candidates: Sequence[LearningCandidate],
    reviewer: User | None,
    outcome: str,
) -> list[ThresholdChange]:
    """Count approvals or rejections towards the workspace's windows; return windows closed."""
    ReviewDecision.objects.bulk_create(
        ReviewDecision(workspace=workspace, candidate=c, reviewer=reviewer, outcome=outcome)
        for c in candidates
    )
    return close_full_windows(workspace=workspace)
