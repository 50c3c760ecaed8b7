"""The access audit: every read writes a row; rows chain by HMAC and cannot be changed."""

from __future__ import annotations

import json
import threading
import uuid
from contextlib import contextmanager

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import DatabaseError, OperationalError, connection, transaction
from django.utils import timezone

from memoryhub import crypto
from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import (
    GENESIS_HASH,
    ChainHead,
    mode_pseudonym,
    record_access,
    subject_pseudonym,
    verify_chain,
)
from memoryhub.models import ActorType, AuditEntry, Channel
from memoryhub.queries.memories import get_memory, list_memories
from tests.factories import make_memory

# Distinct actions, so rows written in a loop differ (their hashes cover the action).
SOME_ACTIONS = list(AuditAction)[:5]


def test_reading_a_memory_writes_an_audit_row(user, personal, embedder):
    memory = make_memory(user, personal, "audited fact", embedder=embedder)
    actor = Actor(ActorType.AGENT, "agent-1", Channel.API, client_ip="127.0.0.1")
    get_memory(user=user, mode=personal, memory_id=memory.id, actor=actor)
    entry = AuditEntry.objects.filter(action="memory.read").get()
    assert entry.actor_type == "agent"
    assert entry.actor_id == "agent-1"
    assert entry.channel == "api"
    assert entry.mode == mode_pseudonym(subject_pseudonym(user.pk), "personal")
    assert entry.object_ids == [str(memory.id)]
    assert entry.client_ip == "127.0.0.1"
    assert entry.subject == subject_pseudonym(user.pk)
    assert str(user.pk) not in entry.subject  # pseudonymous, not the raw id


def test_listing_audits_the_ids_it_returned(user, personal, embedder, system_actor):
    a = make_memory(user, personal, "one", embedder=embedder)
    b = make_memory(user, personal, "two", embedder=embedder)
    list_memories(user=user, mode=personal, actor=system_actor)
    entry = AuditEntry.objects.filter(action="memory.list").get()
    assert set(entry.object_ids) == {str(a.id), str(b.id)}


def test_an_audit_row_keeps_every_object_id_however_many(db, system_actor):
    ids = [str(uuid.uuid4()) for _ in range(2500)]
    entry = record_access(
        actor=system_actor, subject_user_id=None, action=AuditAction.MEMORY_LIST, object_ids=ids
    )
    assert AuditEntry.objects.get(pk=entry.pk).object_ids == ids
    assert verify_chain().is_intact


def test_audit_rows_cannot_be_updated_or_deleted_through_the_orm(db, system_actor):
    entry = record_access(actor=system_actor, subject_user_id=None, action=AuditAction.MEMORY_READ)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.filter(pk=entry.pk).update(action="tampered")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.filter(pk=entry.pk).delete()
    entry.action = "tampered"
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        entry.save()
    assert AuditEntry.objects.get(pk=entry.pk).action == "memory.read"


def test_the_audit_table_cannot_be_truncated(db):
    # As on any database but the suite's own, whose flush may truncate (tests/conftest.py).
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL memoryhub.audit_truncate_allowed = 'off'")
        with pytest.raises(DatabaseError, match="TRUNCATE is refused"), transaction.atomic():
            cursor.execute("TRUNCATE memoryhub_auditentry")
        with pytest.raises(DatabaseError, match="TRUNCATE is refused"), transaction.atomic():
            cursor.execute("TRUNCATE memoryhub_auditentry, memoryhub_workspace CASCADE")


def test_manage_py_flush_cannot_wipe_the_audit_log(db, system_actor):
    entry = record_access(actor=system_actor, subject_user_id=None, action=AuditAction.MEMORY_READ)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL memoryhub.audit_truncate_allowed = 'off'")
    with pytest.raises(CommandError, match="couldn't be flushed"):
        call_command("flush", interactive=False, verbosity=0)
    assert AuditEntry.objects.filter(pk=entry.pk).exists()


def _with_trigger_disabled(sql: str, params: list[object]) -> None:
    """Simulate an attacker with raw database access, who can bypass the trigger."""
    with connection.cursor() as cursor:
        cursor.execute(
            "ALTER TABLE memoryhub_auditentry DISABLE TRIGGER memoryhub_audit_append_only"
        )
        cursor.execute(sql, params)
        cursor.execute(
            "ALTER TABLE memoryhub_auditentry ENABLE TRIGGER memoryhub_audit_append_only"
        )


def test_verify_audit_detects_an_edited_row(db, system_actor, capsys):
    entries = [
        record_access(actor=system_actor, subject_user_id=None, action=SOME_ACTIONS[i])
        for i in range(5)
    ]
    assert verify_chain().is_intact
    _with_trigger_disabled(
        "UPDATE memoryhub_auditentry SET action = 'x' WHERE id = %s", [entries[2].pk]
    )
    report = verify_chain()
    assert report.first_broken_id == entries[2].pk
    with pytest.raises(SystemExit) as exit_info:
        call_command("verify_audit")
    assert exit_info.value.code == 1
    assert str(entries[2].pk) in capsys.readouterr().out


