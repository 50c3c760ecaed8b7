"""One unresolved journal entry per key, also when two writers race (services/journal.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import IntegrityError
from django.utils import timezone

from memoryhub.models import JournalEntry
from memoryhub.services.journal import add_journal_entry
from tests import factories
from tests.concurrency import held_open, run_into
from tests.migrating import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE_INDEX = [("memoryhub", "0023_user_link_proof")]


def test_two_concurrent_writers_of_one_key_leave_one_entry(workspace, user, personal, system_actor):
    agent, _ = factories.make_agent(workspace)

    def note(summary):
        return lambda: add_journal_entry(
            agent=agent,
            user=user,
            mode=personal,
            entry_type="alert",
            summary=summary,
            key="dentist",
            actor=system_actor,
        )

    # The first writer's row is inserted but not committed when the second one checks: the
    # second sees no entry with the key, and runs into the first at its insert.
    with (
        ThreadPoolExecutor(max_workers=1) as pool,
        held_open(note("Reminded about the dentist")) as commit_first,
    ):
        second = run_into(note("Reminded about the dentist, again"), pool)
        first_entry, first_created = commit_first()
        second_entry, second_created = second.result(timeout=30)
    assert (first_created, second_created) == (True, False)
    assert second_entry.pk == first_entry.pk
    assert list(JournalEntry.objects.values_list("pk", flat=True)) == [first_entry.pk]


def test_the_unique_index_applies_over_duplicates_and_keeps_them_resolved(workspace, user):
    agent, _ = factories.make_agent(workspace)
    mode = user.modes.get(slug="personal")
    now = timezone.now()
    old = migrate(BEFORE_INDEX)
    try:
        entries = old.get_model("memoryhub", "JournalEntry").objects

        def entry(key_hash, minutes_ago, resolved_at=None):
            return entries.create(
                agent_id=agent.pk,
                user_id=user.pk,
                mode_id=mode.pk,
                entry_type="alert",
                summary_ciphertext=b"stand-in",
                key_hash=key_hash,
                created_at=now - timedelta(minutes=minutes_ago),
                resolved_at=resolved_at,
            )

        oldest, older, newest = entry("a" * 64, 30), entry("a" * 64, 20), entry("a" * 64, 10)
        resolved_before = entry("a" * 64, 40, resolved_at=now - timedelta(minutes=35))
        other_key = entry("b" * 64, 25)
        without_key = [entry("", 5), entry("", 5)]
    finally:
        migrate_to_latest()

    resolved_at = dict(JournalEntry.objects.values_list("pk", "resolved_at"))
    assert len(resolved_at) == 7  # nothing deleted
    assert resolved_at[oldest.pk] == resolved_at[older.pk] == newest.created_at
    assert resolved_at[resolved_before.pk] == now - timedelta(minutes=35)
    assert [resolved_at[e.pk] for e in (newest, other_key, *without_key)] == [None] * 4
    with pytest.raises(IntegrityError):
        JournalEntry.objects.create(
            agent=agent,
            user=user,
            mode=mode,
            entry_type="alert",
            summary_ciphertext=b"x",
            key_hash="a" * 64,
        )
