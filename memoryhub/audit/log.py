"""Append rows to the hash-chained access audit log, and verify its chains.

The log holds one hash chain per subject (the user whose memory was accessed), one for rows
without a subject, and the single global chain written before migration 0008 ("legacy").
Appends to different chains take different locks, so users never wait on each other.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from memoryhub import crypto, text_patterns
from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction, admin_site_action
from memoryhub.audit.changes import announce
from memoryhub.models import AuditEntry
from memoryhub.models.audit import LEGACY_CHAIN, SYSTEM_CHAIN
from memoryhub.telemetry import audit_result_attributes, traced

GENESIS_HASH = "0" * 64
# A log head as verify_audit prints it: "<row id>:<digest of the chain heads up to it>".
ANCHOR_PATTERN = text_patterns.compile(r"\A(\d+):([0-9a-fA-F]{64})")
# Two advisory locks, with arbitrary constants. The chain lock is the two-key form, whose key
# space never meets the one-key form of the head lock: (class, 32-bit key from the chain name).
# A key collision between two chains only makes those two wait on each other now and then.
CHAIN_LOCK_CLASS = 7_305_120
# Every append holds this one shared (appends never wait on each other for it); verify_chain
# takes it exclusively for an instant to read a head that no in-flight append can change.
HEAD_LOCK_KEY = 7_305_119
# How long verify_chain looks for a moment with no audited transaction in flight before it
# queues for the head lock; while it is queued, new appends wait behind it.
HEAD_LOCK_POLL_SECONDS = 1.0
HEAD_LOCK_POLL_INTERVAL = 0.01
# The chain's last hash, read on every append: plain SQL, as the ORM compiled the same
# statement anew each time. The index on (chain, id) answers it.
_LAST_HASH_SQL = (
    f"SELECT row_hash FROM {AuditEntry._meta.db_table} "  # noqa: S608 - the model's table.
    "WHERE chain = %s ORDER BY id DESC LIMIT 1"
)

# Every column but the id, as the row is inserted: hand-written, as the ORM's insert compile
# cost more Python than the rest of an append, on every audited request (issue 34).
_INSERTED = [f for f in AuditEntry._meta.concrete_fields if not f.primary_key]
_INSERTED_COLUMNS = ", ".join(f'"{f.column}"' for f in _INSERTED)
_INSERT_SQL = (
    f"INSERT INTO {AuditEntry._meta.db_table} ({_INSERTED_COLUMNS}) "  # noqa: S608 - our names.
    f"VALUES ({', '.join('%s' for _ in _INSERTED)}) RETURNING id"
)


# Marks a stored mode as a pseudonym: no slug contains ":", so rows written before
# pseudonyms (which hold the slug itself) are told apart.
MODE_PSEUDONYM_PREFIX = "mode:"


def subject_pseudonym(user_id: UUID | str) -> str:
    """The audit log's stable, keyed pseudonym for a user id."""
    return crypto.hmac_hex(settings.MEMORYHUB_AUDIT_KEY.encode(), f"subject:{user_id}".encode())[
        :32
    ]


def mode_pseudonym(subject: str, slug: str) -> str:
    """The audit log's keyed pseudonym for one mode of one subject ("" without a mode).

    A custom mode's name is personal ("divorce", "job-hunt"), so rows never hold it. It is
    keyed by the subject pseudonym, not the user id: the user (their access log) and an admin
    (filtering by user) can compute it, and so they still can after the account is deleted.
    """
    if not slug:
        return ""
    digest = crypto.hmac_hex(
        settings.MEMORYHUB_AUDIT_KEY.encode(), f"mode:{subject}:{slug}".encode()
    )
    return f"{MODE_PSEUDONYM_PREFIX}{digest[:32]}"


def is_mode_pseudonym(value: str) -> bool:
    return value.startswith(MODE_PSEUDONYM_PREFIX)


def _row_hash(entry: AuditEntry) -> str:
    fields = [
        entry.prev_hash,
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
    ]
    # Legacy rows were hashed before chains existed; every newer row binds its chain, so a row
    # moved to another chain (or relabelled legacy) no longer matches its hash.
    body = fields if entry.chain == LEGACY_CHAIN else [entry.chain, *fields]
    return crypto.hmac_hex(
        settings.MEMORYHUB_AUDIT_KEY.encode(), json.dumps(body, separators=(",", ":")).encode()
    )


