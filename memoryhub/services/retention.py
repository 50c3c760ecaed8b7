"""Retention: forget what is older than the user's (or workspace's) limit, and expire leftovers."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from uuid import UUID

from django.db.models import Q
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.embeddings import Embedder
from memoryhub.models import (
    Confidence,
    JournalEntry,
    Memory,
    Message,
    Mode,
    Session,
    User,
    Workspace,
)
from memoryhub.services.forget import DeletionReceipt, ForgetSelector, forget
from memoryhub.services.sessions import expire_working_memory


@dataclass(frozen=True)
class RetentionReport:
    """What one retention run removed, summed over every user."""

    counts: dict[str, int] = field(default_factory=dict)
    users: int = 0
    working_memory_expired: int = 0
    candidates_expired: int = 0


def retention_days(user: User) -> int | None:
    """The user's own retention limit in days, else their workspace's default, else none."""
    if user.retention_days:
        return user.retention_days
    return user.workspace.default_retention_days or None


def _has_anything_before(user: User, mode: Mode, cutoff: datetime) -> bool:
    # Checked first so that a run with nothing to do writes no audit row: re-runs stay silent.
    return (
        Memory.objects.for_owner(user=user, mode=mode).filter(created_at__lt=cutoff).exists()
        or Message.objects.filter(
            session__user=user, session__mode=mode, created_at__lt=cutoff
        ).exists()
        or Session.objects.for_owner(user=user, mode=mode)
        .filter(working_memory_updated_at__lt=cutoff)
        .exists()
        or JournalEntry.objects.filter(user=user, mode=mode, created_at__lt=cutoff).exists()
    )


def _add(counts: dict[str, int], receipt: DeletionReceipt) -> None:
    for kind, count in receipt.counts.items():
        counts[kind] = counts.get(kind, 0) + count


def apply_retention(
    *, embedder: Embedder | None = None, now: datetime | None = None
) -> RetentionReport:
    """Forget everything older than each user's retention limit; expire stale leftovers.

    Without `embedder`, each user's forget embeds with their workspace's model.
    Also erases working memory past its TTL and candidate facts never confirmed within their
    workspace's `candidate_expiry_days`. Safe to run twice: a second run finds nothing.
    """
    now = now or timezone.now()
    actor = Actor.system("retention")
    counts: dict[str, int] = {}
    users = 0
    limited = User.objects.select_related("workspace").filter(
        Q(retention_days__gt=0) | Q(workspace__default_retention_days__gt=0)
    )
    for user in limited.order_by("pk"):
        days = retention_days(user)
        if days is None:
            continue
        cutoff = now - timedelta(days=days)
        touched = False
        for mode in Mode.objects.filter(user=user).order_by("pk"):
            if not _has_anything_before(user, mode, cutoff):
                continue
            receipt = forget(
                user=user,
                mode=mode,
                selector=ForgetSelector(until=cutoff),
                actor=actor,
                embedder=embedder,
            )
            _add(counts, receipt)
            touched = True
        users += touched
    candidate_receipts = expire_candidates(embedder=embedder, now=now)
    for receipt in candidate_receipts:
        _add(counts, receipt)
    return RetentionReport(
        counts=counts,
        users=users,
        working_memory_expired=expire_working_memory(now=now),
        candidates_expired=sum(len(receipt.memory_ids) for receipt in candidate_receipts),
    )


def expire_candidates(
    *, embedder: Embedder | None = None, now: datetime | None = None
) -> list[DeletionReceipt]:
    """Forget candidate memories nobody confirmed within their workspace's expiry."""
    now = now or timezone.now()
    actor = Actor.system("retention")
    receipts: list[DeletionReceipt] = []
    for workspace in Workspace.objects.filter(candidate_expiry_days__gt=0).order_by("pk"):
        cutoff = now - timedelta(days=workspace.candidate_expiry_days)
        stale = Memory.all_owners.filter(
            user__workspace=workspace, confidence=Confidence.CANDIDATE, created_at__lt=cutoff
        ).values_list("user_id", "mode_id", "pk")
        by_scope: dict[tuple[UUID, int], list[UUID]] = defaultdict(list)
        for user_id, mode_id, memory_id in stale:
            by_scope[(user_id, mode_id)].append(memory_id)
        for (user_id, mode_id), memory_ids in sorted(by_scope.items(), key=str):
            mode = Mode.objects.select_related("user__workspace").get(pk=mode_id, user_id=user_id)
            receipts.append(
                forget(
                    user=mode.user,
                    mode=mode,
                    selector=ForgetSelector(memory_ids=tuple(memory_ids)),
                    actor=actor,
                    embedder=embedder,
                )
            )
    return receipts
