"""Two writers of the same item at once leave one memory with two pieces of evidence."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from memoryhub.models import Memory
from memoryhub.services.memories import NewMemory
from memoryhub.services.repeats import remember_unless_repeated
from tests.concurrency import held_open, run_into

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_concurrent_repeats_leave_one_memory(user, personal, system_actor, embedder):
    def write():
        return remember_unless_repeated(
            user=user,
            mode=personal,
            items=[NewMemory(kind="fact", content="Lives in Lyon.", source="agent")],
            actor=system_actor,
            embedder=embedder,
        )[0]

    with ThreadPoolExecutor(max_workers=1) as pool, held_open(write) as commit_first:
        second = run_into(write, pool)  # Waits on the first writer's lock of these words.
        first = commit_first()
        repeated = second.result(timeout=30)
    assert repeated.pk == first.pk and repeated.evidence_count == 2
    assert Memory.objects.for_owner(user=user, mode=personal).count() == 1


def test_a_superseded_memory_is_not_repeated_but_written_anew(
    user, personal, system_actor, embedder
):
    item = NewMemory(kind="fact", content="Works at Hexa.", source="agent", status="superseded")
    old = remember_unless_repeated(
        user=user, mode=personal, items=[item], actor=system_actor, embedder=embedder
    )[0]
    again = NewMemory(kind="fact", content="Works at Hexa.", source="agent")
    new = remember_unless_repeated(
        user=user, mode=personal, items=[again], actor=system_actor, embedder=embedder
    )[0]
    assert new.pk != old.pk and new.evidence_count == 1
