"""A heavy user's search (queries/nearest.py): their nearest memories through their own index,
ranked like every search; small users and narrowed searches stay exact."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryhub import tasks, vector_search
from memoryhub.embeddings import MULTILINGUAL_E5
from memoryhub.keyring import cipher_for
from memoryhub.models import Memory
from memoryhub.queries.context import assemble_context
from memoryhub.queries.recall import rank_memories, search_memories
from memoryhub.services.memories import NewMemory, remember_many
from memoryhub.services.nearest_index import (
    RUN_LOCK,
    create_nearest_index,
    drop_nearest_index,
    index_heavy_users,
    indexed_users,
)
from memoryhub.services.term_counts import keep_term_counts
from memoryhub.vector_search import HALF_PRECISION, has_own_index, index_name, profile_index_name
from tests import factories
from tests.concurrency import held_open

FACTS = [
    "My sister Claire lives in Lyon.",
    "I play the cello every Sunday.",
    "The dentist appointment is on Tuesday.",
    "Our dog is called Filou.",
    "I am allergic to peanuts.",
    "I work as a nurse at the city hospital.",
    "We are flying to Lisbon in May.",
    "My favourite food is ramen.",
    "I ran the Berlin marathon in 2019.",
    "Ben started learning the guitar.",
    "The car needs new tyres before winter.",
    "I read a novel by Ursula Le Guin last month.",
    "My daughter's school play is on Friday.",
    "I prefer tea to coffee in the morning.",
    "The landlord will fix the heating next week.",
    "I am saving for a trip to Japan.",
]
QUERIES = ["Where does Claire live?", "what food do I like?", "music lessons", "travel plans"]


@pytest.fixture
def heavy(user, personal, embedder, system_actor, settings):
    items = [NewMemory(kind="fact", content=fact) for fact in FACTS]
    remember_many(user=user, mode=personal, items=items, actor=system_actor, embedder=embedder)
    settings.MEMORYHUB_NEAREST_FROM = 10
    settings.MEMORYHUB_NEAREST_CANDIDATES = 10
    # An index cannot be built in a transaction with foreign-key checks still pending.
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    return user


@pytest.fixture
def indexed(heavy):
    create_nearest_index(user_id=heavy.pk, concurrently=False)
    return heavy


def _ranked(user, mode, query, embedder, **kwargs):
    ranked = rank_memories(
        user=user, mode=mode, query=query, cipher=cipher_for(user), k=5, embedder=embedder, **kwargs
    )
    return [(entry.id, round(entry.score, 6)) for entry in ranked]


def _reads_nearest(call) -> bool:
    with CaptureQueriesContext(connection) as queries:
        call()
    return any("halfvec" in query["sql"] for query in queries.captured_queries)


@pytest.mark.parametrize("is_counted", [False, True])
@pytest.mark.parametrize("word_cap", [0, 1])
def test_with_every_memory_among_the_candidates_the_heavy_path_ranks_exactly(
    heavy, personal, embedder, settings, word_cap, is_counted
):
    settings.MEMORYHUB_NEAREST_WORD_CAP = word_cap
    if is_counted:  # The IDF from the kept counts (services/term_counts.py), not counted here.
        keep_term_counts(user_id=heavy.pk)
    for query in QUERIES:
        exact = _ranked(heavy, personal, query, embedder, nearest=None)
        nearest = _ranked(heavy, personal, query, embedder, nearest=len(FACTS))
        assert nearest == exact


def test_a_user_with_their_own_index_searches_through_the_nearest_candidates(
    indexed, personal, embedder, system_actor
):
    def search():
        return search_memories(
            user=indexed,
            mode=personal,
            query="Where does Claire live?",
            actor=system_actor,
            embedder=embedder,
        )

    assert _reads_nearest(search)
    assert search()[0].content == "My sister Claire lives in Lyon."


def test_the_heavy_path_ranks_the_nearest_candidates_and_those_holding_a_query_word(
    heavy, personal, embedder
):
    ranked = rank_memories(
        user=heavy,
        mode=personal,
        query="Where does the cellist live?",
        cipher=cipher_for(heavy),
        k=len(FACTS),
        embedder=embedder,
        nearest=3,
    )
    exact = rank_memories(
        user=heavy,
        mode=personal,
        query="Where does the cellist live?",
        cipher=cipher_for(heavy),
        k=len(FACTS),
        embedder=embedder,
        nearest=None,
    )
    nearest_three = sorted(exact, key=lambda entry: -entry.cosine)[:3]
    with_a_word = [entry for entry in exact if entry.lexical > 0]
    assert with_a_word  # "lives"
    assert {entry.id for entry in ranked} == {entry.id for entry in nearest_three + with_a_word}
    # Scored as exactly as by the exact path: the same IDF over all of the user's candidates.
    scores = {entry.id: entry.score for entry in exact}
    assert all(abs(entry.score - scores[entry.id]) < 1e-9 for entry in ranked if entry.lexical)


def test_a_frequent_word_brings_in_only_its_nearest_memories_and_keeps_its_weight(
    heavy, personal, embedder, system_actor, settings
):
    more = ["Filou sleeps on the sofa all afternoon.", "Filou chased the neighbour's cat."]
    items = [NewMemory(kind="fact", content=text) for text in more]
    remember_many(user=heavy, mode=personal, items=items, actor=system_actor, embedder=embedder)
    settings.MEMORYHUB_NEAREST_WORD_CAP = 2  # "Claire" is in one memory, "Filou" in three.
    query = "Is Filou friends with Claire?"

    def rank(nearest):
        return rank_memories(
            user=heavy,
            mode=personal,
            query=query,
            cipher=cipher_for(heavy),
            k=len(FACTS) + len(more),
            embedder=embedder,
            nearest=nearest,
        )

    exact = rank(None)
    ranked = rank(1)
    cipher = cipher_for(heavy)
    rows = Memory.objects.for_owner(user=heavy, mode=personal)

    def holding(word):
        found = rows.filter(blind_tokens__overlap=cipher.blind_tokens(word))
        return set(found.values_list("id", flat=True))

    claire, filou = holding("claire"), holding("filou")
    assert len(claire) == 1
    assert len(filou) == 3
    by_cosine = sorted(exact, key=lambda entry: -entry.cosine)
    nearest = by_cosine[0].id
    nearest_worded = next(entry.id for entry in by_cosine if entry.id in claire | filou)
    # Every memory of the rare word, the nearest one, and the nearest one holding a query word:
    # a Filou memory at least is left out...
    assert {entry.id for entry in ranked} == claire | {nearest, nearest_worded}
    assert not filou <= {entry.id for entry in ranked}
    # ...and those ranked keep the weight of "Filou" counted over all three.
    lexical = {entry.id: entry.lexical for entry in exact}
    assert all(abs(entry.lexical - lexical[entry.id]) < 1e-9 for entry in ranked)


def test_the_heavy_path_never_compares_another_models_vector(heavy, personal, embedder):
    claire = Memory.objects.for_owner(user=heavy, mode=personal).get(
        blind_tokens__contains=cipher_for(heavy).blind_tokens("claire")
    )
    Memory.all_owners.filter(pk=claire.pk).update(embedding_model=MULTILINGUAL_E5)
    ranked = rank_memories(
        user=heavy,
        mode=personal,
        query="Claire",
        cipher=cipher_for(heavy),
        k=len(FACTS),
        embedder=embedder,
        nearest=3,
    )
    # Found by its word, its vector counted as unrelated (cosine 0), as by the exact path.
    found = {entry.id: entry for entry in ranked}
    assert found[claire.pk].cosine == 0.0
    assert found[claire.pk].lexical > 0


def test_a_user_without_an_index_and_a_narrowed_search_stay_exact(
    indexed, personal, embedder, system_actor, settings
):
    def search(**kwargs):
        return lambda: search_memories(
            user=indexed,
            mode=personal,
            query="Where does Claire live?",
            actor=system_actor,
            embedder=embedder,
            **kwargs,
        )

    assert _reads_nearest(search())
    assert not _reads_nearest(search(kinds=["fact"]))
    assert not _reads_nearest(search(since=timezone.now() - timedelta(days=1)))
    settings.MEMORYHUB_NEAREST_FROM = 0
    assert not _reads_nearest(search())
    settings.MEMORYHUB_NEAREST_FROM = 10
    drop_nearest_index(user_id=indexed.pk, concurrently=False)
    assert not _reads_nearest(search())


def _build_index_elsewhere(user) -> None:
    # As another process (`manage.py index_heavy_users`) would: this one is not told.
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX {index_name(user.pk)} ON {Memory._meta.db_table} "
            f"USING hnsw ({HALF_PRECISION} halfvec_cosine_ops) WHERE user_id = '{user.pk}'::uuid"
        )


def _drop_index_elsewhere(user) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {index_name(user.pk)}")


def test_whether_a_user_has_an_index_is_asked_once_a_minute_and_again_after_a_change_here(
    heavy, monkeypatch
):
    with CaptureQueriesContext(connection) as queries:
        assert not has_own_index(user_id=heavy.pk, using="default")
        assert not has_own_index(user_id=heavy.pk, using="default")
    assert len(queries) == 1
    create_nearest_index(user_id=heavy.pk, concurrently=False)
    assert has_own_index(user_id=heavy.pk, using="default")
    drop_nearest_index(user_id=heavy.pk, concurrently=False)
    assert not has_own_index(user_id=heavy.pk, using="default")
    _build_index_elsewhere(heavy)
    assert not has_own_index(user_id=heavy.pk, using="default")  # Not heard of yet.
    monkeypatch.setattr(vector_search, "OWN_INDEX_SECONDS", 0.0)  # The minute has passed.
    assert has_own_index(user_id=heavy.pk, using="default")


def test_an_index_built_elsewhere_and_not_heard_of_yet_leaves_the_search_exact(
    heavy, personal, embedder, system_actor
):
    def search():
        return search_memories(
            user=heavy, mode=personal, query=QUERIES[0], actor=system_actor, embedder=embedder
        )

    exact = [_ranked(heavy, personal, query, embedder, nearest=None) for query in QUERIES]
    assert not _reads_nearest(search)
    _build_index_elsewhere(heavy)
    assert not _reads_nearest(search)
    assert [_ranked(heavy, personal, query, embedder) for query in QUERIES] == exact


def test_an_index_dropped_elsewhere_and_not_heard_of_yet_keeps_the_same_results(
    indexed, personal, embedder, system_actor
):
    def search():
        return search_memories(
            user=indexed, mode=personal, query=QUERIES[0], actor=system_actor, embedder=embedder
        )

    assert _reads_nearest(search)
    through_index = [_ranked(indexed, personal, query, embedder) for query in QUERIES]
    _drop_index_elsewhere(indexed)
    # Still the nearest path, now by an exact sort in the index's (half-precision) order.
    assert _reads_nearest(search)
    assert [_ranked(indexed, personal, query, embedder) for query in QUERIES] == through_index


def test_heavy_users_get_their_own_index_and_lose_it_when_they_shrink(heavy, other_user, embedder):
    factories.make_memory(other_user, factories.mode_of(other_user, "personal"), "Hello.")
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    changes = index_heavy_users(threshold=10, concurrently=False)
    assert changes.created == [heavy.pk]
    assert indexed_users() == {heavy.pk}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s", [index_name(heavy.pk)]
        )
        (definition,) = cursor.fetchone()
    assert "hnsw" in definition
    assert str(heavy.pk) in definition
    assert _index_exists(profile_index_name(heavy.pk))  # The profile layer's (context_layers.py)
    assert index_heavy_users(threshold=10, concurrently=False).created == []
    changes = index_heavy_users(threshold=1000, concurrently=False)
    assert changes.dropped == [heavy.pk]
    assert indexed_users() == set()
    assert not _index_exists(profile_index_name(heavy.pk))


def _mark_invalid(user_id, name=index_name) -> None:
    """What a concurrent build cut short leaves behind: the index, marked invalid."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass",
            [name(user_id)],
        )