def _chain_lock_key(chain: str) -> int:
    """A signed 32-bit key for the chain's advisory lock."""
    return zlib.crc32(chain.encode()) - 2**31


@traced("audit.append", result_attributes=audit_result_attributes)
def record_access(
    *,
    actor: Actor,
    subject_user_id: UUID | str | None,
    action: AuditAction,
    object_ids: Iterable[object] = (),
    mode: str = "",
    workspace_id: int | None = None,
) -> AuditEntry:
    """Append one audit row chained to the previous row of its subject's chain.

    `mode` is the mode's slug; the row stores its pseudonym (see mode_pseudonym). Rows written
    before pseudonyms keep their slug, and their hash, as they are.

    An action that changes something is announced to the change subscribers once the
    transaction commits (memoryhub/audit/changes.py): the audit row and the announcement are
    one event, so neither can happen without the other.
    """
    ids = [str(o) for o in object_ids]
    entry = _append(
        actor=actor, subject_user_id=subject_user_id, action=action, object_ids=ids, mode=mode
    )
    if action.is_change:
        announce(
            action=action,
            actor=actor,
            user_id=subject_user_id,
            mode=mode,
            object_ids=tuple(ids),
            workspace_id=workspace_id,
        )
    return entry


def record_admin_site_access(
    *,
    actor: Actor,
    subject_user_id: UUID | str | None,
    model_name: str,
    verb: str,
    object_ids: Iterable[object] = (),
) -> AuditEntry:
    """Append the audit row of an admin site's `verb` ("view", "change"…) on rows of a model."""
    return _append(
        actor=actor,
        subject_user_id=subject_user_id,
        action=admin_site_action(model_name, verb),
        object_ids=[str(o) for o in object_ids],
        mode="",
    )


def _append(
    *,
    actor: Actor,
    subject_user_id: UUID | str | None,
    action: str,
    object_ids: list[str],
    mode: str,
) -> AuditEntry:
    """Append one row to its subject's chain.

    Both locks are held to the end of the outermost transaction: the next append to the chain
    must see this row committed, or two rows would link to the same predecessor. The shared
    head lock comes first, so an append waiting behind verify_chain holds no chain lock. A
    transaction that audits two subjects takes two chain locks; two such transactions taking
    them in opposite orders deadlock, and PostgreSQL aborts one (services audit one subject
    per transaction).
    """
    subject = subject_pseudonym(subject_user_id) if subject_user_id else ""
    chain = subject or SYSTEM_CHAIN
    with transaction.atomic():
        with connection.cursor() as cursor:
            # One statement, evaluated left to right: the shared head lock, then the chain's.
            cursor.execute(
                "SELECT pg_advisory_xact_lock_shared(%s), pg_advisory_xact_lock(%s, %s)",
                [HEAD_LOCK_KEY, CHAIN_LOCK_CLASS, _chain_lock_key(chain)],
            )
            # A statement of its own after the locks: its snapshot then holds the row that the
            # chain's previous holder committed (one statement's snapshot predates its locks).
            cursor.execute(_LAST_HASH_SQL, [chain])
            last = cursor.fetchone()
        entry = AuditEntry(
            created_at=timezone.now(),
            actor_type=actor.actor_type,
            actor_id=actor.actor_id,
            actor_label=actor.label[:200],
            subject=subject,
            chain=chain,
            action=str(action),
            # Every id, however many: a row that silently kept only the first few would hide
            # the rest of what was read (a list of 10,000 ids is ~400 kB, stored compressed).
            object_ids=object_ids,
            mode=mode_pseudonym(subject, mode),
            channel=actor.channel,
            client_ip=actor.client_ip,
            prev_hash=last[0] if last else GENESIS_HASH,
        )
        entry.row_hash = _row_hash(entry)
        with connection.cursor() as cursor:
            cursor.execute(
                _INSERT_SQL,
                [f.get_db_prep_save(getattr(entry, f.attname), connection) for f in _INSERTED],
            )
            entry.pk = cursor.fetchone()[0]
        entry._state.adding = False
        entry._state.db = connection.alias
    return entry


