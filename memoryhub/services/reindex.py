"""Rebuild memories' blind indexes from their text, after the index learns a new kind of token.

The index of a memory (keyring `memory_index`) holds keyed hashes of its words and of the
speaker it opens with. Memories written before the speaker tokens existed lack them: recall
still finds them by meaning and words, but not by who said them, until this has run. Safe to
run twice and while agents write: each batch is locked, and a row already right is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from memoryhub.errors import KeyDestroyedError
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import open_content
from memoryhub.models import Memory, User

BATCH = 500


@dataclass(frozen=True)
class ReindexReport:
    users: int
    examined: int
    changed: int


def reindex_memories(*, users: list[User] | None = None, batch: int = BATCH) -> ReindexReport:
    """Recompute the blind index of every memory of these users (all users when None)."""
    if users is None:
        owners = Memory.all_owners.values("user_id").distinct()
        users = list(User.objects.filter(pk__in=owners).order_by("pk"))
    examined = changed = 0
    for user in users:
        try:
            cipher = cipher_for(user)
        except KeyDestroyedError:  # Crypto-shredded: nothing of theirs can be read, or kept.
            continue
        last = None
        while True:
            with transaction.atomic():
                rows = Memory.objects.for_owner(user=user, mode=None).select_for_update()
                if last is not None:
                    rows = rows.filter(pk__gt=last)
                page = list(
                    rows.only("id", "content_ciphertext", "blind_tokens").order_by("pk")[:batch]
                )
                if not page:
                    break
                stale = []
                for row in page:
                    tokens = cipher.memory_index(open_content(row, cipher))
                    if tokens != sorted(row.blind_tokens):
                        row.blind_tokens = tokens
                        stale.append(row)
                Memory.all_owners.bulk_update(stale, ["blind_tokens"])
            examined += len(page)
            changed += len(stale)
            last = page[-1].pk
    return ReindexReport(users=len(users), examined=examined, changed=changed)
