"""The context layers' hand-written statements read exactly what their ORM queries read.

Issue 34 moved the profile, recent-summary and open-item layers (read now, without `as_of`) to
SQL of their own; the ORM queries they replaced are the oracle here, over memories of every
kind, importance, status and confidence, a compaction summary and this session's summary.
"""

from __future__ import annotations

import itertools

import pytest

from memoryhub.actors import Actor
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import memories_of
from memoryhub.models import Confidence, Importance, Memory, MemoryKind, MemoryStatus
from memoryhub.queries import context_layers as layers
from memoryhub.services.sessions import start_session
from tests import factories

ACTOR = Actor.system("test")


@pytest.fixture
def mixed(user, personal, other_user, embedder):
    """Memories of every shape the layers filter on; another user's and mode's as well."""
    session = start_session(user=user, mode=personal, actor=ACTOR)
    kinds = [*layers.PROFILE_KINDS, MemoryKind.SESSION_SUMMARY, MemoryKind.OPEN_ITEM]
    shapes = itertools.product(
        kinds,
        [Importance.CRITICAL, Importance.HIGH, Importance.NORMAL, Importance.LOW],
        [(MemoryStatus.ACTIVE, Confidence.HIGH), (MemoryStatus.ACTIVE, Confidence.CANDIDATE)],
    )
    for n, (kind, importance, (status, confidence)) in enumerate(shapes):
        row = factories.make_memory(user, personal, f"item {n}", kind=kind, embedder=embedder)
        Memory.all_owners.filter(pk=row.pk).update(
            importance=importance, status=status, confidence=confidence
        )
    for n, (key, in_session) in enumerate([("compaction:x", False), (None, True), ("k", False)]):
        row = factories.make_memory(
            user, personal, f"summary {n}", kind=MemoryKind.SESSION_SUMMARY, embedder=embedder
        )
        Memory.all_owners.filter(pk=row.pk).update(
            idempotency_key=key, session_id=session.pk if in_session else None
        )
    superseded = factories.make_memory(user, personal, "superseded", embedder=embedder)
    Memory.all_owners.filter(pk=superseded.pk).update(status=MemoryStatus.SUPERSEDED)
    factories.make_memory(other_user, factories.mode_of(other_user), "theirs", embedder=embedder)
    factories.make_memory(user, factories.mode_of(user, "work"), "work", embedder=embedder)
    # Every row stands apart (none merged into another as a repeat).
    assert memories_of(user=user, mode=personal).count() == len(kinds) * 8 + 3 + 1
    return session


def _ids(items):
    return [item.id for item in items]


def _orm(user, mode):
    return memories_of(user=user, mode=mode).recallable()


@pytest.mark.parametrize("is_heavy", [False, True])
@pytest.mark.parametrize("is_session_start", [True, False])
def test_profile_reads_what_the_orm_reads(user, personal, mixed, is_session_start, is_heavy):
    expected = _orm(user, personal).of_kind(*layers.PROFILE_KINDS)
    if not is_session_start:
        expected = expected.filter(importance=Importance.CRITICAL)
    expected = expected.annotate(rank=layers._IMPORTANCE_RANK).order_by(
        "rank", "-created_at", "-id"
    )[: layers.PROFILE_LIMIT]
    items = layers.profile_items(
        user=user,
        mode=personal,
        cipher=cipher_for(user),
        is_session_start=is_session_start,
        is_heavy=is_heavy,
    )
    assert _ids(items) == [row.pk for row in expected]
    assert items  # The oracle found something to compare.


@pytest.mark.parametrize("is_heavy", [False, True])
def test_profile_of_more_memories_than_it_shows_reads_what_the_orm_reads(
    user, personal, embedder, is_heavy
):
    # More of one kind and importance than the profile shows, some written at the same moment
    # (the id breaks the tie), and a few more important ones that must come first.
    moment = factories.make_memory(user, personal, "first", embedder=embedder).created_at
    for n in range(layers.PROFILE_LIMIT + 6):
        kind = layers.PROFILE_KINDS[n % 2]
        row = factories.make_memory(user, personal, f"fact {n}", kind=kind, embedder=embedder)
        Memory.all_owners.filter(pk=row.pk).update(created_at=moment.replace(second=n // 3))
    for n in range(3):
        row = factories.make_memory(user, personal, f"important {n}", embedder=embedder)
        Memory.all_owners.filter(pk=row.pk).update(importance=Importance.HIGH)
    expected = (
        _orm(user, personal)
        .of_kind(*layers.PROFILE_KINDS)
        .annotate(rank=layers._IMPORTANCE_RANK)
        .order_by("rank", "-created_at", "-id")[: layers.PROFILE_LIMIT]
    )
    items = layers.profile_items(
        user=user, mode=personal, cipher=cipher_for(user), is_session_start=True, is_heavy=is_heavy
    )
    assert _ids(items) == [row.pk for row in expected]
    assert [item.importance for item in items[:3]] == [Importance.HIGH] * 3


@pytest.mark.parametrize("in_session", [True, False])
def test_recent_summaries_read_what_the_orm_reads(user, personal, mixed, in_session):
    session = mixed if in_session else None
    expected = (
        _orm(user, personal)
        .of_kind(MemoryKind.SESSION_SUMMARY)
        .exclude(idempotency_key__startswith=layers.COMPACTION_KEY_PREFIX)
    )
    if session is not None:
        expected = expected.exclude(session_id=session.pk)
    expected = expected.order_by("-created_at", "-id")[: layers.RECENT_SUMMARIES]
    items = layers.recent_summaries(
        user=user, mode=personal, cipher=cipher_for(user), session=session
    )
    assert _ids(items) == [row.pk for row in expected]
    assert items
    texts = {item.content for item in items}
    assert "summary 0" not in texts  # Never a thread's compaction summary.
    assert ("summary 1" in texts) is not in_session  # Never this session's own summary.


def test_open_items_read_what_the_orm_reads(user, personal, mixed):
    expected = (
        _orm(user, personal)
        .of_kind(MemoryKind.OPEN_ITEM)
        .annotate(rank=layers._IMPORTANCE_RANK)
        .order_by("rank", "-created_at", "-id")[: layers.OPEN_ITEMS_LIMIT]
    )
    items = layers.open_items(user=user, mode=personal, cipher=cipher_for(user))
    assert _ids(items) == [row.pk for row in expected]
    assert [item.content for item in items][:1] == ["item " + str(_first_open_item())]


def _first_open_item():
    # The first open item made (critical, active, high confidence): the most important one.
    kinds = [*layers.PROFILE_KINDS, MemoryKind.SESSION_SUMMARY, MemoryKind.OPEN_ITEM]
    return kinds.index(MemoryKind.OPEN_ITEM) * 8
