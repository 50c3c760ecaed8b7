"""A heavy user's kept counts (services/term_counts.py, migration 0037's triggers): always equal
to a fresh count of their memories, whatever writes them, and read by their search."""

from __future__ import annotations

from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memoryhub.keyring import cipher_for
from memoryhub.models import CountedMode, Memory, MemoryStatus, TermCount
from memoryhub.queries.recall import rank_memories
from memoryhub.queries.speaker_cues import read_cues
from memoryhub.services.confidence import supersede
from memoryhub.services.forget import delete_account
from memoryhub.services.memories import NewMemory, delete_memories, edit_memory, remember_many
from memoryhub.services.nearest_index import index_heavy_users
from memoryhub.services.term_counts import drop_term_counts, keep_term_counts
from tests import factories

FACTS = [
    "My sister Claire lives in Lyon.",
    "Claire paints sunsets every weekend.",
    "I play the cello every Sunday.",
    "Our dog is called Filou.",
    "Filou sleeps on the sofa.",
]


def _remember(user, mode, texts, actor, embedder, **fields):
    items = [NewMemory(kind="fact", content=text, **fields) for text in texts]
    return remember_many(user=user, mode=mode, items=items, actor=actor, embedder=embedder)


def _fresh(user):
    """The counts as a fresh count of the memory table gives them."""
    modes, terms = Counter(), Counter()
    for mode_id, tokens in (
        Memory.objects.for_owner(user=user, mode=None)
        .filter(status=MemoryStatus.ACTIVE)
        .values_list("mode_id", "blind_tokens")
    ):
        modes[mode_id] += 1
        for digest in tokens:
            terms[(mode_id, digest)] += 1
    return modes, terms


def _kept(user):
    counted = CountedMode.objects.filter(user=user)
    modes = Counter({row.mode_id: row.memory_count for row in counted if row.memory_count})
    terms = Counter(
        {(row.mode_id, row.digest): row.memory_count for row in TermCount.objects.filter(user=user)}
    )
    return modes, terms


@pytest.fixture
def counted(user, personal, work, embedder, system_actor):
    _remember(user, personal, FACTS, system_actor, embedder)
    _remember(user, work, ["The quarterly report is due on Friday."], system_actor, embedder)
    keep_term_counts(user_id=user.pk)
    return user


def test_keeping_counts_starts_from_a_fresh_count_of_every_mode(counted, personal, work):
    assert _kept(counted) == _fresh(counted)
    assert set(CountedMode.objects.filter(user=counted).values_list("mode_id", flat=True)) >= {
        personal.pk,
        work.pk,
    }
    claire = cipher_for(counted).blind_tokens("claire")[0]
    assert TermCount.objects.get(user=counted, mode=personal, digest=claire).memory_count == 2


def test_kept_counts_follow_every_kind_of_write(counted, personal, embedder, system_actor):
    def rows():
        return Memory.objects.for_owner(user=counted, mode=personal)

    # remember (one, then several), and a candidate, which is not active
    _remember(counted, personal, ["Claire moved to Paris."], system_actor, embedder)
    assert _kept(counted) == _fresh(counted)
    _remember(counted, personal, ["Ben paints too.", "Filou hates rain."], system_actor, embedder)
    assert _kept(counted) == _fresh(counted)
    _remember(
        counted, personal, ["Maybe Claire likes jazz."], system_actor, embedder, status="candidate"
    )
    assert _kept(counted) == _fresh(counted)
    # edit: new words, old words out
    cello = rows().get(blind_tokens__contains=cipher_for(counted).blind_tokens("cello"))
    edit_memory(
        user=counted,
        mode=personal,
        memory_id=cello.pk,
        actor=system_actor,
        embedder=embedder,
        content="I play the violin every Monday.",
    )
    assert _kept(counted) == _fresh(counted)
    # supersede
    filou = rows().filter(blind_tokens__contains=cipher_for(counted).blind_tokens("filou"))
    supersede(list(filou[:1]))
    assert _kept(counted) == _fresh(counted)
    # a change of status, written by any path: back to active, then to a candidate
    rows().filter(status=MemoryStatus.SUPERSEDED).update(status=MemoryStatus.ACTIVE)
    assert _kept(counted) == _fresh(counted)
    rows().filter(status=MemoryStatus.CANDIDATE).update(status=MemoryStatus.ACTIVE)
    assert _kept(counted) == _fresh(counted)
    # delete (a forget by ids), and a raw bulk delete
    delete_memories(
        user=counted,
        mode=personal,
        memory_ids=[rows().order_by("created_at").first().pk],
        actor=system_actor,
    )
    assert _kept(counted) == _fresh(counted)
    rows().filter(blind_tokens__overlap=cipher_for(counted).blind_tokens("paints")).delete()
    assert _kept(counted) == _fresh(counted)


