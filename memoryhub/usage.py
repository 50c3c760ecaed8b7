"""How much a user and their workspace store, and how much of each daily quota they used."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.conf import settings
from django.db import connections, router
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django_stubs_ext import StrPromise

from memoryhub.models import AnswerRecord, LearningCandidate, MemoryUsage, User

# The sums of the usage rows of a workspace's users (see `workspace_usage`).
_WORKSPACE_USAGE_SQL = (
    'SELECT coalesce(sum(mu."memory_count"), 0)::bigint, '  # noqa: S608  # Our own names.
    'coalesce(sum(mu."stored_bytes"), 0)::bigint '
    f"FROM {MemoryUsage._meta.db_table} mu "
    f'JOIN {User._meta.db_table} u ON mu."user_id" = u."id" WHERE u."workspace_id" = %s'
)


@dataclass(frozen=True)
class Usage:
    """Memory rows and their stored bytes (ciphertext of content and payload)."""

    memories: int
    stored_bytes: int


@dataclass(frozen=True)
class UsageLine:
    """One quota as the user sees it: what they use of it; `limit` 0 means no limit."""

    label: StrPromise  # Translated when shown.
    used: int
    limit: int
    is_bytes: bool = False

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.used / self.limit)) if self.limit else 0


def start_of_day(now: datetime | None = None) -> datetime:
    """Midnight (UTC) of today: the daily quotas count from here."""
    return (now or timezone.now()).replace(hour=0, minute=0, second=0, microsecond=0)


def user_usage(user_id: UUID) -> Usage:
    """The user's counts, from the row the memory table's triggers keep (no count of memories)."""
    row = MemoryUsage.objects.filter(user_id=user_id).values_list("memory_count", "stored_bytes")
    memories, stored_bytes = row.first() or (0, 0)
    return Usage(memories=memories, stored_bytes=stored_bytes)


def workspace_usage(workspace_id: int) -> Usage:
    """The sum of the usage rows of the workspace's users: one row a user, not a memory."""
    # Hand-written SQL: every remember in a workspace with a quota asks, and the ORM's compile
    # of this aggregate cost more Python than its answer (issue 34).
    with connections[router.db_for_read(MemoryUsage)].cursor() as cursor:
        cursor.execute(_WORKSPACE_USAGE_SQL, [workspace_id])
        row = cursor.fetchone()
    memories, stored_bytes = row if row is not None else (0, 0)
    return Usage(memories=int(memories), stored_bytes=int(stored_bytes))


def answers_today(user_id: UUID, *, now: datetime | None = None) -> int:
    """Answers the user's agents reported since midnight (through answer_record_daily_idx)."""
    since = start_of_day(now)
    return AnswerRecord.objects.filter(user_id=user_id, created_at__gte=since).count()


def candidates_today(workspace_id: int, *, now: datetime | None = None) -> int:
    """Learning candidates queued in the workspace since midnight, whatever became of them."""
    since = start_of_day(now)
    return LearningCandidate.objects.filter(
        workspace_id=workspace_id, created_at__gte=since
    ).count()


def usage_lines(user: User) -> list[UsageLine]:
    """The user's own quotas for the dashboard: memories, bytes and today's answers.

    Workspace totals are left out: they would tell one user what the others store.
    """
    usage = user_usage(user.pk)
    return [
        UsageLine(_("Memories"), usage.memories, settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER),
        UsageLine(
            _("Stored text"),
            usage.stored_bytes,
            settings.MEMORYHUB_QUOTA_BYTES_PER_USER,
            is_bytes=True,
        ),
        UsageLine(
            _("Answers reported today"),
            answers_today(user.pk),
            settings.MEMORYHUB_QUOTA_ANSWERS_PER_USER_PER_DAY,
        ),
    ]
