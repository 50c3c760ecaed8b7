"""Forgetting: by period, ids, topic and query, cascading through provenance."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from memoryhub.audit.log import mode_pseudonym, subject_pseudonym
from memoryhub.errors import InvalidInputError
from memoryhub.models import AuditEntry, Memory, MemoryVersion, Message, Session
from memoryhub.queries.memories import list_memories, list_versions
from memoryhub.services.forget import ForgetSelector, forget
from memoryhub.services.memories import edit_memory
from tests.factories import make_memory
from tests.memoryhub.threads import link_sources, make_session, say, set_working_memory

NOW = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)


def _contents(user, mode, actor):
    return sorted(item.content for item in list_memories(user=user, mode=mode, actor=actor))


def test_forget_the_last_hour_keeps_older_memories(user, personal, embedder, system_actor):
    with time_machine.travel(NOW - timedelta(hours=3), tick=False):
        make_memory(user, personal, "Has a cat called Miso", embedder=embedder)
    with time_machine.travel(NOW - timedelta(minutes=20), tick=False):
        make_memory(user, personal, "Is planning a surprise party for Jo", embedder=embedder)
        make_memory(user, personal, "Party date is 2 May", kind="episode", embedder=embedder)
    with time_machine.travel(NOW, tick=False):
        receipt = forget(
            user=user,
            mode=personal,
            selector=ForgetSelector(since=NOW - timedelta(hours=1)),
            actor=system_actor,
            embedder=embedder,
        )
    assert _contents(user, personal, system_actor) == ["Has a cat called Miso"]
    assert receipt.counts == {"fact": 1, "episode": 1}
    assert receipt.deleted_at == NOW
    assert len(receipt.memory_ids) == 2


def test_forget_the_last_hour_removes_messages_and_working_memory_of_that_hour(
    user, personal, embedder, system_actor
):
    with time_machine.travel(NOW - timedelta(hours=2), tick=False):
        session = make_session(user, personal)
        say(session, "I live in Lyon.", embedder=embedder)
        set_working_memory(session, {"task": "drafting a birthday card"})
    with time_machine.travel(NOW - timedelta(minutes=10), tick=False):
        say(session, "My bank PIN hint is the dog's name.", embedder=embedder)
        other = make_session(user, personal)
        set_working_memory(other, {"task": "comparing flights to Oslo"})
    with time_machine.travel(NOW, tick=False):
        receipt = forget(
            user=user,
            mode=personal,
            selector=ForgetSelector(since=NOW - timedelta(hours=1)),
            actor=system_actor,
            embedder=embedder,
        )
    assert receipt.counts == {"message": 1, "working_memory": 1}
    assert list(Message.objects.filter(session=session).values_list("seq", flat=True)) == [1]
    other.refresh_from_db()
    session.refresh_from_db()
    assert other.working_memory_ciphertext is None
    assert session.working_memory_ciphertext is not None


def test_a_fact_from_a_forgotten_message_goes_with_it(user, personal, embedder, system_actor):
    with time_machine.travel(NOW - timedelta(minutes=30), tick=False):
        session = make_session(user, personal)
        message = say(session, "My sister Ana moved to Porto.", embedder=embedder)
        fact = make_memory(user, personal, "Sister Ana lives in Porto", embedder=embedder)
    # The fact was written before the window (say, by an earlier run), so only the
    # provenance link can take it away.
    Memory.all_owners.filter(pk=fact.pk).update(created_at=NOW - timedelta(days=3))
    link_sources(fact, [message])
    with time_machine.travel(NOW, tick=False):
        receipt = forget(
            user=user,
            mode=personal,
            selector=ForgetSelector(since=NOW - timedelta(hours=1)),
            actor=system_actor,
            embedder=embedder,
        )
    assert not Memory.objects.for_owner(user=user, mode=personal).filter(pk=fact.pk).exists()
    assert receipt.counts == {"message": 1, "fact": 1}
    assert fact.pk in receipt.memory_ids


def test_a_fact_with_surviving_evidence_stays(user, personal, embedder, system_actor):
    with time_machine.travel(NOW - timedelta(days=2), tick=False):
        old_session = make_session(user, personal)
        old_message = say(old_session, "I'm allergic to peanuts.", embedder=embedder)
        fact = make_memory(
            user, personal, "Allergic to peanuts", embedder=embedder, confidence="high"
        )
    with time_machine.travel(NOW - timedelta(minutes=5), tick=False):
        session = make_session(user, personal)
        new_message = say(session, "Peanuts make me really sick.", embedder=embedder)
    link_sources(fact, [old_message, new_message])
    Memory.all_owners.filter(pk=fact.pk).update(evidence_count=2)
    with time_machine.travel(NOW, tick=False):
        receipt = forget(
            user=user,
            mode=personal,
            selector=ForgetSelector(since=NOW - timedelta(hours=1)),
            actor=system_actor,
            embedder=embedder,
        )
    fact.refresh_from_db()
    assert receipt.counts == {"message": 1}
    assert fact.evidence_count == 1
    assert list(fact.source_messages.all()) == [old_message]


def test_a_session_summary_of_a_partly_forgotten_session_goes(
    user, personal, embedder, system_actor
):
    with time_machine.travel(NOW - timedelta(hours=3), tick=False):
        session = make_session(user, personal)
        say(session, "We talked about the garden.", embedder=embedder)
        summary = make_memory(
            user,
            personal,
            "Talked about the garden and the divorce",
            kind="session_summary",
            embedder=embedder,
        )
    Memory.all_owners.filter(pk=summary.pk).update(session=session)
    with time_machine.travel(NOW - timedelta(minutes=10), tick=False):
        say(session, "The divorce papers arrive Friday.", embedder=embedder)
    with time_machine.travel(NOW, tick=False):
        receipt = forget(
            user=user,
            mode=personal,
            selector=ForgetSelector(since=NOW - timedelta(hours=1)),
            actor=system_actor,
            embedder=embedder,
        )
    assert receipt.counts == {"message": 1, "session_summary": 1}
    assert _contents(user, personal, system_actor) == []


def test_an_edit_made_in_the_window_is_undone_and_leaves_no_version(
    user, personal, embedder, system_actor
):
    with time_machine.travel(NOW - timedelta(days=1), tick=False):
        memory = make_memory(user, personal, "Works at Acme", embedder=embedder)
    with time_machine.travel(NOW - timedelta(minutes=15), tick=False):
        edit_memory(
            user=user,
            mode=personal,
            memory_id=memory.pk,
            actor=system_actor,
            embedder=embedder,
            content="Works at Initech, secretly job hunting",
        )
    with time_machine.travel(NOW, tick=False):
        receipt = forget(
            user=user,
            mode=personal,
            selector=ForgetSelector(since=NOW - timedelta(hours=1)),
            actor=system_actor,
            embedder=embedder,
        )
    assert receipt.counts == {"version": 1}
    assert _contents(user, personal, system_actor) == ["Works at Acme"]
    assert list_versions(user=user, mode=personal, memory_id=memory.pk, actor=system_actor) == []


def test_forget_by_topic_reaches_memories_messages_and_history(
    user, personal, embedder, system_actor
):
    session = make_session(user, personal)
    say(session, "The divorce hearing is on 3 June.", embedder=embedder)
    say(session, "Also, buy milk.", embedder=embedder)
    make_memory(user, personal, "Divorce hearing on 3 June", kind="episode", embedder=embedder)
    make_memory(user, personal, "Needs milk", embedder=embedder)
    kept = make_memory(user, personal, "Lives in Lyon", embedder=embedder)
    edit_memory(
        user=user,
        mode=personal,
        memory_id=kept.pk,
        actor=system_actor,
        embedder=embedder,
        content="Lives in Lyon since the divorce",
    )
    edit_memory(
        user=user,
        mode=personal,
        memory_id=kept.pk,
        actor=system_actor,
        embedder=embedder,
        content="Lives in Lyon",
    )
    tagged = make_memory(
        user, personal, "Lawyer meeting moved", embedder=embedder, payload={"topic": "divorce"}
    )
    receipt = forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(topic="the divorce"),
        actor=system_actor,
        embedder=embedder,
    )
    assert _contents(user, personal, system_actor) == ["Lives in Lyon", "Needs milk"]
    assert tagged.pk in receipt.memory_ids
    assert receipt.counts == {"episode": 1, "fact": 1, "message": 1, "version": 1}
    history = list_versions(user=user, mode=personal, memory_id=kept.pk, actor=system_actor)
    assert [v.content for v in history] == ["Lives in Lyon"]


def test_forget_by_query_removes_semantically_close_memories(
    user, personal, embedder, system_actor
):
    make_memory(user, personal, "Takes insulin for type 1 diabetes", embedder=embedder)
    make_memory(user, personal, "Prefers window seats on trains", embedder=embedder)
    receipt = forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(query="my diabetes and insulin"),
        actor=system_actor,
        embedder=embedder,
    )
    assert receipt.counts == {"fact": 1}
    assert _contents(user, personal, system_actor) == ["Prefers window seats on trains"]


def test_forget_by_ids_never_touches_another_user_or_mode(
    user, other_user, personal, work, embedder, system_actor
):
    mine = make_memory(user, personal, "Mine", embedder=embedder)
    my_work = make_memory(user, work, "Work item", embedder=embedder)
    theirs = make_memory(other_user, other_user.modes.get(slug="personal"), "Theirs")
    receipt = forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(memory_ids=(mine.pk, my_work.pk, theirs.pk)),
        actor=system_actor,
    )
    assert receipt.memory_ids == (mine.pk,)
    assert Memory.objects.for_owner(user=user, mode=work).filter(pk=my_work.pk).exists()
    assert Memory.objects.for_owner(user=other_user, mode=None).filter(pk=theirs.pk).exists()


def test_forget_writes_one_audit_row_with_the_ids(user, personal, embedder, system_actor):
    memory = make_memory(user, personal, "Something", embedder=embedder)
    before = AuditEntry.objects.count()
    forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(memory_ids=[str(memory.pk)]),
        actor=system_actor,
    )
    assert AuditEntry.objects.count() == before + 1
    entry = AuditEntry.objects.order_by("-id").first()
    assert entry.action == "memory.forget"
    assert entry.object_ids == [str(memory.pk)]
    assert entry.subject == subject_pseudonym(user.pk)
    assert entry.mode == mode_pseudonym(subject_pseudonym(user.pk), "personal")


@pytest.mark.parametrize(
    "selector",
    [
        ForgetSelector(),
        ForgetSelector(memory_ids=("not-a-uuid",)),
        ForgetSelector(since=datetime(2025, 1, 1)),  # noqa: DTZ001 - naive on purpose.
        ForgetSelector(since=NOW, until=NOW - timedelta(hours=1)),
        ForgetSelector(topic="   "),
        ForgetSelector(query=""),
    ],
)
def test_a_malformed_selector_is_refused(user, personal, system_actor, selector):
    with pytest.raises(InvalidInputError):
        forget(user=user, mode=personal, selector=selector, actor=system_actor)


def test_a_forgotten_memory_leaves_no_version_behind(user, personal, embedder, system_actor):
    memory = make_memory(user, personal, "Old phone number 0612", embedder=embedder)
    edit_memory(
        user=user,
        mode=personal,
        memory_id=memory.pk,
        actor=system_actor,
        embedder=embedder,
        content="New phone number 0699",
    )
    receipt = forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(memory_ids=(memory.pk,)),
        actor=system_actor,
    )
    assert receipt.counts == {"fact": 1, "version": 1}
    assert not MemoryVersion.objects.filter(memory_id=memory.pk).exists()
    assert not Session.objects.filter(user=user).exists()


def test_a_surviving_fact_loses_the_quote_of_a_forgotten_message(
    user, personal, embedder, system_actor
):
    with time_machine.travel(NOW - timedelta(days=2), tick=False):
        older = say(make_session(user, personal), "I live in Lyon.", embedder=embedder)
    with time_machine.travel(NOW - timedelta(minutes=5), tick=False):
        recent = say(
            make_session(user, personal), "Since the divorce I live in Lyon.", embedder=embedder
        )
    with time_machine.travel(NOW - timedelta(days=2), tick=False):
        fact = make_memory(
            user,
            personal,
            "Lives in Lyon",
            embedder=embedder,
            payload={"quote": "Since the divorce I live in Lyon.", "message_ids": [str(recent.pk)]},
        )
    link_sources(fact, [older, recent])
    with time_machine.travel(NOW, tick=False):
        forget(
            user=user,
            mode=personal,
            selector=ForgetSelector(since=NOW - timedelta(hours=1)),
            actor=system_actor,
            embedder=embedder,
        )
    item = list_memories(user=user, mode=personal, actor=system_actor)[0]
    assert item.content == "Lives in Lyon"
    assert "quote" not in item.payload
    assert item.payload["message_ids"] == []
