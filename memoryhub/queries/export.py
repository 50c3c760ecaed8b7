"""Export everything of one user as one JSON document (built whole, or streamed), decrypted."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db.models import Q
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.json_stream import Streamed, json_pieces
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.knowledge.export import export_answers, export_candidates
from memoryhub.memory_rows import decrypt_memory, memories_of, open_version_content
from memoryhub.message_rows import open_message
from memoryhub.models import (
    AgentBlock,
    ApiKey,
    JournalEntry,
    Memory,
    MemoryVersion,
    Message,
    Mode,
    Session,
    User,
)
from memoryhub.replicas import read_alias_for, read_for_user
from memoryhub.sealed_tables import (
    JOURNAL_TABLE,
    SESSION_TABLE,
    WORKING_MEMORY_FIELD,
)

EXPORT_FORMAT = "memoryhub-export/1"


def _when(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


# Memories are read a page at a time (keyset on created_at, id), with their versions and
# sources: the export of a user with 100,000 memories never holds more than a page of them.
EXPORT_PAGE_SIZE = 1000


def _versions(
    memory_ids: list[UUID], cipher: UserCipher, using: str
) -> dict[UUID, list[dict[str, Any]]]:
    by_memory: dict[UUID, list[dict[str, Any]]] = defaultdict(list)
    versions = (
        MemoryVersion.objects.using(using)
        .filter(memory_id__in=memory_ids)
        .order_by("created_at", "id")
    )
    for version in versions:
        by_memory[version.memory_id].append(
            {
                "content": open_version_content(version, cipher),
                "changed_by": version.changed_by_type,
                "reason": version.reason,
                "changed_at": _when(version.created_at),
            }
        )
    return by_memory


def _sources(memory_ids: list[UUID], using: str) -> dict[UUID, list[str]]:
    sources: dict[UUID, list[str]] = defaultdict(list)
    links = Memory.source_messages.through.objects.using(using).filter(memory_id__in=memory_ids)
    for memory_id, message_id in links.values_list("memory_id", "message_id").order_by("id"):
        sources[memory_id].append(str(message_id))
    return sources


def _memory_rows(user: User, mode: Mode, using: str) -> Iterator[list[Memory]]:
    """The mode's memory rows, oldest first, a page at a time."""
    rows = memories_of(user=user, mode=mode).using(using).defer("embedding", "blind_tokens")
    rows = rows.order_by("created_at", "id")
    page = list(rows[:EXPORT_PAGE_SIZE])
    while page:
        yield page
        last = page[-1]
        after = Q(created_at__gt=last.created_at) | Q(created_at=last.created_at, id__gt=last.id)
        page = list(rows.filter(after)[:EXPORT_PAGE_SIZE])


def _memories(user: User, mode: Mode, cipher: UserCipher, using: str) -> Iterator[dict[str, Any]]:
    """The mode's memories, decrypted, as export items, a page at a time."""
    for page in _memory_rows(user, mode, using):
        ids = [row.id for row in page]
        versions = _versions(ids, cipher, using)
        sources = _sources(ids, using)
        for row in page:
            item = decrypt_memory(row, cipher)
            yield {
                "id": str(item.id),
                "kind": item.kind,
                "content": item.content,
                "details": item.payload,
                "confidence": item.confidence,
                "status": item.status,
                "source": item.source,
                "importance": item.importance,
                "evidence_count": item.evidence_count,
                "personal_data": list(item.personal_data),
                "created_at": _when(item.created_at),
                "updated_at": _when(item.updated_at),
                "occurred_at": _when(item.occurred_at),
                "valid_to": _when(item.valid_to),
                "last_used_at": _when(item.last_accessed_at),
                "session_id": str(item.session_id) if item.session_id else None,
                "source_message_ids": sources.get(item.id, []),
                "previous_versions": versions.get(item.id, []),
            }


def _working_memory(session: Session, cipher: UserCipher) -> Any:
    if session.working_memory_ciphertext is None:
        return None
    text = cipher.decrypt(
        session.working_memory_ciphertext,
        table=SESSION_TABLE,
        row_id=session.pk,
        field=WORKING_MEMORY_FIELD,
    )
    try:
        return json.loads(text)
    except ValueError:
        return text


def _sessions(user: User, cipher: UserCipher, using: str) -> dict[int, list[dict[str, Any]]]:
    messages: dict[UUID, list[dict[str, Any]]] = defaultdict(list)
    rows = (
        Message.objects.using(using)
        .filter(session__user=user)
        .defer("embedding")
        .order_by("session", "seq")
    )
    for message in rows.iterator(chunk_size=2000):
        messages[message.session_id].append(
            {
                "id": str(message.pk),
                "seq": message.seq,
                "role": message.role,
                "content": open_message(message, cipher),
                "created_at": _when(message.created_at),
            }
        )
    by_mode: dict[int, list[dict[str, Any]]] = defaultdict(list)
    sessions = (
        Session.objects.using(using)
        .filter(user=user)
        .select_related("agent")
        .order_by("started_at")
    )
    for session in sessions:
        by_mode[session.mode_id].append(
            {
                "id": str(session.pk),
                "agent": session.agent.name if session.agent else None,
                "is_incognito": session.is_incognito,
                "started_at": _when(session.started_at),
                "ended_at": _when(session.ended_at),
                "working_memory": _working_memory(session, cipher),
                "messages": messages.get(session.pk, []),
            }
        )
    return by_mode


