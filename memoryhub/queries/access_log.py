"""The user's own view of the access audit log: who read or changed their memory, and when."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.paginator import Paginator

from memoryhub.models import ActorType, AuditEntry, User
from memoryhub.services.audit import subject_pseudonym

ACTOR_WORDS: dict[str, str] = {
    ActorType.USER: "You",
    ActorType.AGENT: "Agent",
    ActorType.REVIEWER: "Reviewer",
    ActorType.ADMIN: "Admin",
    ActorType.SYSTEM: "MemoryHub",
}


@dataclass(frozen=True)
class AccessEntry:
    """One audit row, in words; object ids are counted, not shown."""

    created_at: datetime
    actor_type: str
    who: str
    action: str
    mode: str
    channel: str
    item_count: int


@dataclass(frozen=True)
class AccessPage:
    entries: tuple[AccessEntry, ...]
    number: int
    num_pages: int
    total: int

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.num_pages


def _who(entry: AuditEntry) -> str:
    word = ACTOR_WORDS.get(entry.actor_type, entry.actor_type)
    if entry.actor_type in {ActorType.USER, ActorType.SYSTEM} or not entry.actor_label:
        return word
    return f"{word} “{entry.actor_label}”"


def list_access_entries(
    *, user: User, page: int = 1, per_page: int = 50, others_only: bool = False
) -> AccessPage:
    """A page of the audit rows about this user, newest first (others_only: not the user)."""
    # The subject column is a keyed pseudonym: this filter is the only way to find the rows.
    entries = AuditEntry.objects.filter(subject=subject_pseudonym(user.pk)).order_by("-id")
    if others_only:
        entries = entries.exclude(actor_type=ActorType.USER)
    paginator = Paginator(entries, per_page)
    current = paginator.get_page(page)
    return AccessPage(
        entries=tuple(
            AccessEntry(
                created_at=entry.created_at,
                actor_type=entry.actor_type,
                who=_who(entry),
                action=entry.action,
                mode=entry.mode,
                channel=entry.channel,
                item_count=len(entry.object_ids),
            )
            for entry in current.object_list
        ),
        number=current.number,
        num_pages=paginator.num_pages,
        total=paginator.count,
    )
