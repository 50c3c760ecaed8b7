"""Speakers in the blind index (keyring `speaker_of`, `memory_index`) and `reindex_memories`."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from memoryhub.keyring import cipher_for, speaker_of
from memoryhub.models import Memory
from memoryhub.queries.recall import search_memories
from memoryhub.services.memories import NewMemory, edit_memory, remember_many
from tests import factories


@pytest.mark.parametrize(
    ("text", "speaker"),
    [
        ("Caroline: I went to the support group.", ["caroline"]),
        ("  Dr. Smith: take two a day", ["dr", "smith"]),
        ("Éva : on se voit demain ?", ["eva"]),
        ("Mary Ann Lee: hello", ["mary", "ann", "lee"]),
        # Four words are a sentence, not a name; a time, a link and a bare colon are no speaker.
        ("We met at the station: lovely", []),
        ("10:30 dentist", []),
        ("See https://example.org", []),
        ("Caroline:no space", []),
        ("Alice went hiking.", []),
        # A label opens a line like a name does, but speaks for no one.
        ("Note: call the bank on Monday", []),
        ("Action item: book the room", []),
        ("Rappel : réunion à 10 h", []),
        ("Q: where do I live?", []),
        ("Notable Person: hello", ["notable", "person"]),
    ],
)
def test_the_speaker_is_the_name_a_transcript_line_opens_with(text, speaker):
    assert speaker_of(text) == speaker


def test_a_speaker_token_is_kept_apart_from_the_same_word(user):
    cipher = cipher_for(user)
    index = cipher.memory_index("Alice: I met Alice's sister")
    [speaker] = cipher.speaker_tokens(["alice"])
    assert speaker in index
    assert set(cipher.blind_tokens("Alice: I met Alice's sister")) == set(index) - {speaker}
    # Under another key: the word "alice" in a memory never passes for its speaker.
    assert speaker not in cipher.blind_tokens("alice")
    assert cipher.memory_index("I met Alice") == cipher.blind_tokens("I met Alice")


def test_every_write_path_indexes_the_speaker(user, personal, embedder, system_actor):
    cipher = cipher_for(user)
    [memory] = remember_many(
        user=user,
        mode=personal,
        items=[NewMemory(kind="fact", content="Alice: I love hiking.")],
        actor=system_actor,
        embedder=embedder,
    )
    [alice] = cipher.speaker_tokens(["alice"])
    rows = Memory.objects.for_owner(user=user, mode=personal)
    assert alice in rows.get(pk=memory.id).blind_tokens
    edited = edit_memory(
        user=user,
        mode=personal,
        memory_id=memory.id,
        content="Bob: I love hiking.",
        actor=system_actor,
        embedder=embedder,
    )
    assert (
        alice
        not in Memory.objects.for_owner(user=user, mode=personal).get(pk=edited.id).blind_tokens
    )


def _remember_with_the_old_index(user, mode, embedder, actor, content):
    """A memory as written before speaker tokens: its words only."""
    [memory] = remember_many(
        user=user,
        mode=mode,
        items=[NewMemory(kind="fact", content=content)],
        actor=actor,
        embedder=embedder,
    )
    old = cipher_for(user).blind_tokens(content)
    Memory.objects.for_owner(user=user, mode=mode).filter(pk=memory.id).update(blind_tokens=old)
    return memory


def test_reindex_gives_old_memories_their_speaker_and_runs_twice_safely(
    user, other_user, personal, embedder, system_actor
):
    from memoryhub.services.users import ensure_mode

    mine = _remember_with_the_old_index(
        user, personal, embedder, system_actor, "Alice: I love hiking in the Alps."
    )
    theirs_mode = ensure_mode(user=other_user, slug="personal")
    theirs = _remember_with_the_old_index(
        other_user, theirs_mode, embedder, system_actor, "Bob: I collect stamps."
    )
    unchanged = Memory.all_owners.get(
        pk=remember_many(
            user=user,
            mode=personal,
            items=[NewMemory(kind="fact", content="No speaker in this one.")],
            actor=system_actor,
            embedder=embedder,
        )[0].id
    )

    def found_by_speaker():
        [top] = search_memories(
            user=user,
            mode=personal,
            query="What does Alice love?",
            actor=system_actor,
            embedder=embedder,
            k=1,
        )
        return top.extra["cosine"]

    # Before: Alice is no speaker to recall, so the query keeps her name in its embedding.
    before = found_by_speaker()
    out = StringIO()
    call_command("reindex_memories", user=str(user.pk), stdout=out)
    assert "1 users, 2 memories examined, 1 changed" in out.getvalue()
    rows = Memory.objects.for_owner(user=user, mode=personal)
    assert rows.get(pk=mine.id).blind_tokens == cipher_for(user).memory_index(
        "Alice: I love hiking in the Alps."
    )
    assert rows.get(pk=unchanged.id).blind_tokens == unchanged.blind_tokens
    # The other user was not asked for.
    their_row = Memory.objects.for_owner(user=other_user, mode=theirs_mode).get(pk=theirs.id)
    assert their_row.blind_tokens == cipher_for(other_user).blind_tokens("Bob: I collect stamps.")
    # After: Alice speaks, and the query is embedded as "What does someone love?".
    assert found_by_speaker() != pytest.approx(before, abs=1e-4)

    out = StringIO()
    call_command("reindex_memories", stdout=out)
    assert "3 memories examined, 1 changed" in out.getvalue()
    out = StringIO()
    call_command("reindex_memories", stdout=out)
    assert "3 memories examined, 0 changed" in out.getvalue()


def test_reindex_of_an_unknown_user_is_a_command_error(db):
    for bad in ("not-a-uuid", "00000000-0000-4000-8000-000000000000"):
        with pytest.raises(CommandError, match="No user with id"):
            call_command("reindex_memories", user=bad)


def test_the_planner_knows_a_mode_follows_from_its_user(workspace):
    # Migration 0016: without statistics on (user_id, mode_id), 40 users of 25 memories each
    # estimate 1000 / 40 / 40 < 1 row for one user's mode (seen: 1), and the ranking joins its
    # parts in nested loops.
    owners = [factories.mode_of(factories.make_user(workspace=workspace)) for _ in range(40)]
    Memory.all_owners.bulk_create(
        Memory(user=mode.user, mode=mode, kind="fact", content_ciphertext=b"-", confidence="medium")
        for mode in owners
        for _ in range(25)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memoryhub_memory")
    mode = owners[0]
    plan = Memory.objects.for_owner(user=mode.user, mode=mode).recallable().explain(format="json")
    assert json.loads(plan)[0]["Plan"]["Plan Rows"] >= 10
