"""Remember with an idempotency key: a retry returns the first write instead of writing again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub import crypto
from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder
from memoryhub.errors import ConflictError, IdempotencyKeyReusedError
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import MemoryItem, decrypt_memory, memories_of
from memoryhub.models import IdempotentWrite, MemoryStatus, Mode, User
from memoryhub.services.memories import NewMemory
from memoryhub.services.repeats import remember_unless_repeated
from memoryhub.sweeping import delete_oldest_in_batches

UNIQUE_CONSTRAINT = "idempotent_write_unique"
# Records deleted per statement by the sweep: short statements, no long lock on the table.
SWEEP_BATCH = 5_000


@dataclass(frozen=True)
class IdempotencyKey:
    """An idempotency key as the client sent it, in the key space of `owner`.

    `owner` is whose keys share one space: "agent:<id>" or "user:<id>" (personal keys).
    """

    owner: str
    key: str


@dataclass(frozen=True)
class Remembered:
    """The memories a write stored, and whether they come from an earlier write (a retry)."""

    memories: list[MemoryItem]
    is_replay: bool


def _request_digest(user: User, request: Any) -> str:
    # Keyed by the user's data key: the digest of a short text must not let anyone guess it.
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), default=str)
    key = crypto.derive_subkey(cipher_for(user).data_key, "idempotency")
    return crypto.keyed_digest(key, canonical, length=64)


def _replay(*, claim: IdempotentWrite, user: User, mode: Mode, actor: Actor) -> Remembered | None:
    """What an earlier write with this key stored, or None if there was none."""
    first = IdempotentWrite.objects.filter(owner=claim.owner, key_digest=claim.key_digest).first()
    if first is None:
        return None
    if (first.user_id, first.mode_id, first.request_digest) != (
        user.pk,
        mode.pk,
        claim.request_digest,
    ):
        # Another user, mode or body under the same key is a client bug: replaying the first
        # write would hand back another request's memories, writing would break the promise.
        raise IdempotencyKeyReusedError(
            gettext_noop("this idempotency_key was already used with a different request")
        )
    rows = {
        row.pk: row
        for row in memories_of(user=user, mode=mode)
        .filter(pk__in=first.memory_ids)
        .exclude(status=MemoryStatus.FORGOTTEN)
    }
    if len(rows) != len(first.memory_ids):
        # Deleted or forgotten since: a retry must never bring it back.
        raise ConflictError(
            gettext_noop("what was written with this idempotency_key has been deleted since")
        )
    ids: list[UUID] = list(first.memory_ids)
    record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.MEMORY_READ,
        object_ids=ids,
        mode=mode.slug,
    )
    cipher = cipher_for(user)
    return Remembered(
        memories=[decrypt_memory(rows[memory_id], cipher) for memory_id in ids], is_replay=True
    )


def _is_key_taken(error: IntegrityError) -> bool:
    diagnostics = getattr(error.__cause__, "diag", None)
    return getattr(diagnostics, "constraint_name", None) == UNIQUE_CONSTRAINT


def remember_once(
    *,
    user: User,
    mode: Mode,
    items: Sequence[NewMemory],
    actor: Actor,
    embedder: Embedder,
    idempotency: IdempotencyKey,
    request: Any,
    agent_id: UUID | None = None,
) -> Remembered:
    """Remember the items, unless this idempotency key already wrote them: then return those.

    `request` is the JSON form of what was asked (items, batch or not); a retry must ask the
    same for the same user and mode. Raises IdempotencyKeyReusedError (the key came with
    another request), ConflictError (what it wrote was deleted since) and remember_many's errors.
    A new key with the words of a current memory adds evidence to it (services/repeats.py).
    """
    claim = IdempotentWrite(
        owner=idempotency.owner,
        key_digest=hashlib.sha256(idempotency.key.encode()).hexdigest(),
        user=user,
        mode=mode,
        request_digest=_request_digest(user, request),
    )
    earlier = _replay(claim=claim, user=user, mode=mode, actor=actor)
    if earlier is not None:
        return earlier
    try:
        stored = remember_unless_repeated(
            user=user,
            mode=mode,
            items=items,
            actor=actor,
            embedder=embedder,
            agent_id=agent_id,
            idempotent_write=claim,
        )
    except IntegrityError as error:
        if not _is_key_taken(error):
            raise
        # A concurrent request with this key took it while this one was writing; its write
        # stands and this one rolled back whole.
        earlier = _replay(claim=claim, user=user, mode=mode, actor=actor)
        if earlier is None:
            raise
        return earlier
    return Remembered(memories=stored, is_replay=False)


def sweep_idempotency_keys(*, now: datetime | None = None) -> int:
    """Delete the records of writes older than MEMORYHUB_IDEMPOTENCY_KEEP_HOURS; return how many.

    A retry with such a key afterwards is a new write. Deleted in batches, oldest first.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(hours=settings.MEMORYHUB_IDEMPOTENCY_KEEP_HOURS)
    return delete_oldest_in_batches(
        IdempotentWrite.objects.filter(created_at__lt=cutoff),
        order_by="created_at",
        batch_size=SWEEP_BATCH,
    )
