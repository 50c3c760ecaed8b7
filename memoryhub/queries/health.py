"""Memory health KPIs for admins: counts and shares only, never a memory's text."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from django.db.models import Count, Exists, OuterRef, Q, Sum
from django.db.models.functions import TruncWeek
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.models import (
    Confidence,
    ExtractionRun,
    Memory,
    MemoryKind,
    MemoryStatus,
    Message,
    User,
)
from memoryhub.services.confidence import LADDER_KINDS

TOP_USERS = 50


@dataclass(frozen=True)
class UserHealth:
    user_id: UUID
    label: str
    memories: int
    dormant: int
    added_last_4_weeks: int

    @property
    def growth_per_week(self) -> float:
        return self.added_last_4_weeks / 4


@dataclass(frozen=True)
class WeekGrowth:
    week: datetime
    added: int


@dataclass(frozen=True)
class HealthReport:
    """The KPIs of a healthy store (issue 8); shares are fractions in [0, 1]."""

    memories: int
    users_with_memories: int
    facts: int
    superseded_facts: int
    contradicted_facts: int
    dormant: int
    themes: int
    compacted_messages: int
    items_written: int
    items_rejected: int
    weekly_growth: tuple[WeekGrowth, ...]
    top_users: tuple[UserHealth, ...]

    @property
    def superseded_share(self) -> float:
        return self.superseded_facts / self.facts if self.facts else 0.0

    @property
    def contradicted_share(self) -> float:
        return self.contradicted_facts / self.facts if self.facts else 0.0

    @property
    def dormant_share(self) -> float:
        return self.dormant / self.memories if self.memories else 0.0

    @property
    def rejected_share(self) -> float:
        extracted = self.items_written + self.items_rejected
        return self.items_rejected / extracted if extracted else 0.0


def _weekly_growth(since: datetime) -> tuple[WeekGrowth, ...]:
    rows = (
        Memory.all_owners.filter(created_at__gte=since)
        .annotate(week=TruncWeek("created_at"))
        .values("week")
        .annotate(added=Count("pk"))
        .order_by("week")
    )
    return tuple(WeekGrowth(week=row["week"], added=row["added"]) for row in rows)


def _top_users(recent: datetime) -> tuple[UserHealth, ...]:
    # Counted from the memory side (a system-wide aggregate), then labelled from the users.
    rows = (
        Memory.all_owners.values("user_id")
        .annotate(
            memories=Count("pk"),
            dormant=Count("pk", filter=Q(is_dormant=True)),
            recent=Count("pk", filter=Q(created_at__gte=recent)),
        )
        .order_by("-memories", "user_id")[:TOP_USERS]
    )
    labels = {
        user.pk: str(user)
        for user in User.objects.filter(pk__in=[row["user_id"] for row in rows]).only(
            "pk", "email", "external_id"
        )
    }
    return tuple(
        UserHealth(
            user_id=row["user_id"],
            label=labels.get(row["user_id"], str(row["user_id"])),
            memories=row["memories"],
            dormant=row["dormant"],
            added_last_4_weeks=row["recent"],
        )
        for row in rows
    )


def memory_health(*, actor: Actor, now: datetime | None = None, weeks: int = 8) -> HealthReport:
    """Aggregate the store's KPIs over every user (counts only; nothing is decrypted)."""
    now = now or timezone.now()
    record_access(actor=actor, subject_user_id=None, action=AuditAction.ADMIN_HEALTH)
    memories = Memory.all_owners.all()
    facts = memories.filter(kind__in=LADDER_KINDS)
    # An open contradiction: a candidate whose slot already holds a current value.
    current_of_slot = Memory.all_owners.filter(
        user_id=OuterRef("user_id"),
        mode_id=OuterRef("mode_id"),
        slot_hash=OuterRef("slot_hash"),
        status=MemoryStatus.ACTIVE,
    ).exclude(pk=OuterRef("pk"))
    contradicted = (
        facts.filter(confidence=Confidence.CANDIDATE)
        .exclude(slot_hash="")
        .filter(Exists(current_of_slot))
        .count()
    )
    totals = memories.aggregate(
        count=Count("pk"),
        dormant=Count("pk", filter=Q(is_dormant=True)),
        themes=Count("pk", filter=Q(kind=MemoryKind.THEME)),
        users=Count("user_id", distinct=True),
    )
    fact_totals = facts.aggregate(
        count=Count("pk"), superseded=Count("pk", filter=Q(status=MemoryStatus.SUPERSEDED))
    )
    runs = ExtractionRun.objects.aggregate(
        written=Sum("items_written", default=0), rejected=Sum("items_rejected", default=0)
    )
    return HealthReport(
        memories=totals["count"],
        users_with_memories=totals["users"],
        facts=fact_totals["count"],
        superseded_facts=fact_totals["superseded"],
        contradicted_facts=contradicted,
        dormant=totals["dormant"],
        themes=totals["themes"],
        compacted_messages=Message.objects.filter(is_compacted=True).count(),
        items_written=runs["written"],
        items_rejected=runs["rejected"],
        weekly_growth=_weekly_growth(now - timedelta(weeks=weeks)),
        top_users=_top_users(now - timedelta(weeks=4)),
    )
