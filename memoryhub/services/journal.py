"""Write the agent's journal: what it surfaced to a user (alerts, recommendations, actions)."""

from __future__ import annotations

from uuid import UUID, uuid4

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import InvalidInputError, NotFoundError
from memoryhub.keyring import cipher_for
from memoryhub.models import Agent, JournalEntry, Mode, User
from memoryhub.sealed_tables import JOURNAL_TABLE
from memoryhub.services.quotas import check_memory_quota, lock_usage
from memoryhub.services.write_checks import check_content, check_writable


def add_journal_entry(
    *,
    agent: Agent,
    user: User,
    mode: Mode,
    entry_type: str,
    summary: str,
    key: str = "",
    actor: Actor,
) -> tuple[JournalEntry, bool]:
    """Record what the agent surfaced; return (entry, created).

    An unresolved entry with the same non-empty key is returned as is (created=False), so an
    agent that retries or re-checks never writes the same thing twice.
    Raises InvalidInputError, ContentTooLargeError and MemoryPausedError.
    """
    check_writable(user, actor, mode)
    if entry_type not in JournalEntry.EntryType.values:
        raise InvalidInputError(
            gettext_noop("type must be one of: {types}"),
            types=", ".join(JournalEntry.EntryType.values),
        )
    summary = check_content(summary, field="summary")
    key = key.strip()[:200]
    cipher = cipher_for(user)
    # Security invariant: the key is matched by its keyed hash; it is stored only encrypted.
    key_hash = cipher.journal_key_hash(key) if key else ""
    with transaction.atomic():
        lock_usage(user.pk)  # Before any journal row: see quotas.lock_usage.
        existing = _unresolved_with_key(agent=agent, user=user, mode=mode, key_hash=key_hash)
        if existing is not None:
            return _reused(existing, mode=mode, actor=actor), False
        entry_id = uuid4()
        # Security invariant: the summary is about the user, so it is encrypted with their key.
        sealed_summary = cipher.encrypt(
            summary, table=JOURNAL_TABLE, row_id=entry_id, field="summary"
        )
        sealed_key = (
            cipher.encrypt(key, table=JOURNAL_TABLE, row_id=entry_id, field="key") if key else None
        )
        # The journal's ciphertext counts in the user's stored bytes (migration 0029).
        check_memory_quota(
            user=user,
            memories=0,
            stored_bytes=len(sealed_summary) + len(sealed_key or b""),
        )
        try:
            # A savepoint: the transaction goes on after a concurrent writer won the race.
            with transaction.atomic():
                entry = JournalEntry.objects.create(
                    id=entry_id,
                    agent=agent,
                    user=user,
                    mode=mode,
                    entry_type=entry_type,
                    summary_ciphertext=sealed_summary,
                    key_hash=key_hash,
                    key_ciphertext=sealed_key,
                )
        except IntegrityError:
            # Both writers passed the check above; the unique index (journal_unresolved_key)
            # let the other's insert through, and it has committed by now: return its entry.
            existing = _unresolved_with_key(agent=agent, user=user, mode=mode, key_hash=key_hash)
            if existing is None:
                raise
            return _reused(existing, mode=mode, actor=actor), False
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.JOURNAL_CREATE,
            object_ids=[entry.pk],
            mode=mode.slug,
        )
    return entry, True


def _unresolved_with_key(
    *, agent: Agent, user: User, mode: Mode, key_hash: str
) -> JournalEntry | None:
    if not key_hash:
        return None
    return (
        JournalEntry.objects.select_for_update()
        .filter(agent=agent, user=user, mode=mode, key_hash=key_hash, resolved_at__isnull=True)
        .first()
    )


def _reused(entry: JournalEntry, *, mode: Mode, actor: Actor) -> JournalEntry:
    record_access(
        actor=actor,
        subject_user_id=entry.user_id,
        action=AuditAction.JOURNAL_READ,
        object_ids=[entry.pk],
        mode=mode.slug,
    )
    return entry


def resolve_journal_entry(
    *, agent: Agent, user: User, mode: Mode, entry_id: UUID | str, actor: Actor
) -> JournalEntry:
    """Mark an entry resolved (idempotent); another agent's, user's or mode's entry is NotFound."""
    with transaction.atomic():
        entry = (
            JournalEntry.objects.select_for_update()
            .filter(pk=entry_id, agent=agent, user=user, mode=mode)
            .first()
        )
        if entry is None:
            raise NotFoundError(gettext_noop("journal entry not found"))
        if entry.resolved_at is None:
            entry.resolved_at = timezone.now()
            entry.save(update_fields=["resolved_at"])
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.JOURNAL_RESOLVE,
            object_ids=[entry.pk],
            mode=mode.slug,
        )
    return entry
