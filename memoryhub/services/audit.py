"""Append rows to the hash-chained access audit log, and verify the chain."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from memoryhub import crypto
from memoryhub.actors import Actor
from memoryhub.models import AuditEntry

GENESIS_HASH = "0" * 64
# A chain head as verify_audit prints it: "<row id>:<row hash>".
ANCHOR_PATTERN = re.compile(r"(\d+):([0-9a-fA-F]{64})")
# Any constant works: it serialises appends so each row chains to exactly one predecessor.
AUDIT_LOCK_ID = 7_305_119


def subject_pseudonym(user_id: UUID | str) -> str:
    """The audit log's stable, keyed pseudonym for a user id."""
    return crypto.hmac_hex(settings.MEMORYHUB_AUDIT_KEY.encode(), f"subject:{user_id}".encode())[
        :32
    ]


def _row_hash(prev_hash: str, entry: AuditEntry) -> str:
    body = json.dumps(
        [
            prev_hash,
            entry.created_at.isoformat(),
            entry.actor_type,
            entry.actor_id,
            entry.actor_label,
            entry.subject,
            entry.action,
            list(entry.object_ids),
            entry.mode,
            entry.channel,
            entry.client_ip or "",
        ],
        separators=(",", ":"),
    )
    return crypto.hmac_hex(settings.MEMORYHUB_AUDIT_KEY.encode(), body.encode())


def record_access(
    *,
    actor: Actor,
    subject_user_id: UUID | str | None,
    action: str,
    object_ids: Iterable[object] = (),
    mode: str = "",
) -> AuditEntry:
    """Append one audit row chained to the previous one."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [AUDIT_LOCK_ID])
        last = AuditEntry.objects.order_by("-id").values_list("row_hash", flat=True).first()
        entry = AuditEntry(
            created_at=timezone.now(),
            actor_type=actor.actor_type,
            actor_id=actor.actor_id,
            actor_label=actor.label[:200],
            subject=subject_pseudonym(subject_user_id) if subject_user_id else "",
            action=action,
            object_ids=[str(o) for o in object_ids][:500],
            mode=mode,
            channel=actor.channel,
            client_ip=actor.client_ip,
            prev_hash=last or GENESIS_HASH,
        )
        entry.row_hash = _row_hash(entry.prev_hash, entry)
        entry.save()
    return entry


@dataclass(frozen=True)
class ChainHead:
    """The last row of the chain: kept outside the database, it is an anchor (see verify_chain)."""

    row_id: int
    row_hash: str

    def __str__(self) -> str:
        return f"{self.row_id}:{self.row_hash}"

    @classmethod
    def parse(cls, text: str) -> ChainHead:
        """Read "<row id>:<row hash>"; raise ValueError when it is not one."""
        match = ANCHOR_PATTERN.fullmatch(text.strip())
        if match is None:
            raise ValueError("an anchor is <row id>:<64 hex digits>, as verify_audit prints it")
        return cls(int(match[1]), match[2].lower())


@dataclass(frozen=True)
class ChainReport:
    rows_checked: int
    first_broken_id: int | None
    reason: str = ""
    head: ChainHead | None = None

    @property
    def is_intact(self) -> bool:
        return self.first_broken_id is None and not self.reason


def verify_chain(*, anchor: ChainHead | None = None) -> ChainReport:
    """Walk the chain in order; report the first row whose hash or link does not match.

    The chain alone cannot tell that rows were cut off its end. An anchor, a head printed by an
    earlier check and kept outside the database, can: its row must still be in the chain, with
    the same hash, else rows up to it were removed (or rewritten).
    """
    expected_prev = GENESIS_HASH
    checked = 0
    head: ChainHead | None = None
    anchor_seen = False
    for entry in AuditEntry.objects.order_by("id").iterator(chunk_size=2000):
        if entry.prev_hash != expected_prev:
            return ChainReport(
                checked, entry.id, "link to the previous row is broken (row deleted?)"
            )
        if _row_hash(entry.prev_hash, entry) != entry.row_hash:
            return ChainReport(
                checked, entry.id, "row content does not match its hash (row edited?)"
            )
        if anchor is not None and entry.id == anchor.row_id:
            if entry.row_hash != anchor.row_hash:
                return ChainReport(
                    checked, entry.id, "the anchor row's hash differs (chain rewritten?)"
                )
            anchor_seen = True
        expected_prev = entry.row_hash
        head = ChainHead(entry.id, entry.row_hash)
        checked += 1
    if anchor is not None and not anchor_seen:
        return ChainReport(
            checked,
            None,
            f"the anchor row {anchor.row_id} is gone: rows were removed from the end of the log",
            head,
        )
    return ChainReport(checked, None, head=head)
