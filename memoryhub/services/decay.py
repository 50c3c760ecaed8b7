"""Decay: lower the retrieval priority of memories nobody uses, and mark the oldest dormant."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from memoryhub.models import Importance, Memory

# How much slower than a normal memory each importance decays; critical is absent: it never does.
DECAY_PACE = {Importance.LOW: 0.5, Importance.NORMAL: 1.0, Importance.HIGH: 4.0}
BATCH_SIZE = 1000


@dataclass(frozen=True)
class DecayReport:
    examined: int
    changed: int
    dormant: int


def priority_and_dormancy(
    *, importance: str, idle_days: float, half_life_days: float, dormant_after_days: float
) -> tuple[float, bool]:
    """The decay priority (1.0 = fresh) and dormancy of a memory idle for `idle_days`."""
    pace = DECAY_PACE.get(Importance(importance)) if importance in Importance.values else None
    if pace is None:
        return 1.0, False
    idle = max(0.0, idle_days)
    # Rounded so that recomputing at the same moment always yields the same stored value.
    priority = round(0.5 ** (idle / (half_life_days * pace)), 6)
    return priority, idle >= dormant_after_days * pace


def decay_memories(*, now: datetime | None = None) -> DecayReport:
    """Recompute every memory's priority and dormancy from its idle time; safe to run twice.

    The value is derived from the age alone (never from the previous value), so a second run
    at the same moment changes nothing, and a memory used again is fresh again.
    """
    now = now or timezone.now()
    half_life = float(settings.MEMORYHUB_DECAY_HALF_LIFE_DAYS)
    dormant_after = float(settings.MEMORYHUB_DORMANT_AFTER_DAYS)
    examined = changed = dormant = 0
    pending: list[Memory] = []
    # A system job: every owner's memories, read without their text.
    rows = Memory.all_owners.only(
        "pk", "importance", "created_at", "last_accessed_at", "decay_priority", "is_dormant"
    ).order_by("pk")
    for memory in rows.iterator(chunk_size=BATCH_SIZE):
        examined += 1
        last_used = memory.last_accessed_at or memory.created_at
        priority, is_dormant = priority_and_dormancy(
            importance=memory.importance,
            idle_days=(now - last_used).total_seconds() / 86400,
            half_life_days=half_life,
            dormant_after_days=dormant_after,
        )
        dormant += is_dormant
        if memory.decay_priority != priority or memory.is_dormant != is_dormant:
            memory.decay_priority = priority
            memory.is_dormant = is_dormant
            pending.append(memory)
        if len(pending) >= BATCH_SIZE:
            changed += _save(pending)
    changed += _save(pending)
    return DecayReport(examined=examined, changed=changed, dormant=dormant)


def _save(pending: list[Memory]) -> int:
    count = len(pending)
    if pending:
        Memory.all_owners.bulk_update(pending, ["decay_priority", "is_dormant"])
        pending.clear()
    return count
