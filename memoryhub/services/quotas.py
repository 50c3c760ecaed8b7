"""The quotas every write checks: memories and bytes per user and workspace, answers and
learning candidates per day. Each raises QuotaExceededError (429 `quota_exceeded`).

Below every writing service (memories, extraction, answers), like write_checks.py. The counts
come from usage.py: one usage row a user, kept by triggers, never a count of memories.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.conf import settings
from django.db import connections, router
from django.db.transaction import TransactionManagementError
from django.utils.translation import gettext_noop

from memoryhub.crypto import NONCE_BYTES
from memoryhub.errors import QuotaExceededError
from memoryhub.model_rows import RowShape
from memoryhub.models import Memory, MemoryUsage, User, Workspace
from memoryhub.usage import answers_today, candidates_today, workspace_usage

# What sealing adds to a text: a format byte, the nonce and the GCM tag (memoryhub/crypto.py).
SEAL_OVERHEAD_BYTES = 1 + NONCE_BYTES + 16
# The user's usage row made if missing, then locked (see `lock_usage`).
_USAGE = RowShape(MemoryUsage, "mu")
_CREATE_USAGE_SQL = (
    f"INSERT INTO {MemoryUsage._meta.db_table} "  # noqa: S608  # Our own names.
    '("user_id", "memory_count", "stored_bytes") VALUES (%s, 0, 0) ON CONFLICT DO NOTHING'
)
_LOCK_USAGE_SQL = (
    f"SELECT {_USAGE.sql} FROM {MemoryUsage._meta.db_table} mu "  # noqa: S608  # Our own names.
    'WHERE mu."user_id" = %s FOR UPDATE'
)


def stored_size(row: Memory) -> int:
    """The bytes a memory row counts for: its content and payload ciphertexts."""
    return len(row.content_ciphertext) + len(row.payload_ciphertext or b"")


def _refuse_above(used: int, adding: int, limit: int, *, quota: str, what: str) -> None:
    if limit > 0 and adding > 0 and used + adding > limit:
        raise QuotaExceededError(
            gettext_noop("{quota}: this would make {count} {what}; the limit is {limit}"),
            quota=quota,
            count=used + adding,
            what=what,
            limit=limit,
        )


def lock_usage(user_id: UUID) -> MemoryUsage:
    """Lock the user's usage row until the transaction ends (call inside atomic).

    Every transaction that writes a user's memories takes it first: the triggers update it at
    each insert, re-seal and delete, so a writer that locked a memory row first and the row
    second could deadlock with one that went the other way (an edit against an extraction).
    """
    # Hand-written SQL (the same two statements the ORM sent): every remember takes this lock,
    # and the ORM's compile of the insert and the locking read cost more Python than the rest
    # of the quota check (issue 34).
    using = router.db_for_write(MemoryUsage)
    if connections[using].get_autocommit():  # As select_for_update: a lock needs a transaction.
        raise TransactionManagementError("lock_usage must run inside a transaction")
    with connections[using].cursor() as cursor:
        cursor.execute(_CREATE_USAGE_SQL, [user_id])
        cursor.execute(_LOCK_USAGE_SQL, [user_id])
        row = cursor.fetchone()
    usage = None if row is None else _USAGE.build(row, start=0, using=using)
    if usage is None:  # Deleted between the two statements: the user's deletion.
        raise MemoryUsage.DoesNotExist("the user's usage row is gone")
    return usage


def check_memory_quota(*, user: User, memories: int, stored_bytes: int) -> None:
    """Refuse a write that would take the user or their workspace past a memory quota.

    Call it inside the write's transaction: it locks the user's usage row until the commit, so
    two writes of one user never both pass on the same count. Writes of different users of one
    workspace are not serialised (that would make the workspace one queue): together they may
    pass the workspace quotas by at most what they write at once.
    """
    usage = lock_usage(user.pk)
    _refuse_above(
        usage.memory_count,
        memories,
        settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER,
        quota="MEMORYHUB_QUOTA_MEMORIES_PER_USER",
        what=gettext_noop("memories for this user"),
    )
    _refuse_above(
        usage.stored_bytes,
        stored_bytes,
        settings.MEMORYHUB_QUOTA_BYTES_PER_USER,
        quota="MEMORYHUB_QUOTA_BYTES_PER_USER",
        what=gettext_noop("stored bytes for this user"),
    )
    memory_limit = settings.MEMORYHUB_QUOTA_MEMORIES_PER_WORKSPACE
    bytes_limit = settings.MEMORYHUB_QUOTA_BYTES_PER_WORKSPACE
    if memory_limit <= 0 and bytes_limit <= 0:
        return
    # Totals only, named by the setting: never what any other user of the workspace stores.
    totals = workspace_usage(user.workspace_id)
    _refuse_above(
        totals.memories,
        memories,
        memory_limit,
        quota="MEMORYHUB_QUOTA_MEMORIES_PER_WORKSPACE",
        what=gettext_noop("memories in this workspace"),
    )
    _refuse_above(
        totals.stored_bytes,
        stored_bytes,
        bytes_limit,
        quota="MEMORYHUB_QUOTA_BYTES_PER_WORKSPACE",
        what=gettext_noop("stored bytes in this workspace"),
    )


def is_within_memory_quota(*, user: User, memories: int, stored_bytes: int) -> bool:
    """`check_memory_quota` for writers that skip rather than fail (extraction)."""
    try:
        check_memory_quota(user=user, memories=memories, stored_bytes=stored_bytes)
    except QuotaExceededError:
        return False
    return True


def check_answer_quota(*, user: User, now: datetime | None = None) -> None:
    """Refuse one more answer report past the user's daily quota (UTC days).

    Not locked: concurrent reports of one user may pass it by at most their number.
    """
    limit = settings.MEMORYHUB_QUOTA_ANSWERS_PER_USER_PER_DAY
    if limit > 0:
        _refuse_above(
            answers_today(user.pk, now=now),
            1,
            limit,
            quota="MEMORYHUB_QUOTA_ANSWERS_PER_USER_PER_DAY",
            what=gettext_noop("answers today for this user"),
        )


def check_candidate_quota(*, workspace: Workspace, now: datetime | None = None) -> None:
    """Refuse one more learning candidate past the workspace's daily quota (UTC days).

    Per workspace: its reviewers work one queue. Not locked, like the answer quota.
    """
    limit = settings.MEMORYHUB_QUOTA_CANDIDATES_PER_WORKSPACE_PER_DAY
    if limit > 0:
        _refuse_above(
            candidates_today(workspace.pk, now=now),
            1,
            limit,
            quota="MEMORYHUB_QUOTA_CANDIDATES_PER_WORKSPACE_PER_DAY",
            what=gettext_noop("learning candidates today in this workspace"),
        )


def has_candidate_quota_left(*, workspace: Workspace) -> bool:
    """`check_candidate_quota` for an answer's automatic capture, which skips rather than fails."""
    try:
        check_candidate_quota(workspace=workspace)
    except QuotaExceededError:
        return False
    return True