def test_an_interrupted_build_is_dropped_and_built_again(heavy):
    create_nearest_index(user_id=heavy.pk, concurrently=False)
    _mark_invalid(heavy.pk)
    assert indexed_users() == set()
    assert indexed_users(valid=False) == {heavy.pk}

    changes = index_heavy_users(threshold=10, concurrently=False)

    assert changes.repaired == [heavy.pk]
    assert changes.created == [heavy.pk]
    assert indexed_users() == {heavy.pk}
    assert indexed_users(valid=False) == set()


def test_an_interrupted_build_of_the_profile_index_is_built_again(heavy):
    create_nearest_index(user_id=heavy.pk, concurrently=False)
    _mark_invalid(heavy.pk, name=profile_index_name)
    assert indexed_users() == indexed_users(valid=False) == {heavy.pk}

    changes = index_heavy_users(threshold=10, concurrently=False)

    assert changes.repaired == [heavy.pk]
    assert indexed_users(valid=False) == set()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass",
            [profile_index_name(heavy.pk)],
        )
        assert cursor.fetchone() == (True,)


def test_an_interrupted_build_of_a_user_no_longer_heavy_is_only_dropped(heavy):
    create_nearest_index(user_id=heavy.pk, concurrently=False)
    _mark_invalid(heavy.pk)

    changes = index_heavy_users(threshold=1000, concurrently=False)

    assert (changes.repaired, changes.created, changes.dropped) == ([heavy.pk], [], [])
    assert indexed_users(valid=False) == indexed_users() == set()


