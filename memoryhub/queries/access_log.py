"""The user's own view of the access audit log: who read or changed their memory, and when."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.core.paginator import Paginator
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django_stubs_ext import StrOrPromise

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import (
    is_mode_pseudonym,
    mode_pseudonym,
    record_access,
    subject_pseudonym,
)
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import memories_of, open_content
from memoryhub.models import ActorType, ApiKey, AuditEntry, Mode, User

# Words for the person reading their log: translated into the language of the request.
ACTOR_WORDS: dict[str, StrOrPromise] = {
    ActorType.USER: _("You"),
    ActorType.AGENT: _("Agent"),
    ActorType.REVIEWER: _("Reviewer"),
    ActorType.ADMIN: _("Admin"),
    ActorType.SYSTEM: "MemoryHub",
}
# The audit action of an agent refused because the user blocked it (memoryhub/api/auth.py).
REFUSED_ACTION = AuditAction.ACCESS_REFUSED
PERSONAL_KEY_PREFIX = "personal-key:"
# An entry names this many of the items it touched; the rest are counted.
NAMED_ITEMS = 3
NAME_CHARS = 80


@dataclass(frozen=True)
class AccessEntry:
    """One audit row, in words, with the items it touched that are still kept, by their text."""

    created_at: datetime
    actor_type: str
    who: str
    action: str
    mode: str
    channel: str
    item_count: int
    item_names: tuple[str, ...] = ()
    is_refused: bool = False

    @property
    def unnamed_count(self) -> int:
        return self.item_count - len(self.item_names)


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


def _who(entry: AuditEntry, key_names: dict[str, str]) -> str:
    if entry.actor_id.startswith(PERSONAL_KEY_PREFIX):
        name = key_names.get(entry.actor_id.removeprefix(PERSONAL_KEY_PREFIX))
        if name:
            return gettext("Your key “{name}”").format(name=name)
        return gettext("A personal key of yours (since deleted)")
    word = str(ACTOR_WORDS.get(entry.actor_type, entry.actor_type))
    if entry.actor_type in {ActorType.USER, ActorType.SYSTEM} or not entry.actor_label:
        return word
    return f"{word} “{entry.actor_label}”"


def _uuids(values: Iterable[str]) -> set[UUID]:
    found = set()
    for value in values:
        try:
            found.add(UUID(value))
        except ValueError:
            continue  # Not a memory: a retention value, a count, a legacy id.
    return found


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= NAME_CHARS else f"{text[: NAME_CHARS - 1]}…"


def _item_names(user: User, rows: list[AuditEntry]) -> dict[UUID, str]:
    """The text of the (still kept) memories the rows name, decrypting only what is shown."""
    ids = _uuids(object_id for row in rows for object_id in row.object_ids)
    if not ids:
        return {}
    # Security invariant: only this user's memories (of any mode) are looked up and decrypted.
    kept_rows = {
        row.pk: row
        for row in memories_of(user=user, mode=None)
        .filter(pk__in=ids)
        .only("id", "content_ciphertext")
    }
    wanted: list[UUID] = []
    for row in rows:
        kept = [UUID(i) for i in row.object_ids if _is_kept(i, kept_rows)]
        wanted += kept[:NAMED_ITEMS]
    cipher = cipher_for(user)
    return {
        memory_id: _shorten(open_content(kept_rows[memory_id], cipher))
        for memory_id in dict.fromkeys(wanted)
    }


def _mode_slug(stored: str, slugs: Mapping[str, str]) -> str:
    """The slug an audit row's mode stands for; "" for a mode deleted since."""
    if is_mode_pseudonym(stored):
        return slugs.get(stored, "")
    return stored  # Written before modes were pseudonymised: the slug itself.


def _is_kept(object_id: str, kept: Mapping[UUID, object]) -> bool:
    try:
        return UUID(object_id) in kept
    except ValueError:
        return False


def list_access_entries(
    *, user: User, actor: Actor, page: int = 1, per_page: int = 50, include_mine: bool = False
) -> AccessPage:
    """A page of the audit rows about this user, newest first; the user's own only if asked.

    The memories an entry touched are named by their text (those still kept, a few per entry);
    decrypting them for the user writes an audit row of its own.
    """
    # The subject column is a keyed pseudonym: this filter is the only way to find the rows.
    subject = subject_pseudonym(user.pk)
    entries = AuditEntry.objects.filter(subject=subject).order_by("-id")
    if not include_mine:
        entries = entries.exclude(actor_type=ActorType.USER)
    paginator = Paginator(entries, per_page)
    current = paginator.get_page(page)
    rows = list(current.object_list)
    key_ids = [
        row.actor_id.removeprefix(PERSONAL_KEY_PREFIX)
        for row in rows
        if row.actor_id.startswith(PERSONAL_KEY_PREFIX)
    ]
    key_names = {
        str(pk): name
        for pk, name in ApiKey.objects.filter(
            user=user, pk__in=[int(i) for i in key_ids if i.isdigit()]
        ).values_list("pk", "name")
    }
    names = _item_names(user, rows)
    # Rows hold a pseudonym of the mode; the user's own modes turn it back into the slug.
    slugs = {
        mode_pseudonym(subject, slug): slug
        for slug in Mode.objects.filter(user=user).values_list("slug", flat=True)
    }
    if names:
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.ACCESS_LOG_VIEW,
            object_ids=list(names),
        )
    return AccessPage(
        entries=tuple(
            AccessEntry(
                created_at=row.created_at,
                actor_type=row.actor_type,
                who=_who(row, key_names),
                action=row.action,
                mode=_mode_slug(row.mode, slugs),
                channel=row.channel,
                item_count=len(row.object_ids),
                item_names=tuple(names[UUID(i)] for i in row.object_ids if _is_kept(i, names))[
                    :NAMED_ITEMS
                ],
                is_refused=row.action == REFUSED_ACTION,
            )
            for row in rows
        ),
        number=current.number,
        num_pages=paginator.num_pages,
        total=paginator.count,
    )
