"""Read imports: a user's recent ones, and the memories one brought that wait for review."""

from __future__ import annotations

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import MemoryItem, decrypt_memory
from memoryhub.models import ImportJob, Memory, User

from .review import imported_candidates

RECENT_IMPORTS = 20


def recent_imports(*, user: User) -> list[ImportJob]:
    """The user's latest imports, newest first (receipts only: no memory text)."""
    return list(
        ImportJob.objects.filter(user=user)
        .select_related("mode")
        .order_by("-created_at")[:RECENT_IMPORTS]
    )


def waiting_items(*, job: ImportJob, actor: Actor) -> list[MemoryItem]:
    """The import's memories still waiting for review, decrypted; the read is audited."""
    ids = imported_candidates(job=job)
    if not ids:
        return []
    cipher = cipher_for(job.user)
    # Security invariant: the ids come from the job's own items, and the job is the user's.
    rows = Memory.all_owners.filter(user=job.user, pk__in=ids).order_by("created_at", "id")
    items = [decrypt_memory(row, cipher) for row in rows]
    record_access(
        actor=actor,
        subject_user_id=job.user_id,
        action=AuditAction.DASHBOARD_LIST,
        object_ids=[item.id for item in items],
        mode=job.mode.slug,
    )
    return items
