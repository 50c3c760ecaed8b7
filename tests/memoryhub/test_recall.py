"""Hybrid recall (queries/recall.py) and the batched access counters (services/access.py)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from importlib import import_module

import pytest
import time_machine
from django.db import connection
from django.utils import timezone

from memoryhub.audit.log import subject_pseudonym
from memoryhub.errors import InvalidInputError
from memoryhub.models import AuditEntry, Memory
from memoryhub.queries import recall, speaker_cues
from memoryhub.queries.recall import search_memories
from memoryhub.services.access import AccessBuffer, flush_memory_access
from memoryhub.services.memories import NewMemory, edit_memory, remember_many
from tests import factories

REWRITE = import_module("memoryhub.migrations.0007_rewrite_toasted_embeddings").REWRITE


@pytest.fixture(autouse=True)
def _empty_access_buffer(db):
    # The buffer is per process: start and end every test with nothing pending.
    flush_memory_access()
    yield
    flush_memory_access()


def _remember(user, mode, embedder, actor, *contents, **fields):
    items = [NewMemory(kind=fields.pop("kind", "fact"), content=c, **fields) for c in contents]
    return remember_many(user=user, mode=mode, items=items, actor=actor, embedder=embedder)


def _search(user, mode, query, embedder, actor, **kwargs):
    return search_memories(
        user=user, mode=mode, query=query, actor=actor, embedder=embedder, **kwargs
    )


def test_search_ranks_the_memory_that_answers_the_question_first(
    user, personal, embedder, system_actor
):
    _remember(
        user,
        personal,
        embedder,
        system_actor,
        "Alice is allergic to peanuts.",
        "Alice's sister lives in Montreal.",
        "Alice prefers tea over coffee in the morning.",
    )
    items = _search(user, personal, "what food allergies does she have?", embedder, system_actor)
    assert items[0].content == "Alice is allergic to peanuts."
    scores = [item.score for item in items]
    assert scores == sorted(scores, reverse=True)
    assert set(items[0].extra) == {"cosine", "lexical", "freshness"}


def test_an_exact_rare_word_is_found_through_the_blind_index(
    user, personal, embedder, system_actor
):
    _remember(
        user,
        personal,
        embedder,
        system_actor,
        "The wifi password at the cabin is written on the fridge.",
        "Alice's locker code is QX7731.",
        "Alice keeps her passport in the blue drawer.",
        "Alice's gym is open until ten.",
    )
    items = _search(user, personal, "QX7731", embedder, system_actor, k=4)
    assert items[0].content == "Alice's locker code is QX7731."
    assert items[0].extra["lexical"] > 0
    assert all(item.extra["lexical"] == 0 for item in items[1:])


def test_word_forms_match_across_inflections(user, personal, embedder, system_actor):
    _remember(
        user,
        personal,
        embedder,
        system_actor,
        "Alice started painting watercolours last spring.",
        "Alice moved flats twice this year.",
    )
    items = _search(user, personal, "paint", embedder, system_actor, k=2)
    assert items[0].content.startswith("Alice started painting")
    assert items[0].extra["lexical"] > 0


def test_a_word_form_shared_by_two_query_terms_counts_for_both(
    user, personal, embedder, system_actor
):
    # "paint" and "painting" are two terms whose forms both include "painting": the memory that
    # holds it matches both, so its lexical score is the sum of both IDFs (each df = 1 of N = 3).
    _remember(
        user,
        personal,
        embedder,
        system_actor,
        "Alice is painting the fence.",
        "Alice moved flats twice this year.",
        "Alice's sister lives in Montreal.",
    )
    [first, *_] = _search(user, personal, "paint painting", embedder, system_actor, k=3)
    candidates, holding = 3, 1
    idf = math.log(1 + (candidates - holding + 0.5) / (holding + 0.5)) / math.log(1 + candidates)
    assert first.content == "Alice is painting the fence."
    assert first.extra["lexical"] == pytest.approx(2 * idf, abs=1e-6)


def test_a_query_without_words_ranks_by_meaning_alone(user, personal, embedder, system_actor):
    _remember(user, personal, embedder, system_actor, "Alice is happy today.", "Alice owns a van.")
    items = _search(user, personal, "🙂 !!", embedder, system_actor, k=2)
    assert len(items) == 2
    assert all(item.extra["lexical"] == 0 for item in items)


def test_search_never_returns_another_users_or_another_modes_memories(
    user, other_user, personal, work, embedder, system_actor
):
    _remember(user, personal, embedder, system_actor, "Alice plays the cello.")
    _remember(user, work, embedder, system_actor, "Alice leads the cello project at work.")
    bob_personal = factories.mode_of(other_user, "personal")
    _remember(other_user, bob_personal, embedder, system_actor, "Bob plays the cello too.")
    items = _search(user, personal, "cello", embedder, system_actor, k=10)
    assert [item.content for item in items] == ["Alice plays the cello."]


def test_candidates_and_inactive_memories_are_never_recalled(
    user, personal, embedder, system_actor
):
    kept, candidate, superseded, forgotten = _remember(
        user,
        personal,
        embedder,
        system_actor,
        "Alice drives a green bicycle.",
        "Alice might drive a red bicycle.",
        "Alice drove a yellow bicycle.",
        "Alice drove a blue bicycle.",
    )
    scoped = Memory.objects.for_owner(user=user, mode=personal)
    scoped.filter(pk=candidate.id).update(confidence="candidate", status="candidate")
    scoped.filter(pk=superseded.id).update(status="superseded")
    scoped.filter(pk=forgotten.id).update(status="forgotten")
    items = _search(user, personal, "bicycle", embedder, system_actor)
    assert [item.id for item in items] == [kept.id]


def test_a_user_with_many_memories_gets_every_one_of_them_exactly(
    user, personal, embedder, system_actor
):
    contents = [f"Note number {n} about the garden." for n in range(40)]
    _remember(user, personal, embedder, system_actor, *contents)
    items = _search(user, personal, "garden notes", embedder, system_actor, k=100)
    assert sorted(item.content for item in items) == sorted(contents)


def test_filters_narrow_by_kind_period_and_topic(user, personal, embedder, system_actor):
    may = datetime(2024, 5, 10, tzinfo=UTC)
    june = datetime(2024, 6, 10, tzinfo=UTC)
    _remember(
        user,
        personal,
        embedder,
        system_actor,
        "Trip to Porto with Ana.",
        kind="episode",
        occurred_at=may,
    )
    _remember(
        user,
        personal,
        embedder,
        system_actor,
        "Trip to Oslo with Ana.",
        kind="episode",
        occurred_at=june,
    )
    _remember(
        user, personal, embedder, system_actor, "Ana prefers trains to planes.", kind="preference"
    )

    def contents(**kwargs):
        return sorted(
            i.content for i in _search(user, personal, "Ana", embedder, system_actor, **kwargs)
        )

    assert contents(kinds=["preference"]) == ["Ana prefers trains to planes."]
    assert contents(kinds=["episode"], since=june - timedelta(days=1)) == ["Trip to Oslo with Ana."]
    assert contents(kinds=["episode"], until=june - timedelta(days=1)) == [
        "Trip to Porto with Ana."
    ]
    assert contents(topics=["Oslo"]) == ["Trip to Oslo with Ana."]
    assert contents(topics=["porto", "trains"]) == [
        "Ana prefers trains to planes.",
        "Trip to Porto with Ana.",
    ]


def test_critical_memories_do_not_fade_while_normal_ones_do(user, personal, embedder, system_actor):
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        _remember(
            user,
            personal,
            embedder,
            system_actor,
            "Alice's blood type is O negative.",
            importance="critical",
        )
        _remember(user, personal, embedder, system_actor, "Alice's blood donation card is blue.")
    with time_machine.travel(start + timedelta(days=360), tick=False):
        items = _search(user, personal, "blood", embedder, system_actor, record_access=False)
    freshness = {item.importance: item.extra["freshness"] for item in items}
    assert freshness["critical"] == 1.0
    # A fact's half-life is 180 days: two half-lives later it is a quarter as fresh.
    assert freshness["normal"] == pytest.approx(0.25, abs=0.01)


def test_a_memory_used_recently_is_fresh_again(user, personal, embedder, system_actor):
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        (memory,) = _remember(user, personal, embedder, system_actor, "Alice runs on Tuesdays.")
    later = start + timedelta(days=180)
    with time_machine.travel(later, tick=False):
        before = _search(user, personal, "running", embedder, system_actor)[0]
        flush_memory_access()
        after = _search(user, personal, "running", embedder, system_actor, record_access=False)[0]
    assert before.extra["freshness"] == pytest.approx(0.5, abs=0.01)
    assert after.extra["freshness"] == 1.0
    assert after.score > before.score
    row = Memory.objects.for_owner(user=user, mode=personal).get(pk=memory.id)
    assert row.access_count == 1
    assert row.last_accessed_at == later


def test_importance_breaks_a_tie_between_equally_relevant_memories(
    user, personal, embedder, system_actor
):
    low, high = _remember(
        user, personal, embedder, system_actor, "Alice likes jazz.", "Alice likes jazz!"
    )
    Memory.objects.for_owner(user=user, mode=personal).filter(pk=high.id).update(importance="high")
    Memory.objects.for_owner(user=user, mode=personal).filter(pk=low.id).update(importance="low")
    items = _search(user, personal, "music taste", embedder, system_actor, record_access=False)
    assert [item.id for item in items] == [high.id, low.id]


def test_search_without_recording_access_leaves_the_counters_alone(
    user, personal, embedder, system_actor
):
    (memory,) = _remember(user, personal, embedder, system_actor, "Alice collects stamps.")
    _search(user, personal, "stamps", embedder, system_actor, record_access=False)
    assert flush_memory_access() == 0
    row = Memory.objects.for_owner(user=user, mode=personal).get(pk=memory.id)
    assert (row.access_count, row.last_accessed_at) == (0, None)


def test_search_writes_one_audit_row_naming_the_memories_returned(
    user, personal, embedder, system_actor
):
    memories = _remember(user, personal, embedder, system_actor, "Alice knits.", "Alice sews.")
    before = AuditEntry.objects.count()
    _search(user, personal, "crafts", embedder, system_actor)
    assert AuditEntry.objects.count() == before + 1
    entry = AuditEntry.objects.order_by("-id").first()
    assert entry.action == "memory.search"
    assert entry.subject == subject_pseudonym(user.pk)
    assert set(entry.object_ids) == {str(m.id) for m in memories}


def test_an_edited_memory_is_found_by_its_new_words(user, personal, embedder, system_actor):
    (memory,) = _remember(user, personal, embedder, system_actor, "Alice works at Initech.")
    edit_memory(
        user=user,
        mode=personal,
        memory_id=memory.id,
        actor=system_actor,
        embedder=embedder,
        content="Alice works at Globex.",
    )
    assert _search(user, personal, "Globex", embedder, system_actor)[0].extra["lexical"] > 0
    assert _search(user, personal, "Initech", embedder, system_actor)[0].extra["lexical"] == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": "   "}, "query must not be empty"),
        ({"query": "x" * 4001}, "longer than"),
        ({"k": 0}, "k must be between"),
        ({"k": 101}, "k must be between"),
        ({"kinds": ["gossip"]}, "kinds must be among"),
        ({"since": datetime(2024, 1, 1)}, "timezone-aware"),  # noqa: DTZ001
        (
            {"since": datetime(2024, 2, 1, tzinfo=UTC), "until": datetime(2024, 1, 1, tzinfo=UTC)},
            "since must be before until",
        ),
        ({"topics": ["  ...  "]}, "at least one word"),
    ],
)
def test_bad_search_input_is_an_input_error(
    user, personal, embedder, system_actor, kwargs, message
):
    arguments = {"query": "anything", **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        _search(user, personal, embedder=embedder, actor=system_actor, **arguments)


def test_the_access_buffer_flushes_when_it_holds_enough_ids(user, personal, embedder, system_actor):
    first, second = _remember(user, personal, embedder, system_actor, "One.", "Two.")
    buffer = AccessBuffer(max_age_seconds=3600, max_ids=2)
    assert buffer.add([first.id]) == 0
    assert buffer.add([first.id]) == 0
    assert buffer.add([second.id]) == 2
    assert len(buffer) == 0
    counts = dict(
        Memory.objects.for_owner(user=user, mode=personal).values_list("pk", "access_count")
    )
    assert counts == {first.id: 2, second.id: 1}


def test_the_access_buffer_flushes_once_its_oldest_entry_is_old_enough(
    user, personal, embedder, system_actor
):
    (memory,) = _remember(user, personal, embedder, system_actor, "One.")
    buffer = AccessBuffer(max_age_seconds=5, max_ids=1000)
    with time_machine.travel(datetime(2025, 1, 1, tzinfo=UTC), tick=False) as traveller:
        assert buffer.add([memory.id]) == 0
        traveller.shift(timedelta(seconds=6))
        assert buffer.add([memory.id]) == 1
    row = Memory.objects.for_owner(user=user, mode=personal).get(pk=memory.id)
    assert row.access_count == 2
    assert row.last_accessed_at == datetime(2025, 1, 1, 0, 0, 6, tzinfo=UTC)


def test_a_long_memory_keeps_its_embedding_in_its_row(user, personal, embedder, system_actor):
    # A memory this long makes a row past PostgreSQL's 2 kB TOAST threshold; its embedding must
    # still be read from the row itself, not from the TOAST table (one page per candidate).
    content = " ".join(f"Alice planted tomato variety number {n} in the garden." for n in range(12))
    [memory] = _remember(user, personal, embedder, system_actor, content)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_toast_chunk_id(embedding), pg_column_size(m.*) "
            "FROM memoryhub_memory m WHERE id = %s",
            [memory.id],
        )
        chunk_id, row_bytes = cursor.fetchone()
    assert row_bytes > 2032
    assert chunk_id is None


def test_migration_0007_brings_an_old_toasted_embedding_back_into_its_row(
    user, personal, embedder, system_actor
):
    # As before migration 0005: the default TOAST target moves a long memory's vector out.
    content = " ".join(f"Alice planted tomato variety number {n} in the garden." for n in range(12))
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE memoryhub_memory RESET (toast_tuple_target)")
        [memory] = _remember(user, personal, embedder, system_actor, content)
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # No deferred checks left before DDL.
        cursor.execute("ALTER TABLE memoryhub_memory SET (toast_tuple_target = 8160)")
        chunk_sql = "SELECT pg_column_toast_chunk_id(embedding) FROM memoryhub_memory WHERE id = %s"
        cursor.execute(chunk_sql, [memory.id])
        assert cursor.fetchone()[0] is not None
        before = Memory.objects.for_owner(user=user, mode=personal).get(pk=memory.id).embedding
        cursor.execute(REWRITE.format(table="memoryhub_memory"))
        cursor.execute(chunk_sql, [memory.id])
        assert cursor.fetchone()[0] is None
    after = Memory.objects.for_owner(user=user, mode=personal).get(pk=memory.id).embedding
    assert list(after) == list(before)


def _told_in_order(user, personal, embedder, actor, occurred_at, *contents):
    # A dialog remembered turn by turn: same moment told, created one after another.
    start = timezone.now()
    items = [
        NewMemory(
            kind="episode",
            content=content,
            occurred_at=occurred_at,
            created_at=start + timedelta(milliseconds=number),
        )
        for number, content in enumerate(contents)
    ]
    return remember_many(user=user, mode=personal, items=items, actor=actor, embedder=embedder)


def test_the_turn_after_a_matching_question_is_recalled_with_it(
    user, personal, embedder, system_actor
):
    # The answer ("Lisbon, in May") shares no word and little meaning with the question; the
    # turn before it does. Neighbours lift it above an unrelated memory told elsewhere.
    _told_in_order(
        user,
        personal,
        embedder,
        system_actor,
        datetime(2024, 5, 2, tzinfo=UTC),
        "Bob: Where are you going for your holiday trip this year?",
        "Alice: Lisbon, in May.",
    )
    _told_in_order(
        user,
        personal,
        embedder,
        system_actor,
        datetime(2024, 9, 9, tzinfo=UTC),
        "Alice: The dentist appointment moved to Friday.",
    )
    with_neighbours = _search(
        user, personal, "Where is Alice going for her holiday trip?", embedder, system_actor
    )
    contents = [item.content for item in with_neighbours]
    assert contents.index("Alice: Lisbon, in May.") < contents.index(
        "Alice: The dentist appointment moved to Friday."
    )
    answer = next(i for i in with_neighbours if i.content == "Alice: Lisbon, in May.")
    # The lift is part of the score, not a separate ranking: the answer's score exceeds its
    # own blend of cosine and words, and Alice's speaker bonus.
    own = answer.extra["cosine"] + recall.LEXICAL_WEIGHT * answer.extra["lexical"]
    assert answer.score > own + recall.SPEAKER_BONUS


def test_memories_told_apart_do_not_lift_each_other(user, personal, embedder, system_actor):
    # No session and no common moment: each memory stands alone, scored on its own.
    _remember(user, personal, embedder, system_actor, "Bob asked where Alice goes on holiday.")
    _remember(user, personal, embedder, system_actor, "Lisbon, in May.")
    items = _search(user, personal, "Where does Alice go on holiday?", embedder, system_actor)
    lone = next(i for i in items if i.content == "Lisbon, in May.")
    own = (
        lone.extra["cosine"]
        + recall.LEXICAL_WEIGHT * lone.extra["lexical"]
        - recall.STALENESS_PENALTY * (1 - lone.extra["freshness"])
    )
    assert math.isclose(lone.score, own, abs_tol=1e-5)


def test_a_memory_from_the_period_the_query_names_ranks_first(
    user, personal, embedder, system_actor
):
    # Two equally relevant memories; the query names the month of one of them.
    _remember(
        user,
        personal,
        embedder,
        system_actor,
        "Melanie's car broke down on the way to the lake.",
        occurred_at=datetime(2023, 7, 3, tzinfo=UTC),
        kind="episode",
    )
    _remember(
        user,
        personal,
        embedder,
        system_actor,
        "Melanie's car broke down on the way to the lake!",
        occurred_at=datetime(2023, 10, 20, tzinfo=UTC),
        kind="episode",
    )
    for query, month in (("in October 2023", 10), ("in July 2023", 7)):
        items = _search(
            user, personal, f"What happened to Melanie's car {query}?", embedder, system_actor
        )
        assert items[0].occurred_at.month == month


def test_names_in_the_query_weigh_more_than_other_words(user, personal, embedder, system_actor):
    _remember(user, personal, embedder, system_actor, "John: I visited Seattle for a game.")
    _remember(user, personal, embedder, system_actor, "Maria: I visited the museum for a game.")
    [john, maria] = sorted(
        _search(user, personal, "Which places has John visited?", embedder, system_actor),
        key=lambda item: item.content,
    )
    # "john" is the only term one holds and the other does not: its IDF, times the name weight.
    assert recall.NAME_WEIGHT > 1
    assert john.extra["lexical"] > maria.extra["lexical"]
    assert john.score > maria.score


def test_a_guess_lifts_no_neighbour_while_the_same_question_as_a_fact_does(
    user, personal, embedder, system_actor
):
    _told_in_order(
        user,
        personal,
        embedder,
        system_actor,
        datetime(2024, 5, 2, tzinfo=UTC),
        "Bob: Have you thought about a job in publishing?",
        "Alice: Not yet.",
    )

    def scores(query):
        items = _search(user, personal, query, embedder, system_actor)
        by_content = {item.content: item for item in items}
        return by_content["Bob: Have you thought about a job in publishing?"], by_content[
            "Alice: Not yet."
        ]

    def own(item):
        return (
            item.extra["cosine"]
            + recall.LEXICAL_WEIGHT * item.extra["lexical"]
            - recall.STALENESS_PENALTY * (1 - item.extra["freshness"])
        )

    def lifted(item, best, neighbour):
        mine = own(item)
        return (
            mine
            + recall.NEIGHBOUR_LIFT * max(0.0, own(neighbour) - mine)
            + recall.GROUP_LIFT * (best - mine)
        )

    # A guess: only the group lift (session-level evidence) remains, and Alice's turn has the
    # bonus of the speaker the question names.
    bob, alice = scores("Would Alice like a job in publishing?")
    best = max(own(bob), own(alice))
    for item, bonus in ((bob, 0.0), (alice, recall.SPEAKER_BONUS)):
        assert math.isclose(
            item.score, own(item) + recall.GROUP_LIFT * (best - own(item)) + bonus, abs_tol=1e-5
        )
    # The same question asking for a fact, or a request ("could you…"), lifts the neighbour.
    for query in (
        "Does Alice like a job in publishing?",
        "Could you tell me if Alice likes a job in publishing?",
    ):
        bob, alice = scores(query)
        best = max(own(bob), own(alice))
        lifted_alice = lifted(alice, best, bob) + recall.SPEAKER_BONUS
        assert math.isclose(alice.score, lifted_alice, abs_tol=1e-5)
        assert lifted_alice > own(alice) + recall.GROUP_LIFT * (best - own(alice)) + 1e-3 + (
            recall.SPEAKER_BONUS
        )


def _cosine(embedder, a, b):
    u, v = embedder.embed([a, b])
    return sum(x * y for x, y in zip(u, v, strict=True))


def test_a_memory_spoken_by_the_person_the_query_names_gets_the_speaker_bonus(
    user, personal, embedder, system_actor
):
    # Told apart (no lifts), the same words said by Alice and by Bob; Bob's also names Alice.
    for content in ("Alice: I love hiking in the Alps.", "Bob: Alice and I love hiking."):
        _remember(user, personal, embedder, system_actor, content)
    items = {
        item.content: item
        for item in _search(user, personal, "What does Alice love?", embedder, system_actor)
    }
    for content, bonus in (
        ("Alice: I love hiking in the Alps.", recall.SPEAKER_BONUS),
        ("Bob: Alice and I love hiking.", 0.0),
    ):
        item = items[content]
        own = (
            item.extra["cosine"]
            + recall.LEXICAL_WEIGHT * item.extra["lexical"]
            - recall.STALENESS_PENALTY * (1 - item.extra["freshness"])
        )
        assert math.isclose(item.score, own + bonus, abs_tol=1e-5)
        # The cosine is of the query with Alice's name taken out: "What does someone love?".
        assert math.isclose(
            item.extra["cosine"],
            _cosine(embedder, "What does someone love?", content),
            abs_tol=1e-4,
        )


def test_only_a_name_that_speaks_in_this_users_mode_is_a_speaker_cue(
    user, other_user, personal, work, embedder, system_actor
):
    from memoryhub.keyring import cipher_for
    from memoryhub.services.users import ensure_mode

    _remember(user, work, embedder, system_actor, "Carol: I run the Lisbon office.")
    _remember(user, personal, embedder, system_actor, "Alice: I love hiking.")
    theirs = ensure_mode(user=other_user, slug="personal")
    _remember(other_user, theirs, embedder, system_actor, "Dave: I love hiking.")
    cipher = cipher_for(user)
    query = "Do Alice, Carol, Dave or Erin love hiking? And alice?"
    cues = speaker_cues.read_cues(user=user, mode=personal, query=query, cipher=cipher)
    # Alice speaks here; Carol only in another mode, Dave only for another user, Erin nowhere;
    # "alice" in lower case is not written as a name.
    assert cues.text == "Do someone, Carol, Dave or Erin love hiking? And alice?"
    assert cues.speakers == tuple(cipher.speaker_tokens(["alice"]))
    # A query naming no one, or no one who speaks, is embedded as it is.
    for plain in ("What do I love?", "What does Erin love?"):
        assert speaker_cues.read_cues(user=user, mode=personal, query=plain, cipher=cipher) == (
            speaker_cues.QueryCues(text=plain)
        )


def test_a_candidate_speaker_is_no_cue(user, personal, embedder, system_actor):
    from memoryhub.keyring import cipher_for

    # Heard once: a candidate, never recalled, so neither is its speaker.
    _remember(
        user, personal, embedder, system_actor, "Alice: I love hiking.", confidence="candidate"
    )
    cues = speaker_cues.read_cues(
        user=user, mode=personal, query="What does Alice love?", cipher=cipher_for(user)
    )
    assert cues == speaker_cues.QueryCues(text="What does Alice love?")
