"""Maintenance jobs on fixed clocks: decay, retention, consolidation, compaction; each idempotent."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.utils import timezone

from memoryhub import tasks
from memoryhub.actors import Actor
from memoryhub.celery import app
from memoryhub.keyring import cipher_for
from memoryhub.models import (
    AuditEntry,
    Memory,
    MemoryKind,
    MemoryStatus,
    MemoryVersion,
    Message,
    Session,
)
from memoryhub.queries.memories import get_memory, list_memories
from memoryhub.queries.recall import search_memories
from memoryhub.services.compaction import ACTIVE_WINDOW, compact_long_threads, compact_session
from memoryhub.services.consolidate import consolidate_mode
from memoryhub.services.decay import decay_memories
from memoryhub.services.forget import ForgetSelector, forget
from memoryhub.services.retention import apply_retention
from memoryhub.services.summaries import entities_of
from tests.factories import make_memory
from tests.memoryhub.threads import link_sources, make_session, say, set_working_memory

NOW = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)


def _state(user):
    rows = Memory.objects.for_owner(user=user, mode=None).order_by("pk")
    return list(rows.values_list("pk", "decay_priority", "is_dormant", "status"))


# --- Decay ---------------------------------------------------------------------------------


def _aged(user, mode, embedder, content, *, days, importance="normal", accessed_days=None):
    with time_machine.travel(NOW - timedelta(days=days), tick=False):
        memory = make_memory(user, mode, content, embedder=embedder, importance=importance)
    if accessed_days is not None:
        Memory.all_owners.filter(pk=memory.pk).update(
            last_accessed_at=NOW - timedelta(days=accessed_days), access_count=1
        )
    return memory


def test_decay_lowers_old_unused_memories_and_spares_critical_ones(
    user, personal, embedder, settings
):
    settings.MEMORYHUB_DECAY_HALF_LIFE_DAYS = 90
    settings.MEMORYHUB_DORMANT_AFTER_DAYS = 365
    fresh = _aged(user, personal, embedder, "Fresh note", days=0)
    old_low = _aged(user, personal, embedder, "Old trivia", days=90, importance="low")
    old_normal = _aged(user, personal, embedder, "Old normal", days=90)
    old_high = _aged(user, personal, embedder, "Old important", days=360, importance="high")
    ancient = _aged(user, personal, embedder, "Ancient", days=400)
    critical = _aged(user, personal, embedder, "Blood type O-", days=4000, importance="critical")
    used = _aged(user, personal, embedder, "Used lately", days=400, accessed_days=1)
    report = decay_memories(now=NOW)
    priority = dict(
        Memory.objects.for_owner(user=user, mode=None).values_list("pk", "decay_priority")
    )
    dormant = set(
        Memory.objects.for_owner(user=user, mode=None)
        .filter(is_dormant=True)
        .values_list("pk", flat=True)
    )
    assert priority[fresh.pk] == 1.0
    assert priority[old_normal.pk] == pytest.approx(0.5)
    assert priority[old_low.pk] == pytest.approx(0.25)
    assert priority[old_high.pk] == pytest.approx(0.5)  # High decays four times slower.
    assert priority[critical.pk] == 1.0
    assert priority[used.pk] > 0.99  # Age counts from the last use.
    assert dormant == {ancient.pk}
    assert report.examined == 7
    assert report.dormant == 1


def test_decay_twice_gives_the_same_result(user, personal, embedder):
    _aged(user, personal, embedder, "Old trivia", days=200, importance="low")
    _aged(user, personal, embedder, "Old normal", days=500)
    first = decay_memories(now=NOW)
    after_first = _state(user)
    second = decay_memories(now=NOW)
    assert _state(user) == after_first
    assert first.changed == 2
    assert second.changed == 0


def test_a_dormant_memory_used_again_wakes_up(user, personal, embedder):
    memory = _aged(user, personal, embedder, "Old normal", days=500)
    decay_memories(now=NOW)
    Memory.all_owners.filter(pk=memory.pk).update(last_accessed_at=NOW)
    decay_memories(now=NOW + timedelta(days=1))
    memory.refresh_from_db()
    assert memory.is_dormant is False
    assert memory.decay_priority > 0.99


# --- Retention -----------------------------------------------------------------------------


def test_retention_deletes_exactly_what_is_older_than_the_limit(
    user, other_user, personal, work, embedder
):
    user.retention_days = 30
    user.save(update_fields=["retention_days"])
    with time_machine.travel(NOW - timedelta(days=31), tick=False):
        old = make_memory(user, personal, "Old holiday plan", embedder=embedder)
        old_work = make_memory(user, work, "Old sprint goal", embedder=embedder)
        session = make_session(user, personal)
        say(session, "Plans for the old holiday.", embedder=embedder)
        theirs = make_memory(other_user, other_user.modes.get(slug="personal"), "Bob's old")
    with time_machine.travel(NOW - timedelta(days=29), tick=False):
        recent = make_memory(user, personal, "Recent plan", embedder=embedder)
        say(session, "A recent message.", embedder=embedder)
    with time_machine.travel(NOW, tick=False):
        report = apply_retention(embedder=embedder)
    mine = set(Memory.objects.for_owner(user=user, mode=None).values_list("pk", flat=True))
    assert mine == {recent.pk}
    assert old.pk not in mine and old_work.pk not in mine
    assert Memory.objects.for_owner(user=other_user, mode=None).filter(pk=theirs.pk).exists()
    assert list(Message.objects.filter(session=session).values_list("seq", flat=True)) == [2]
    assert report.counts == {"fact": 2, "message": 1}
    assert report.users == 1


def test_the_workspace_default_applies_when_the_user_sets_no_retention(
    user, personal, embedder, workspace
):
    workspace.default_retention_days = 10
    workspace.save(update_fields=["default_retention_days"])
    with time_machine.travel(NOW - timedelta(days=11), tick=False):
        make_memory(user, personal, "Older than ten days", embedder=embedder)
    with time_machine.travel(NOW, tick=False):
        apply_retention(embedder=embedder)
    assert not Memory.objects.for_owner(user=user, mode=personal).exists()


def test_retention_twice_deletes_nothing_more_and_audits_once(user, personal, embedder):
    user.retention_days = 30
    user.save(update_fields=["retention_days"])
    with time_machine.travel(NOW - timedelta(days=40), tick=False):
        make_memory(user, personal, "Old", embedder=embedder)
    with time_machine.travel(NOW - timedelta(days=1), tick=False):
        make_memory(user, personal, "New", embedder=embedder)
    with time_machine.travel(NOW, tick=False):
        apply_retention(embedder=embedder)
        forgets = AuditEntry.objects.filter(action="memory.forget").count()
        second = apply_retention(embedder=embedder)
    assert second.counts == {}
    assert AuditEntry.objects.filter(action="memory.forget").count() == forgets == 1
    assert Memory.objects.for_owner(user=user, mode=personal).count() == 1


def test_retention_expires_working_memory_and_unconfirmed_candidates(
    user, personal, embedder, workspace, settings
):
    settings.MEMORYHUB_WORKING_MEMORY_TTL_DAYS = 2
    workspace.candidate_expiry_days = 90
    workspace.save(update_fields=["candidate_expiry_days"])
    with time_machine.travel(NOW - timedelta(days=91), tick=False):
        stale = make_memory(
            user, personal, "Maybe likes jazz", embedder=embedder, source="extracted"
        )
        confirmed = make_memory(user, personal, "Likes tea", embedder=embedder, confidence="high")
    with time_machine.travel(NOW - timedelta(days=3), tick=False):
        session = make_session(user, personal)
        set_working_memory(session, {"step": "choosing a gift"})
    with time_machine.travel(NOW - timedelta(days=10), tick=False):
        young = make_memory(
            user, personal, "Maybe likes rock", embedder=embedder, source="extracted"
        )
    with time_machine.travel(NOW, tick=False):
        report = apply_retention(embedder=embedder)
    left = set(Memory.objects.for_owner(user=user, mode=personal).values_list("pk", flat=True))
    assert left == {confirmed.pk, young.pk}
    assert stale.pk not in left
    assert report.candidates_expired == 1
    assert report.working_memory_expired == 1
    session.refresh_from_db()
    assert session.working_memory_ciphertext is None


# --- Consolidation -------------------------------------------------------------------------

# Realistic episodes of three threads of a life, plus facts told twice in different words.
EPISODES = [
    ("Booked flights to Tokyo for 12 April with Ken", "japan trip"),
    ("Reserved a ryokan in Kyoto for three nights, 15-18 April", "japan trip"),
    ("Bought a 7-day Japan Rail Pass for 50,000 yen", "japan trip"),
    ("Ken wants to visit the Fushimi Inari shrine at dawn", "japan trip"),
    ("Kitchen renovation quote from Dupont: 14,500 euros", "kitchen renovation"),
    ("Chose oak worktops and a white tiled splashback for the kitchen", "kitchen renovation"),
    ("The plumber Marco starts the kitchen work on 3 March", "kitchen renovation"),
    ("Ran 21 km in the Lyon half marathon in 1:52", "running"),
    ("Training plan: four runs a week, long run on Sundays", "running"),
    ("Bought new Asics running shoes, size 43", "running"),
    ("Dentist appointment moved to 9 May", ""),
]
FACTS = [
    "Lives in Lyon",
    "Lives in Lyon, France",
    "Daughter Emma is 7",
    "Daughter Emma is 8",
    "Prefers tea over coffee",
    "Prefers coffee over tea",
    "Works as a nurse at the Edouard Herriot hospital",
]


def _settled_data(user, mode, embedder):
    with time_machine.travel(NOW - timedelta(days=20), tick=False):
        for content, topic in EPISODES:
            make_memory(
                user,
                mode,
                content,
                kind="episode",
                embedder=embedder,
                payload={"topics": [topic]} if topic else None,
            )
        for content in FACTS:
            make_memory(user, mode, content, embedder=embedder)


def _findable(user, mode, embedder, sentence, actor):
    """Every word of the sentence is in some current memory, and search brings it up."""
    current = [
        item
        for item in list_memories(user=user, mode=mode, actor=actor, limit=500)
        if item.status == MemoryStatus.ACTIVE
    ]
    words = set(re.findall(r"\w+", sentence.casefold()))
    in_one = any(words <= set(re.findall(r"\w+", item.content.casefold())) for item in current)
    hits = search_memories(
        user=user, mode=mode, query=sentence, actor=actor, embedder=embedder, k=5
    )
    found = any(words <= set(re.findall(r"\w+", hit.content.casefold())) for hit in hits)
    return in_one and found


def test_consolidation_keeps_every_fact_findable(user, personal, embedder, system_actor):
    _settled_data(user, personal, embedder)
    report = consolidate_mode(user=user, mode=personal, embedder=embedder, now=NOW)
    assert report.themes == 3
    assert report.episodes == 10
    assert report.facts_merged == 1  # Only "Lives in Lyon" into "Lives in Lyon, France".
    for content, _ in EPISODES:
        assert _findable(user, personal, embedder, content, system_actor), content
    for content in FACTS:
        assert _findable(user, personal, embedder, content, system_actor), content


def test_a_theme_links_its_episodes_and_they_stay_readable(user, personal, embedder, system_actor):
    _settled_data(user, personal, embedder)
    consolidate_mode(user=user, mode=personal, embedder=embedder, now=NOW)
    themes = list_memories(user=user, mode=personal, actor=system_actor, kinds=["theme"])
    japan = next(t for t in themes if t.payload["topic"] == "japan trip")
    covered = japan.payload["covers"]
    assert len(covered) == 4
    linked = Memory.derived_from.through.objects.filter(from_memory_id=japan.id)
    assert {str(pk) for pk in linked.values_list("to_memory_id", flat=True)} == set(covered)
    originals = [
        get_memory(user=user, mode=personal, memory_id=pk, actor=system_actor) for pk in covered
    ]
    assert {o.status for o in originals} == {MemoryStatus.SUPERSEDED}
    assert "Booked flights to Tokyo for 12 April with Ken" in {o.content for o in originals}
    # The lone dentist episode has no theme and stays as it was.
    dentist = [
        item
        for item in list_memories(user=user, mode=personal, actor=system_actor, kinds=["episode"])
        if item.content.startswith("Dentist")
    ]
    assert dentist[0].status == MemoryStatus.ACTIVE


def test_consolidation_twice_changes_nothing_the_second_time(user, personal, embedder):
    _settled_data(user, personal, embedder)
    consolidate_mode(user=user, mode=personal, embedder=embedder, now=NOW)
    before = sorted(
        Memory.objects.for_owner(user=user, mode=personal).values_list(
            "pk", "status", "evidence_count"
        )
    )
    second = consolidate_mode(user=user, mode=personal, embedder=embedder, now=NOW)
    after = sorted(
        Memory.objects.for_owner(user=user, mode=personal).values_list(
            "pk", "status", "evidence_count"
        )
    )
    assert (second.themes, second.facts_merged) == (0, 0)
    assert after == before


def test_recent_episodes_wait_before_they_are_consolidated(user, personal, embedder):
    with time_machine.travel(NOW - timedelta(days=2), tick=False):
        for content, topic in EPISODES[:4]:
            make_memory(
                user,
                personal,
                content,
                kind="episode",
                embedder=embedder,
                payload={"topics": [topic]},
            )
    report = consolidate_mode(user=user, mode=personal, embedder=embedder, now=NOW)
    assert report.themes == 0


def test_a_merged_fact_survives_forgetting_one_of_its_sources(user, personal, embedder):
    with time_machine.travel(NOW - timedelta(days=3), tick=False):
        old_session = make_session(user, personal)
        older = say(old_session, "Yes, Lyon, in France.", embedder=embedder)
        short = make_memory(user, personal, "Lives in Lyon", embedder=embedder)
        long = make_memory(user, personal, "Lives in Lyon, France", embedder=embedder)
    with time_machine.travel(NOW - timedelta(minutes=10), tick=False):
        session = make_session(user, personal)
        recent = say(session, "I live in Lyon.", embedder=embedder)
    link_sources(short, [recent])
    link_sources(long, [older])
    consolidate_mode(user=user, mode=personal, embedder=embedder, now=NOW)
    short.refresh_from_db()
    long.refresh_from_db()
    assert short.status == MemoryStatus.SUPERSEDED
    assert long.evidence_count == 2
    assert set(long.source_messages.values_list("pk", flat=True)) == {older.pk, recent.pk}
    with time_machine.travel(NOW, tick=False):
        receipt = forget(
            user=user,
            mode=personal,
            selector=ForgetSelector(since=NOW - timedelta(hours=1)),
            actor=Actor.system("tests"),
            embedder=embedder,
        )
    assert receipt.memory_ids == (short.pk,)
    long.refresh_from_db()
    assert long.status == MemoryStatus.ACTIVE
    assert long.evidence_count == 1


def test_forgetting_an_episode_rewrites_its_theme_without_it(
    user, personal, embedder, system_actor
):
    _settled_data(user, personal, embedder)
    consolidate_mode(user=user, mode=personal, embedder=embedder, now=NOW)
    receipt = forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(topic="ryokan"),
        actor=system_actor,
        embedder=embedder,
    )
    assert receipt.counts == {"episode": 1}
    assert len(receipt.regenerated_ids) == 1
    theme = get_memory(
        user=user, mode=personal, memory_id=receipt.regenerated_ids[0], actor=system_actor
    )
    assert "ryokan" not in theme.content.casefold()
    assert "Tokyo" in theme.content
    assert len(theme.payload["covers"]) == 3
    assert not MemoryVersion.objects.filter(memory_id=theme.id).exists()


def test_forgetting_a_theme_brings_its_episodes_back(user, personal, embedder, system_actor):
    _settled_data(user, personal, embedder)
    consolidate_mode(user=user, mode=personal, embedder=embedder, now=NOW)
    themes = list_memories(user=user, mode=personal, actor=system_actor, kinds=["theme"])
    running = next(t for t in themes if t.payload["topic"] == "running")
    forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(memory_ids=(running.id,)),
        actor=system_actor,
        embedder=embedder,
    )
    for pk in running.payload["covers"]:
        item = get_memory(user=user, mode=personal, memory_id=pk, actor=system_actor)
        assert item.status == MemoryStatus.ACTIVE


# --- Compaction ----------------------------------------------------------------------------

THREAD = [
    "Hi! I'm planning my sister Chloé's wedding.",
    "It's on 14 September 2025 in Annecy.",
    "We expect about 120 guests.",
    "The caterer is Maison Perrin, they quoted 9,800 euros.",
    "I am a bit stressed about it honestly.",
    "The DJ is called Tom Ribeiro.",
    "We still need to choose the flowers.",
    "My budget for flowers is 1,200 euros.",
    "Sounds good, thanks.",
    "What about the cake?",
]


def _long_thread(user, mode, embedder):
    session = make_session(user, mode)
    for i, text in enumerate(THREAD):
        say(session, text, embedder=embedder, role="user")
        say(session, f"Noted, step {i + 1}.", embedder=embedder, role="assistant")
    return session


def test_compaction_keeps_names_numbers_and_dates(user, personal, embedder, system_actor):
    session = _long_thread(user, personal, embedder)
    folded = compact_session(session=session, embedder=embedder, keep_recent=4)
    assert folded == 16
    flags = list(session.messages.order_by("seq").values_list("is_compacted", flat=True))
    assert flags == [True] * 16 + [False] * 4
    summary = list_memories(
        user=user, mode=personal, actor=system_actor, kinds=[MemoryKind.SESSION_SUMMARY]
    )[0]
    for text in THREAD[:8]:
        for entity in entities_of(text):
            assert entity in summary.content, entity
    assert summary.session_id == session.pk
    assert summary.payload["through_seq"] == 16


def test_compaction_twice_changes_nothing(user, personal, embedder):
    session = _long_thread(user, personal, embedder)
    first = compact_long_threads(embedder=embedder, threshold=10, keep_recent=4)
    rows = list(Memory.objects.for_owner(user=user, mode=personal).values_list("pk", "updated_at"))
    second = compact_long_threads(embedder=embedder, threshold=10, keep_recent=4)
    assert (first.sessions, first.messages) == (1, 16)
    assert (second.sessions, second.messages) == (0, 0)
    assert (
        list(Memory.objects.for_owner(user=user, mode=personal).values_list("pk", "updated_at"))
        == rows
    )
    assert session.messages.filter(is_compacted=True).count() == 16


def test_the_hourly_run_looks_only_at_threads_with_a_recent_message(user, personal, embedder):
    recent = _long_thread(user, personal, embedder)
    quiet = _long_thread(user, personal, embedder)
    quiet.messages.update(created_at=timezone.now() - ACTIVE_WINDOW - timedelta(hours=1))
    hourly = compact_long_threads(
        embedder=embedder,
        threshold=10,
        keep_recent=4,
        active_since=timezone.now() - ACTIVE_WINDOW,
    )
    assert (hourly.sessions, hourly.messages) == (1, 16)
    assert recent.messages.filter(is_compacted=True).count() == 16
    assert not quiet.messages.filter(is_compacted=True).exists()
    # The full pass (the management command) still finds the quiet one.
    full = compact_long_threads(embedder=embedder, threshold=10, keep_recent=4)
    assert (full.sessions, full.messages) == (1, 16)
    assert quiet.messages.filter(is_compacted=True).count() == 16


def test_compaction_extends_the_same_summary_as_the_thread_grows(user, personal, embedder):
    session = _long_thread(user, personal, embedder)
    compact_session(session=session, embedder=embedder, keep_recent=4)
    say(session, "Also the photographer is Inès, booked for 600 euros.", embedder=embedder)
    say(session, "Great.", embedder=embedder)
    compact_session(session=session, embedder=embedder, keep_recent=2)
    summaries = Memory.objects.for_owner(user=user, mode=personal).filter(
        kind=MemoryKind.SESSION_SUMMARY
    )
    assert summaries.count() == 1
    assert session.messages.filter(is_compacted=False).count() == 2


def test_forgetting_a_compacted_message_rewrites_the_summary(
    user, personal, embedder, system_actor
):
    session = _long_thread(user, personal, embedder)
    compact_session(session=session, embedder=embedder, keep_recent=4)
    receipt = forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(topic="Perrin"),
        actor=system_actor,
        embedder=embedder,
    )
    assert receipt.counts == {"message": 1}
    summary = list_memories(
        user=user, mode=personal, actor=system_actor, kinds=[MemoryKind.SESSION_SUMMARY]
    )[0]
    assert "Perrin" not in summary.content
    assert "9,800" not in summary.content
    assert "Annecy" in summary.content


def test_an_incognito_thread_is_never_compacted(user, personal, embedder):
    session = Session.objects.create(user=user, mode=personal, is_incognito=True)
    cipher = cipher_for(user)
    for seq in range(1, 30):
        message = Message(session=session, seq=seq, role="user")
        message.content_ciphertext = cipher.encrypt(
            "Secret plan for Tuesday", table="message", row_id=message.id, field="content"
        )
        message.save()
    report = compact_long_threads(embedder=embedder, threshold=5, keep_recent=2)
    assert report.messages == 0
    assert not Memory.objects.for_owner(user=user, mode=personal).exists()


# --- Commands ------------------------------------------------------------------------------


def test_the_maintenance_commands_run_and_report(user, personal, embedder, capsys):
    _long_thread(user, personal, embedder)
    call_command("decay_memories")
    call_command("apply_retention")
    call_command("consolidate_memories")
    call_command("compact_threads", "--threshold", "10", "--keep-recent", "4")
    out = capsys.readouterr().out
    assert "Decay:" in out
    assert "Retention:" in out
    assert "Consolidation:" in out
    assert "Compaction: 16 message(s) of 1 session(s) folded." in out


def test_every_maintenance_job_is_scheduled_as_a_registered_task(settings):
    app.loader.import_default_modules()
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    jobs = {
        "memoryhub.decay_memories",
        "memoryhub.apply_retention",
        "memoryhub.consolidate_memories",
        "memoryhub.compact_threads",
    }
    assert jobs <= scheduled
    assert jobs | {"memoryhub.forget_data"} <= set(app.tasks)


def test_the_maintenance_tasks_run_their_services(user, personal, embedder):
    _long_thread(user, personal, embedder)
    with time_machine.travel(NOW, tick=False):
        assert tasks.compact_threads() == 0  # 20 messages: under the default threshold.
        assert tasks.decay_memories() >= 0
        assert tasks.apply_retention() == {}
        assert tasks.consolidate_memories() == 0