def test_a_count_that_falls_to_zero_leaves_no_row(counted, personal, system_actor):
    cello = cipher_for(counted).blind_tokens("cello")[0]
    assert TermCount.objects.filter(user=counted, digest=cello).exists()
    memory = Memory.objects.for_owner(user=counted, mode=personal).get(
        blind_tokens__contains=[cello]
    )
    delete_memories(user=counted, mode=personal, memory_ids=[memory.pk], actor=system_actor)
    assert not TermCount.objects.filter(user=counted, digest=cello).exists()


def test_the_counts_go_with_the_user(counted, system_actor):
    delete_account(user=counted, actor=system_actor)
    assert not CountedMode.objects.filter(user_id=counted.pk).exists()
    assert not TermCount.objects.filter(user_id=counted.pk).exists()


def test_only_counted_users_are_kept(counted, other_user, embedder, system_actor):
    before = TermCount.objects.count()
    _remember(other_user, factories.mode_of(other_user), FACTS, system_actor, embedder)
    assert TermCount.objects.count() == before
    assert not CountedMode.objects.filter(user=other_user).exists()
    drop_term_counts(user_id=counted.pk)
    assert not TermCount.objects.filter(user=counted).exists()
    assert not CountedMode.objects.filter(user=counted).exists()


def _rank(user, mode, embedder, **kwargs):
    ranked = rank_memories(
        user=user,
        mode=mode,
        query="Where does Claire live?",
        cipher=cipher_for(user),
        k=len(FACTS),
        embedder=embedder,
        nearest=len(FACTS),
        **kwargs,
    )
    return {entry.id: entry.lexical for entry in ranked}


def test_a_heavy_search_reads_the_kept_counts(counted, personal, embedder):
    assert _rank(counted, personal, embedder) == _rank(
        counted, personal, embedder, kept_counts=False
    )
    with CaptureQueriesContext(connection) as queries:
        _rank(counted, personal, embedder)
    assert any(TermCount._meta.db_table in query["sql"] for query in queries.captured_queries)
    # Counts it did not count itself: "claire" made a hundred times more common weighs less.
    claire = cipher_for(counted).blind_tokens("claire")[0]
    TermCount.objects.filter(user=counted, mode=personal, digest=claire).update(memory_count=200)
    CountedMode.objects.filter(mode=personal).update(memory_count=1000)
    kept, counted_here = (
        _rank(counted, personal, embedder),
        _rank(counted, personal, embedder, kept_counts=False),
    )
    holding = [memory_id for memory_id, lexical in counted_here.items() if lexical > 0]
    assert holding
    assert all(kept[memory_id] != counted_here[memory_id] for memory_id in holding)


def test_index_heavy_users_keeps_the_counts_of_indexed_users(
    user, personal, embedder, system_actor
):
    _remember(user, personal, FACTS, system_actor, embedder)
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    index_heavy_users(threshold=len(FACTS), concurrently=False)
    assert _kept(user) == _fresh(user)
    assert CountedMode.objects.filter(user=user, mode=personal).exists()
    index_heavy_users(threshold=1000, concurrently=False)
    assert not CountedMode.objects.filter(user=user).exists()
    assert not TermCount.objects.filter(user=user).exists()


def test_a_heavy_users_speaker_cues_come_from_the_kept_counts(
    counted, personal, embedder, system_actor
):
    _remember(counted, personal, ["Caroline: I paint sunsets."], system_actor, embedder)
    cipher = cipher_for(counted)
    query = "What does Caroline paint with Melanie?"
    cues = read_cues(user=counted, mode=personal, query=query, cipher=cipher)
    assert cues.speakers == tuple(cipher.speaker_tokens(["caroline"]))
    assert "Caroline" not in cues.text
    # Read from the counts, not from the memories: without its count, no speaker.
    TermCount.objects.filter(user=counted, digest__in=cues.speakers).delete()
    assert read_cues(user=counted, mode=personal, query=query, cipher=cipher).speakers == ()
    # A user whose counts are not kept is read from their memories.
    drop_term_counts(user_id=counted.pk)
    assert read_cues(user=counted, mode=personal, query=query, cipher=cipher) == cues