def test_verify_audit_detects_a_deleted_row(db, system_actor):
    entries = [
        record_access(actor=system_actor, subject_user_id=None, action=SOME_ACTIONS[i])
        for i in range(5)
    ]
    _with_trigger_disabled("DELETE FROM memoryhub_auditentry WHERE id = %s", [entries[1].pk])
    assert verify_chain().first_broken_id == entries[2].pk


def test_verify_audit_exits_zero_on_a_whole_chain(db, system_actor, capsys):
    for i in range(3):
        record_access(actor=system_actor, subject_user_id=None, action=SOME_ACTIONS[i])
    call_command("verify_audit")
    assert "intact" in capsys.readouterr().out


def _head(capsys):
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if line.startswith("Chain head: ")]
    return line.removeprefix("Chain head: ")


def test_verify_audit_prints_the_head_and_finds_it_again_later(db, system_actor, capsys):
    for i in range(3):
        record_access(actor=system_actor, subject_user_id=None, action=SOME_ACTIONS[i])
    call_command("verify_audit")
    head = _head(capsys)
    record_access(actor=system_actor, subject_user_id=None, action=AuditAction.AUDIT_EXPORT)
    call_command("verify_audit", expect_head=head)
    out = capsys.readouterr().out
    assert "intact" in out
    assert "found with its hash" in out


def test_an_anchor_detects_rows_cut_off_the_end_of_the_log(db, system_actor, capsys):
    entries = [
        record_access(actor=system_actor, subject_user_id=None, action=SOME_ACTIONS[i])
        for i in range(5)
    ]
    call_command("verify_audit")
    head = _head(capsys)
    # The last two rows go: the chain that is left is whole, only the anchor can tell.
    _with_trigger_disabled("DELETE FROM memoryhub_auditentry WHERE id >= %s", [entries[3].pk])
    assert verify_chain().is_intact
    with pytest.raises(SystemExit) as exit_info:
        call_command("verify_audit", expect_head=head)
    assert exit_info.value.code == 1
    assert "removed from the end" in capsys.readouterr().out


def test_an_anchor_detects_a_rewritten_chain(db, system_actor, capsys):
    entries = [
        record_access(actor=system_actor, subject_user_id=None, action=SOME_ACTIONS[i])
        for i in range(3)
    ]
    forged = f"{entries[-1].pk}:{'0' * 64}"
    with pytest.raises(SystemExit):
        call_command("verify_audit", expect_head=forged)
    assert "hash differs" in capsys.readouterr().out


@pytest.mark.parametrize("anchor", ["", "12", "x:" + "0" * 64, "12:abc", "12:" + "g" * 64])
def test_verify_audit_refuses_a_malformed_anchor(db, anchor):
    with pytest.raises(CommandError, match="an anchor is"):
        call_command("verify_audit", expect_head=anchor or " ")


# --- One chain per user ------------------------------------------------------------------


def _record(subject_user_id, action=AuditAction.MEMORY_READ):
    return record_access(actor=Actor.system("t"), subject_user_id=subject_user_id, action=action)


def test_each_users_rows_chain_to_that_users_previous_row(db):
    alice, bob = uuid.uuid4(), uuid.uuid4()
    a1, b1, s1, a2, b2, a3 = (_record(u) for u in (alice, bob, None, alice, bob, alice))
    assert (a1.chain, b1.chain, s1.chain) == (
        subject_pseudonym(alice),
        subject_pseudonym(bob),
        "system",
    )
    assert a1.prev_hash == b1.prev_hash == s1.prev_hash == GENESIS_HASH
    assert (a2.prev_hash, a3.prev_hash) == (a1.row_hash, a2.row_hash)
    assert b2.prev_hash == b1.row_hash
    report = verify_chain()
    assert report.is_intact
    assert (report.rows_checked, report.chains_checked) == (6, 3)
    assert report.head is not None
    assert report.head.row_id == a3.pk


def _hold_an_audited_transaction(subject_user_id, recorded, release, outcome):
    """In its own connection: audit one row, then keep the transaction open until released."""
    try:
        with transaction.atomic():
            outcome["entry"] = _record(subject_user_id, AuditAction.AUDIT_VIEW)
            recorded.set()
            if not release.wait(timeout=30):
                raise TimeoutError("the test never released the transaction")
    except Exception as error:  # the test's thread asserts on it
        outcome["error"] = error
    finally:
        recorded.set()
        connection.close()