@dataclass(frozen=True)
class ChainHead:
    """The log's head: kept outside the database, it is an anchor (see verify_chain).

    `digest` covers the last row of every chain among the rows up to `row_id`. With a single
    chain it is that row's own hash, which is what verify_audit printed before migration 0008,
    so an anchor kept from then still verifies.
    """

    row_id: int
    digest: str

    def __str__(self) -> str:
        return f"{self.row_id}:{self.digest}"

    @classmethod
    def parse(cls, text: str) -> ChainHead:
        """Read "<row id>:<digest>"; raise ValueError when it is not one."""
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
    chains_checked: int = 0

    @property
    def is_intact(self) -> bool:
        return self.first_broken_id is None and not self.reason


def _heads_digest(heads: dict[str, str]) -> str:
    if len(heads) == 1:
        [row_hash] = heads.values()
        return row_hash
    body = json.dumps(sorted(heads.items()), separators=(",", ":"))
    return crypto.hmac_hex(settings.MEMORYHUB_AUDIT_KEY.encode(), f"heads:{body}".encode())


def _settled_last_id() -> int | None:
    """The highest row id at a moment when no audited transaction is in flight.

    Appends to different chains run in parallel, so a row with a lower id can commit after one
    with a higher id. Were the head read while such a row is in flight, the rows up to it would
    change when that row commits, and the anchor would later raise a false alarm. Every append
    holds the head lock shared until it commits, so while this holds it exclusively, every row
    up to the highest id is committed, and any later row gets a higher id.

    It first polls for a quiet moment, because a queued exclusive request makes every new
    append wait behind it until the slowest audited transaction in flight ends. A session
    lock, released at once, even when called inside a transaction.
    """
    deadline = time.monotonic() + HEAD_LOCK_POLL_SECONDS
    with connection.cursor() as cursor:
        while True:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [HEAD_LOCK_KEY])
            if cursor.fetchone() == (True,):
                break
            if time.monotonic() >= deadline:
                cursor.execute("SELECT pg_advisory_lock(%s)", [HEAD_LOCK_KEY])
                break
            time.sleep(HEAD_LOCK_POLL_INTERVAL)
        try:
            cursor.execute("SELECT max(id) FROM memoryhub_auditentry")
            row = cursor.fetchone()
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [HEAD_LOCK_KEY])
    return None if row is None else row[0]


def verify_chain(*, anchor: ChainHead | None = None) -> ChainReport:
    """Walk every chain in one pass; report the first row whose hash or link does not match.

    Chains alone cannot tell that rows were cut off their end. An anchor, a head printed by an
    earlier check and kept outside the database, can: the last rows of all chains up to its
    row id must still be those it digested, else rows up to it were removed (or rewritten).
    Rows are read in id order, keeping only each chain's last hash in memory.
    """
    last_id = _settled_last_id()
    # Ids at which to digest the chain heads: the head to print, and the anchor's.
    cuts = sorted({i for i in (last_id, anchor.row_id if anchor else None) if i is not None})
    digests: dict[int, str] = {}
    heads: dict[str, str] = {}
    checked = 0
    for entry in AuditEntry.objects.order_by("id").iterator(chunk_size=2000):
        while cuts and cuts[0] < entry.id:
            digests[cuts.pop(0)] = _heads_digest(heads)
        if entry.prev_hash != heads.get(entry.chain, GENESIS_HASH):
            return ChainReport(
                checked,
                entry.id,
                "link to the previous row of its chain is broken (row deleted?)",
                chains_checked=len(heads),
            )
        if _row_hash(entry) != entry.row_hash:
            return ChainReport(
                checked,
                entry.id,
                "row content does not match its hash (row edited?)",
                chains_checked=len(heads),
            )
        heads[entry.chain] = entry.row_hash
        checked += 1
    for cut in cuts:
        digests[cut] = _heads_digest(heads)
    head = None if last_id is None else ChainHead(last_id, digests[last_id])
    report = ChainReport(checked, None, head=head, chains_checked=len(heads))
    if anchor is None:
        return report
    if last_id is None or anchor.row_id > last_id:
        reason = (
            f"the anchor row {anchor.row_id} is gone: rows were removed from the end of the log"
        )
    elif digests[anchor.row_id] != anchor.digest:
        reason = (
            f"the anchor's hash differs from the chain heads up to row {anchor.row_id}: rows "
            "were cut off the end of a chain, or the log was rewritten"
        )
    else:
        return report
    return ChainReport(checked, None, reason, head, len(heads))
