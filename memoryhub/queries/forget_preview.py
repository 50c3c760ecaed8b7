"""What a forget would delete, before it does: the items by their text, and what goes with them."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import MemoryItem, decrypt_memory, memories_of
from memoryhub.models import Memory, MemorySource, MemoryVersion, Mode, User
from memoryhub.services.forget_cascade import cascade
from memoryhub.services.forget_selection import ForgetSelector, plan_forget

# The workspace `manage.py load_demo` (and so `make run`) fills: its memories are written by
# MemoryHub itself, without an agent or a conversation, at start-up.
DEMO_WORKSPACE_SLUG = "demo"
# A preview lists this many items by their text; the rest are counted.
MAX_LISTED = 50


@dataclass(frozen=True)
class ForgetPreview:
    """The memories a forget would delete (newest first), and counts of what goes with them."""

    items: tuple[MemoryItem, ...]
    memory_count: int
    message_count: int
    working_memory_count: int
    journal_count: int
    version_count: int
    rewritten_count: int
    # How many of the items are the demo data `make run` loaded.
    demo_count: int

    @property
    def total(self) -> int:
        return (
            self.memory_count
            + self.message_count
            + self.working_memory_count
            + self.journal_count
            + self.version_count
        )

    @property
    def unlisted_count(self) -> int:
        return self.memory_count - len(self.items)


def _is_demo(row: Memory, user: User) -> bool:
    return (
        user.workspace.slug == DEMO_WORKSPACE_SLUG
        and row.agent_id is None
        and row.session_id is None
        and row.source != MemorySource.USER
    )


def preview_forget(
    *, user: User, mode: Mode, selector: ForgetSelector, actor: Actor, embedder: Embedder
) -> ForgetPreview:
    """Plan the forget exactly as `forget` does (provenance cascade included), delete nothing.

    Raises InvalidInputError for an empty or malformed selector, like `forget`.
    """
    cipher = cipher_for(user)
    plan = plan_forget(user=user, mode=mode, selector=selector, cipher=cipher, embedder=embedder)
    cascade(user=user, mode=mode, plan=plan, cipher=cipher)
    rows = list(
        memories_of(user=user, mode=mode)
        .filter(pk__in=plan.memory_ids)
        .defer("embedding", "blind_tokens")
        .order_by("-created_at", "-id")
    )
    items = tuple(decrypt_memory(row, cipher) for row in rows[:MAX_LISTED])
    versions = MemoryVersion.objects.filter(
        Q(memory_id__in=plan.memory_ids) | Q(pk__in=plan.version_ids)
    )
    preview = ForgetPreview(
        items=items,
        memory_count=len(rows),
        message_count=len(plan.message_ids),
        working_memory_count=len(plan.working_memory_session_ids),
        journal_count=len(plan.journal_ids),
        version_count=versions.count(),
        rewritten_count=len(plan.regenerate_ids) + len(plan.restores),
        demo_count=sum(1 for row in rows if _is_demo(row, user)),
    )
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.FORGET_PREVIEW,
        object_ids=[item.id for item in items],
        mode=mode.slug,
    )
    return preview