@pytest.fixture
def held_audit(transactional_db):
    """Start a thread holding an open audited transaction for a subject; commit it on release.

    It needs committed data (transactional_db): the thread has its own connection.
    """
    started = []

    def hold(subject_user_id):
        recorded, release, outcome = threading.Event(), threading.Event(), {}
        thread = threading.Thread(
            target=_hold_an_audited_transaction,
            args=(subject_user_id, recorded, release, outcome),
        )
        thread.start()
        started.append((thread, release))
        assert recorded.wait(timeout=30)
        assert "error" not in outcome, outcome.get("error")

        def commit():
            release.set()
            thread.join(timeout=30)
            assert not thread.is_alive()
            assert "error" not in outcome, outcome.get("error")
            return outcome["entry"]

        return commit

    yield hold
    for thread, release in started:  # also on failure: no thread outlives its test
        release.set()
        thread.join(timeout=30)


@contextmanager
def _lock_timeout(value):
    """A transaction whose lock waits end with an error: a regression fails, it does not hang."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [value])
        yield


@pytest.mark.django_db(transaction=True)
def test_an_audited_transaction_does_not_make_another_user_wait(held_audit):
    alice, bob = uuid.uuid4(), uuid.uuid4()
    commit_alice = held_audit(alice)
    with _lock_timeout("2s"):
        bobs = _record(bob)
    alices = commit_alice()
    assert bobs.pk > alices.pk  # Bob's row committed first although it came second
    assert verify_chain().is_intact


@pytest.mark.django_db(transaction=True)
def test_an_audited_transaction_makes_the_same_user_wait(held_audit):
    alice = uuid.uuid4()
    commit_alice = held_audit(alice)
    with pytest.raises(OperationalError, match="lock timeout"), _lock_timeout("500ms"):
        _record(alice)
    commit_alice()
    second = _record(alice)
    assert second.prev_hash == AuditEntry.objects.get(action="audit.view").row_hash
    assert verify_chain().is_intact


@pytest.mark.django_db(transaction=True)
def test_the_head_waits_for_an_audited_transaction_in_flight(held_audit):
    alice, bob = uuid.uuid4(), uuid.uuid4()
    commit_alice = held_audit(alice)
    bobs = _record(bob)
    # Printed now, a head would leave out Alice's lower id, and differ once she commits.
    with pytest.raises(OperationalError, match="lock timeout"), _lock_timeout("500ms"):
        verify_chain()
    commit_alice()
    head = verify_chain().head
    assert head is not None
    assert head.row_id == bobs.pk
    _record(alice)
    assert verify_chain(anchor=head).is_intact


# --- Tampering, chain by chain -------------------------------------------------------------


def test_an_edited_row_in_one_users_chain_is_found(db):
    alice, bob = uuid.uuid4(), uuid.uuid4()
    rows = [_record(u) for u in (alice, bob, alice, bob)]
    _with_trigger_disabled(
        "UPDATE memoryhub_auditentry SET object_ids = '{x}' WHERE id = %s", [rows[2].pk]
    )
    assert verify_chain().first_broken_id == rows[2].pk


def test_a_row_moved_to_another_chain_is_found(db):
    alice, bob = uuid.uuid4(), uuid.uuid4()
    _record(alice)
    bobs = _record(bob)
    # A chain of its own, so every link still matches: only the hash can tell.
    _with_trigger_disabled(
        "UPDATE memoryhub_auditentry SET chain = %s WHERE id = %s",
        [subject_pseudonym(uuid.uuid4()), bobs.pk],
    )
    assert verify_chain().first_broken_id == bobs.pk


def test_a_row_deleted_in_the_middle_of_one_chain_breaks_that_chain(db):
    alice, bob = uuid.uuid4(), uuid.uuid4()
    _a1, _b1, a2, _b2, a3, _b3 = (_record(u) for u in (alice, bob) * 3)
    _with_trigger_disabled("DELETE FROM memoryhub_auditentry WHERE id = %s", [a2.pk])
    report = verify_chain()
    # Bob's row after the gap still links; Alice's next row is the broken one.
    assert report.first_broken_id == a3.pk
    assert "broken" in report.reason
    assert report.rows_checked == 3  # a1, b1, b2


def test_a_chains_first_row_deleted_is_found(db):
    alice = uuid.uuid4()
    first, second = _record(alice), _record(alice)
    _with_trigger_disabled("DELETE FROM memoryhub_auditentry WHERE id = %s", [first.pk])
    assert verify_chain().first_broken_id == second.pk


def test_an_anchor_detects_rows_cut_off_the_end_of_one_chain(db, capsys):
    alice, bob = uuid.uuid4(), uuid.uuid4()
    rows = [_record(u) for u in (alice, alice, bob, alice, bob)]
    call_command("verify_audit")
    head = _head(capsys)
    _record(bob, AuditAction.AUDIT_EXPORT)
    # Alice's last row goes; it is not the last row of the log, and her chain is still whole.
    _with_trigger_disabled("DELETE FROM memoryhub_auditentry WHERE id = %s", [rows[3].pk])
    assert verify_chain().is_intact
    report = verify_chain(anchor=ChainHead.parse(head))
    assert not report.is_intact
    assert "cut off the end of a chain" in report.reason
    with pytest.raises(SystemExit) as exit_info:
        call_command("verify_audit", expect_head=head)
    assert exit_info.value.code == 1
    assert "cut off the end of a chain" in capsys.readouterr().out


def test_an_anchor_detects_a_whole_chain_removed(db, capsys):
    alice, bob = uuid.uuid4(), uuid.uuid4()
    _record(alice)
    _record(alice)
    _record(bob)
    head = verify_chain().head
    _with_trigger_disabled(
        "DELETE FROM memoryhub_auditentry WHERE chain = %s", [subject_pseudonym(alice)]
    )
    assert verify_chain().is_intact
    assert "cut off the end of a chain" in verify_chain(anchor=head).reason


def test_an_anchor_ignores_rows_added_to_any_chain_after_it(db):
    alice, bob = uuid.uuid4(), uuid.uuid4()
    _record(alice)
    _record(bob)
    head = verify_chain().head
    for subject in (alice, bob, None, uuid.uuid4()):
        _record(subject, AuditAction.AUDIT_EXPORT)
    report = verify_chain(anchor=head)
    assert report.is_intact
    assert report.chains_checked == 4
    assert report.head != head


def test_verify_audit_counts_the_chains(db, capsys):
    for subject in (uuid.uuid4(), uuid.uuid4(), None):
        _record(subject)
    call_command("verify_audit")
    out = capsys.readouterr().out
    assert "Audit chain intact: 3 row(s) in 3 chain(s) checked." in out
    assert "Chain head: " in out


# --- The global chain written before migration 0008 ----------------------------------------


def _write_legacy_rows(count):
    """Append rows as the code before migration 0008 did: one chain, no chain in the hash."""
    prev = GENESIS_HASH
    rows = []
    for i in range(count):
        entry = AuditEntry(
            created_at=timezone.now(),
            actor_type="system",
            actor_id="system",
            subject=subject_pseudonym(uuid.uuid4()) if i % 2 else "",
            action=f"old{i}",
            object_ids=[f"m{i}"],
            channel="system",
            chain="legacy",  # what migration 0008's column default gives these rows
            prev_hash=prev,
        )
        body = [
            prev,
            entry.created_at.isoformat(),
            entry.actor_type,
            entry.actor_id,
            entry.actor_label,
            entry.subject,
            entry.action,
            entry.object_ids,
            entry.mode,
            entry.channel,
            "",
        ]
        entry.row_hash = crypto.hmac_hex(
            settings.MEMORYHUB_AUDIT_KEY.encode(), json.dumps(body, separators=(",", ":")).encode()
        )
        entry.save()
        rows.append(entry)
        prev = entry.row_hash
    return rows


def test_legacy_rows_verify_before_the_new_chains(db):
    legacy = _write_legacy_rows(4)
    # The anchor verify_audit printed before migration 0008: the last row's id and hash.
    old_anchor = ChainHead(legacy[-1].pk, legacy[-1].row_hash)
    assert verify_chain().head == old_anchor
    for subject in (uuid.uuid4(), None):
        _record(subject)
    report = verify_chain(anchor=old_anchor)
    assert report.is_intact
    assert (report.rows_checked, report.chains_checked) == (6, 3)


def test_an_edited_legacy_row_is_found(db):
    legacy = _write_legacy_rows(3)
    _record(uuid.uuid4())
    _with_trigger_disabled(
        "UPDATE memoryhub_auditentry SET action = 'x' WHERE id = %s", [legacy[1].pk]
    )
    assert verify_chain().first_broken_id == legacy[1].pk


def test_a_new_row_relabelled_legacy_is_found(db):
    _write_legacy_rows(2)
    new = _record(None)
    _with_trigger_disabled(
        "UPDATE memoryhub_auditentry SET chain = 'legacy', prev_hash = %s WHERE id = %s",
        [AuditEntry.objects.get(action="old1").row_hash, new.pk],
    )
    assert verify_chain().first_broken_id == new.pk


def test_an_old_anchor_detects_legacy_rows_cut_off_the_end(db):
    legacy = _write_legacy_rows(4)
    old_anchor = ChainHead(legacy[-1].pk, legacy[-1].row_hash)
    _record(uuid.uuid4())
    _with_trigger_disabled("DELETE FROM memoryhub_auditentry WHERE id = %s", [legacy[-1].pk])
    assert verify_chain().is_intact
    assert "cut off the end of a chain" in verify_chain(anchor=old_anchor).reason
