"""Read the agent's journal for one user and mode, decrypted, deduplicated by key."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.injection import looks_like_instructions
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.models import Agent, JournalEntry, Mode, User
from memoryhub.sealed_tables import JOURNAL_TABLE


@dataclass(frozen=True)
class JournalItem:
    id: UUID
    entry_type: str
    summary: str
    key: str
    created_at: datetime
    resolved_at: datetime | None
    is_flagged: bool


def decrypt_journal_entry(entry: JournalEntry, cipher: UserCipher) -> JournalItem:
    """Decrypt one journal entry with its user's cipher."""
    summary = cipher.decrypt(
        entry.summary_ciphertext, table=JOURNAL_TABLE, row_id=entry.pk, field="summary"
    )
    key = (
        cipher.decrypt(entry.key_ciphertext, table=JOURNAL_TABLE, row_id=entry.pk, field="key")
        if entry.key_ciphertext is not None
        else ""
    )
    return JournalItem(
        id=entry.pk,
        entry_type=entry.entry_type,
        summary=summary,
        key=key,
        created_at=entry.created_at,
        resolved_at=entry.resolved_at,
        is_flagged=looks_like_instructions(summary),
    )


def list_journal(
    *,
    agent: Agent,
    user: User,
    mode: Mode,
    actor: Actor,
    since: datetime | None = None,
    is_unresolved_only: bool = False,
    limit: int = 100,
) -> list[JournalItem]:
    """The agent's entries for this user and mode, newest first, one per key."""
    entries = JournalEntry.objects.filter(agent=agent, user=user, mode=mode)
    if since is not None:
        entries = entries.filter(created_at__gte=since)
    if is_unresolved_only:
        entries = entries.filter(resolved_at__isnull=True)
    # Newest entry per key wins; entries without a key are each their own item.
    seen_keys: set[str] = set()
    kept: list[JournalEntry] = []
    for entry in entries.order_by("-created_at", "-id"):
        if entry.key_hash and entry.key_hash in seen_keys:
            continue
        seen_keys.add(entry.key_hash)
        kept.append(entry)
        if len(kept) >= limit:
            break
    cipher = cipher_for(user)
    items = [decrypt_journal_entry(entry, cipher) for entry in kept]
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.JOURNAL_LIST,
        object_ids=[item.id for item in items],
        mode=mode.slug,
    )
    return items
