"""Quotas (services/quotas.py): memories and bytes per user and workspace, answers and learning
candidates per day; the usage rows the memory table's triggers keep (migration 0027)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection, connections, transaction
from django.db.models import Sum

from memoryhub.actors import Actor
from memoryhub.errors import QuotaExceededError
from memoryhub.knowledge.answers import propose_knowledge_candidate, report_answer
from memoryhub.models import (
    ActorType,
    AnswerRecord,
    Channel,
    ExtractionRun,
    LearningCandidate,
    MemoryUsage,
    MemoryVersion,
)
from memoryhub.services.forget import delete_account
from memoryhub.services.ingest import run_extraction
from memoryhub.services.journal import add_journal_entry
from memoryhub.services.memories import NewMemory, delete_memories, edit_memory, remember_many
from memoryhub.services.quotas import lock_usage
from memoryhub.services.sessions import add_message, end_session, start_session
from memoryhub.usage import start_of_day, usage_lines, user_usage, workspace_usage
from tests import factories

AGENT = Actor(ActorType.AGENT, "agent-1", Channel.API, label="assistant")
LOW = {"retrieval": 0.1, "policy": 1.0, "completeness": 0.8, "memory": 0.3}
HIGH = {"retrieval": 1.0, "policy": 1.0, "completeness": 1.0, "memory": 1.0}


def _remember(user, mode, embedder, *texts):
    items = [NewMemory(kind="fact", content=text) for text in texts]
    return remember_many(user=user, mode=mode, items=items, actor=AGENT, embedder=embedder)


def _stored_bytes(user):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(sum(octet_length(content_ciphertext)"
            " + coalesce(octet_length(payload_ciphertext), 0)), 0)"
            " FROM memoryhub_memory WHERE user_id = %s",
            [user.pk],
        )
        return tuple(cursor.fetchone())


def test_the_usage_row_follows_every_insert_edit_and_delete(user, personal, work, embedder):
    rows = _remember(user, personal, embedder, "Likes tea.", "Works at Acme.")
    _remember(user, work, embedder, "Ships on Fridays.")
    edit_memory(
        user=user,
        mode=personal,
        memory_id=rows[0].id,
        actor=AGENT,
        embedder=embedder,
        content="Likes green tea from Kyoto, brewed at seventy degrees.",
        payload={"note": "from a long conversation"},
    )
    usage = user_usage(user.pk)
    assert (usage.memories, usage.stored_bytes) == _stored_bytes(user)
    assert usage.memories == 3

    delete_memories(user=user, mode=personal, memory_ids=[rows[1].id], actor=AGENT)

    usage = user_usage(user.pk)
    assert (usage.memories, usage.stored_bytes) == _stored_bytes(user)
    assert usage.memories == 2


def test_a_write_past_the_user_memory_quota_is_refused_and_stores_nothing(
    user, personal, other_user, embedder, settings
):
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER = 3
    _remember(user, personal, embedder, "One.", "Two.")

    with pytest.raises(QuotaExceededError) as refused:
        _remember(user, personal, embedder, "Three.", "Four.")

    assert refused.value.quota == "MEMORYHUB_QUOTA_MEMORIES_PER_USER"
    assert refused.value.code == "quota_exceeded"
    assert user_usage(user.pk).memories == 2
    _remember(user, personal, embedder, "Three.")  # Up to the limit is fine.
    # Another user of the workspace has a quota of their own.
    _remember(other_user, factories.mode_of(other_user), embedder, "A.", "B.", "C.")


def test_the_byte_quota_counts_ciphertext_and_refuses_a_longer_edit(
    user, personal, embedder, settings
):
    (row,) = _remember(user, personal, embedder, "Short.")
    settings.MEMORYHUB_QUOTA_BYTES_PER_USER = user_usage(user.pk).stored_bytes + 40

    with pytest.raises(QuotaExceededError) as refused:
        edit_memory(
            user=user,
            mode=personal,
            memory_id=row.id,
            actor=AGENT,
            embedder=embedder,
            content="Much longer than the byte quota allows for this one user.",
        )

    assert refused.value.quota == "MEMORYHUB_QUOTA_BYTES_PER_USER"
    assert (
        MemoryVersion.objects.filter(memory_id=row.id).count() == 0
    )  # The edit rolled back whole, its version too.
    edit_memory(
        user=user, mode=personal, memory_id=row.id, actor=AGENT, embedder=embedder, content="Tiny."
    )


def test_the_workspace_quotas_count_every_user_of_the_workspace_only(
    user, personal, other_user, embedder, settings
):
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_WORKSPACE = 3
    _remember(user, personal, embedder, "One.", "Two.")
    _remember(other_user, factories.mode_of(other_user), embedder, "Three.")

    with pytest.raises(QuotaExceededError) as refused:
        _remember(user, personal, embedder, "Four.")

    assert refused.value.quota == "MEMORYHUB_QUOTA_MEMORIES_PER_WORKSPACE"
    assert "alice" not in str(refused.value) and "bob" not in str(refused.value)
    assert workspace_usage(user.workspace_id).memories == 3
    stranger = factories.make_user()  # Another workspace is not affected.
    _remember(stranger, factories.mode_of(stranger), embedder, "Elsewhere.")


def test_the_usage_sums_and_the_locked_row_read_by_hand_written_sql_are_the_orms(
    user, personal, other_user, embedder
):
    _remember(user, personal, embedder, "One.", "Two.")
    _remember(other_user, factories.mode_of(other_user), embedder, "Three.")
    stranger = factories.make_user()
    _remember(stranger, factories.mode_of(stranger), embedder, "Elsewhere.")
    # The ORM queries replaced with hand-written SQL (issue 34): the oracle.
    totals = MemoryUsage.objects.filter(user__workspace_id=user.workspace_id).aggregate(
        memories=Sum("memory_count"), stored_bytes=Sum("stored_bytes")
    )
    found = workspace_usage(user.workspace_id)
    assert (found.memories, found.stored_bytes) == (totals["memories"], totals["stored_bytes"])
    assert found.memories == 3
    assert workspace_usage(factories.make_workspace().pk) == workspace_usage(-1)
    assert workspace_usage(-1).memories == workspace_usage(-1).stored_bytes == 0
    with transaction.atomic():
        locked = lock_usage(user.pk)
        expected = MemoryUsage.objects.select_for_update().get(user_id=user.pk)
    assert (locked.user_id, locked.memory_count, locked.stored_bytes) == (
        expected.user_id,
        expected.memory_count,
        expected.stored_bytes,
    )
    newcomer = factories.make_user()
    with transaction.atomic():
        assert lock_usage(newcomer.pk).memory_count == 0  # Made on first use.


def test_the_workspace_byte_quota(user, personal, embedder, settings):
    _remember(user, personal, embedder, "One.")
    settings.MEMORYHUB_QUOTA_BYTES_PER_WORKSPACE = workspace_usage(user.workspace_id).stored_bytes

    with pytest.raises(QuotaExceededError) as refused:
        _remember(user, personal, embedder, "Two.")

    assert refused.value.quota == "MEMORYHUB_QUOTA_BYTES_PER_WORKSPACE"


def test_a_quota_of_zero_is_off(user, personal, embedder, settings):
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER = 0
    settings.MEMORYHUB_QUOTA_BYTES_PER_USER = 0
    _remember(user, personal, embedder, *(f"Fact {n}." for n in range(5)))
    assert user_usage(user.pk).memories == 5


def test_forgetting_frees_the_quota_and_a_deleted_user_leaves_no_usage_row(
    user, personal, embedder, settings
):
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER = 1
    (row,) = _remember(user, personal, embedder, "One.")
    delete_memories(user=user, mode=personal, memory_ids=[row.id], actor=AGENT)
    _remember(user, personal, embedder, "Another.")

    delete_account(user=user, actor=Actor.system("tests"))

    assert user_usage(user.pk).memories == 0


def _session_saying(user, mode, embedder, *lines):
    session = start_session(user=user, mode=mode, actor=AGENT)
    for line in lines:
        add_message(session=session, role="user", content=line, actor=AGENT, embedder=embedder)
    return end_session(session=session, actor=AGENT)


def test_extraction_at_the_quota_skips_and_records_what_it_could_not_store(
    user, personal, embedder, settings
):
    _remember(user, personal, embedder, "The user likes tea.")
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER = 1
    session = _session_saying(user, personal, embedder, "I work at Acme.", "I prefer trains.")

    run = run_extraction(session_id=session.pk, embedder=embedder)

    assert run.status == ExtractionRun.Status.DONE  # Finished, so never retried into the quota.
    assert run.items_written == 0
    assert run.items_over_quota >= 2  # The items and the session summary.
    assert user_usage(user.pk).memories == 1


def test_answers_past_the_daily_quota_are_refused_until_the_next_day(
    user, personal, other_user, embedder, settings
):
    settings.MEMORYHUB_QUOTA_ANSWERS_PER_USER_PER_DAY = 2

    def report(owner, mode):
        return report_answer(
            user=owner,
            mode=mode,
            question="What do I like?",
            answer="Tea.",
            signals=HIGH,
            actor=AGENT,
            embedder=embedder,
        )

    with time_machine.travel(datetime(2026, 5, 4, 23, 0, tzinfo=UTC), tick=False):
        report(user, personal)
        report(user, personal)
        with pytest.raises(QuotaExceededError) as refused:
            report(user, personal)
        report(other_user, factories.mode_of(other_user))  # A quota per user.
    assert refused.value.quota == "MEMORYHUB_QUOTA_ANSWERS_PER_USER_PER_DAY"
    assert AnswerRecord.objects.filter(user=user).count() == 2
    with time_machine.travel(datetime(2026, 5, 5, 0, 1, tzinfo=UTC), tick=False):
        report(user, personal)
        assert [line.used for line in usage_lines(user)][2] == 1


def test_candidates_past_the_workspace_daily_quota(user, personal, other_user, embedder, settings):
    settings.MEMORYHUB_QUOTA_CANDIDATES_PER_WORKSPACE_PER_DAY = 1
    propose_knowledge_candidate(
        user=user, mode=personal, statement="Refunds take 5 days.", actor=AGENT, embedder=embedder
    )

    with pytest.raises(QuotaExceededError) as refused:
        propose_knowledge_candidate(
            user=other_user,
            mode=factories.mode_of(other_user),
            statement="Shipping is free above 50 euros.",
            actor=AGENT,
            embedder=embedder,
        )
    # A weak answer is still recorded; only its capture for review is skipped.
    weak = report_answer(
        user=user,
        mode=personal,
        question="How long do refunds take?",
        answer="About a month.",
        signals=LOW,
        actor=AGENT,
        embedder=embedder,
    )

    assert refused.value.quota == "MEMORYHUB_QUOTA_CANDIDATES_PER_WORKSPACE_PER_DAY"
    assert weak.candidate is None and AnswerRecord.objects.filter(pk=weak.answer.pk).exists()
    assert LearningCandidate.objects.filter(workspace=user.workspace).count() == 1
    stranger = factories.make_user()  # Another workspace has its own quota.
    propose_knowledge_candidate(
        user=stranger,
        mode=factories.mode_of(stranger),
        statement="Support opens at 9.",
        actor=AGENT,
        embedder=embedder,
    )


@pytest.mark.django_db(transaction=True)
def test_concurrent_writes_of_one_user_never_pass_the_quota_together(embedder, settings):
    user = factories.make_user()
    mode = factories.mode_of(user)
    _remember(user, mode, embedder, "One.")
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER = 2
    start = threading.Barrier(4, timeout=30)
    outcomes: list[str] = []

    def write(n: int) -> None:
        try:
            start.wait()
            _remember(user, mode, embedder, f"Concurrent {n}.")
            outcomes.append("stored")
        except QuotaExceededError:
            outcomes.append("refused")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(outcomes) == ["refused", "refused", "refused", "stored"]
    assert user_usage(user.pk).memories == 2


def test_usage_lines_show_the_user_their_own_use_and_limits(user, personal, embedder, settings):
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER = 10
    _remember(user, personal, embedder, "One.", "Two.")
    memories, stored, _answers = usage_lines(user)
    assert (memories.used, memories.limit, memories.percent) == (2, 10, 20)
    assert stored.is_bytes and stored.used == user_usage(user.pk).stored_bytes


def test_a_day_starts_at_midnight_utc():
    moment = datetime(2026, 5, 4, 13, 14, 15, tzinfo=UTC)
    assert start_of_day(moment) == moment - timedelta(hours=13, minutes=14, seconds=15)


def test_journal_notes_count_in_stored_bytes_and_stop_at_the_byte_quota(
    user, personal, workspace, settings
):
    agent, _ = factories.make_agent(workspace, "journaling")

    def note(summary):
        return add_journal_entry(
            agent=agent, user=user, mode=personal, entry_type="alert", summary=summary, actor=AGENT
        )

    entry, _ = note("Reminded the user about the dentist.")
    assert user_usage(user.pk).stored_bytes == len(entry.summary_ciphertext)
    settings.MEMORYHUB_QUOTA_BYTES_PER_USER = user_usage(user.pk).stored_bytes + 10

    with pytest.raises(QuotaExceededError):
        note("Suggested booking the train to Lyon for next week.")

    entry.delete()
    assert user_usage(user.pk).stored_bytes == 0