def test_a_second_run_while_one_is_at_work_does_nothing(heavy):
    def hold_the_run_lock() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [RUN_LOCK])

    with held_open(hold_the_run_lock) as commit:
        changes = index_heavy_users(threshold=10, concurrently=False)
        commit()

    assert changes.busy
    assert indexed_users() == set()
    assert index_heavy_users(threshold=10, concurrently=False).created == [heavy.pk]


@pytest.mark.django_db(transaction=True)
def test_heavy_users_are_indexed_daily_by_beat(heavy, settings):
    # The task builds concurrently, as in production: outside any transaction.
    entry = settings.CELERY_BEAT_SCHEDULE["index-heavy-users"]
    assert entry["task"] == "memoryhub.index_heavy_users"
    assert entry["schedule"] == 86400.0
    assert tasks.index_heavy_users.apply().get() == {
        "created": 1,
        "dropped": 0,
        "repaired": 0,
        "busy": 0,
    }
    assert indexed_users() == {heavy.pk}
    settings.MEMORYHUB_NEAREST_FROM = 0
    assert tasks.index_heavy_users.apply().get()["created"] == 0


def test_the_command_refuses_a_threshold_that_would_index_everyone(heavy):
    with pytest.raises(CommandError, match="at least 1"):
        call_command("index_heavy_users", threshold=0)
    assert indexed_users() == set()


def _index_exists(name):
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        return cursor.fetchone()[0]


def test_a_heavy_users_context_reads_the_profile_along_the_index_and_ranks_through_it(
    indexed, personal, embedder, system_actor
):
    with CaptureQueriesContext(connection) as queries:
        bundle = assemble_context(
            user=indexed,
            mode=personal,
            agent=None,
            message="Where does Claire live?",
            actor=system_actor,
            embedder=embedder,
        )
    sqls = [query["sql"] for query in queries.captured_queries]
    assert any("halfvec" in sql for sql in sqls)
    # The profile's latest memories of each kind and importance, not all of them sorted.
    assert any("UNION ALL" in sql and "importance" in sql for sql in sqls)
    profile = next(block for block in bundle.blocks if block.key == "profile")
    assert "My sister Claire lives in Lyon." in profile.text