def _journal(user: User, cipher: UserCipher, using: str) -> dict[int, list[dict[str, Any]]]:
    by_mode: dict[int, list[dict[str, Any]]] = defaultdict(list)
    entries = (
        JournalEntry.objects.using(using)
        .filter(user=user)
        .select_related("agent")
        .order_by("created_at")
    )
    for entry in entries:
        by_mode[entry.mode_id].append(
            {
                "agent": entry.agent.name,
                "type": entry.entry_type,
                "summary": cipher.decrypt(
                    entry.summary_ciphertext, table=JOURNAL_TABLE, row_id=entry.pk, field="summary"
                ),
                "key": cipher.decrypt(
                    entry.key_ciphertext, table=JOURNAL_TABLE, row_id=entry.pk, field="key"
                )
                if entry.key_ciphertext is not None
                else "",
                "created_at": _when(entry.created_at),
                "resolved_at": _when(entry.resolved_at),
            }
        )
    return by_mode


def _document(
    user: User,
    cipher: UserCipher,
    using: str,
    *,
    memories_of_mode: Callable[[Mode], Streamed | list[dict[str, Any]]],
    mode_slugs: Collection[str] | None = None,
) -> dict[str, Any]:
    sessions = _sessions(user, cipher, using)
    journal = _journal(user, cipher, using)
    answers = export_answers(user, cipher, using)
    candidates = export_candidates(user, cipher, using)
    modes = Mode.objects.using(using).filter(user=user)
    if mode_slugs is not None:
        # What is left out of `modes` is left out whole: its memories, sessions, journal…
        modes = modes.filter(slug__in=list(mode_slugs))
    return {
        "format": EXPORT_FORMAT,
        "exported_at": _when(timezone.now()),
        "account": {
            "email": user.email,
            "display_name": user.display_name,
            "external_id": user.external_id,
            "workspace": user.workspace.slug,
            "is_memory_paused": user.is_memory_paused,
            "retention_days": user.retention_days,
            "date_joined": _when(user.date_joined),
        },
        "modes": [
            {
                "slug": mode.slug,
                "name": mode.name,
                "memories": memories_of_mode(mode),
                "sessions": sessions.get(mode.pk, []),
                "agent_journal": journal.get(mode.pk, []),
                "answers": answers.get(mode.pk, []),
                "review_candidates": candidates.get(mode.pk, []),
            }
            for mode in modes
        ],
        # Key metadata only: the keys themselves are never stored, and hashes are not data.
        "personal_access_keys": [
            {
                "name": key.name,
                "prefix": key.prefix,
                "mode": key.mode.slug if key.mode else None,
                "created_at": _when(key.created_at),
                "last_used_at": _when(key.last_used_at),
                "revoked_at": _when(key.revoked_at),
            }
            for key in ApiKey.objects.using(using).filter(user=user).select_related("mode")
        ],
        "blocked_agents": [
            block.agent.name
            for block in AgentBlock.objects.using(using).filter(user=user).select_related("agent")
        ],
    }


def export_user_data(*, user: User, actor: Actor) -> dict[str, Any]:
    """Everything of the user, decrypted, as one JSON-ready document; writes an audit row.

    Holds it all in memory: the dashboard's download uses `stream_user_data` instead.
    """
    cipher = cipher_for(user)

    def build(using: str) -> dict[str, Any]:
        return _document(
            user,
            cipher,
            using,
            memories_of_mode=lambda mode: list(_memories(user, mode, cipher, using)),
        )

    # Read from a replica that has the user's last write, or from the primary.
    document = read_for_user(user.pk, build)
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.ACCOUNT_EXPORT,
        object_ids=[mode["slug"] for mode in document["modes"]],
    )
    return document


def stream_user_data(
    *, user: User, actor: Actor, mode_slugs: Collection[str] | None = None
) -> Iterator[str]:
    """Everything of the user, decrypted, as the export's JSON text in pieces; audited first.

    The same text as `export_user_data` dumped with indent 2, but memories are read, decrypted
    and written a page at a time. Sessions, the journal and answers are read whole, as in
    `export_user_data`. Iterate it on the request's thread: it reads the database as it goes.
    `mode_slugs` keeps only those modes (None: every mode).
    """
    cipher = cipher_for(user)
    # One database for the whole file: a stream cannot start again on the primary halfway.
    using = read_alias_for(user.pk)
    document = _document(
        user,
        cipher,
        using,
        memories_of_mode=lambda mode: Streamed(_memories(user, mode, cipher, using)),
        mode_slugs=mode_slugs,
    )
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.ACCOUNT_EXPORT,
        object_ids=[mode["slug"] for mode in document["modes"]],
    )
    return json_pieces(document)
