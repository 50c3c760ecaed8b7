"""The access audit: every read writes a row; rows chain by HMAC and cannot be changed."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from memoryhub.actors import Actor
from memoryhub.models import ActorType, AuditEntry, Channel
from memoryhub.queries.memories import get_memory, list_memories
from memoryhub.services.audit import record_access, subject_pseudonym, verify_chain
from tests.factories import make_memory


def test_reading_a_memory_writes_an_audit_row(user, personal, embedder):
    memory = make_memory(user, personal, "audited fact", embedder=embedder)
    actor = Actor(ActorType.AGENT, "agent-1", Channel.API, client_ip="127.0.0.1")
    get_memory(user=user, mode=personal, memory_id=memory.id, actor=actor)
    entry = AuditEntry.objects.filter(action="memory.read").get()
    assert entry.actor_type == "agent"
    assert entry.actor_id == "agent-1"
    assert entry.channel == "api"
    assert entry.mode == "personal"
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


def test_audit_rows_cannot_be_updated_or_deleted_through_the_orm(db, system_actor):
    entry = record_access(actor=system_actor, subject_user_id=None, action="test")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.filter(pk=entry.pk).update(action="tampered")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.filter(pk=entry.pk).delete()
    entry.action = "tampered"
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        entry.save()
    assert AuditEntry.objects.get(pk=entry.pk).action == "test"


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
        record_access(actor=system_actor, subject_user_id=None, action=f"a{i}") for i in range(5)
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
        record_access(actor=system_actor, subject_user_id=None, action=f"a{i}") for i in range(5)
    ]
    _with_trigger_disabled("DELETE FROM memoryhub_auditentry WHERE id = %s", [entries[1].pk])
    assert verify_chain().first_broken_id == entries[2].pk


def test_verify_audit_exits_zero_on_a_whole_chain(db, system_actor, capsys):
    for i in range(3):
        record_access(actor=system_actor, subject_user_id=None, action=f"a{i}")
    call_command("verify_audit")
    assert "intact" in capsys.readouterr().out


def _head(capsys):
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if line.startswith("Chain head: ")]
    return line.removeprefix("Chain head: ")


def test_verify_audit_prints_the_head_and_finds_it_again_later(db, system_actor, capsys):
    for i in range(3):
        record_access(actor=system_actor, subject_user_id=None, action=f"a{i}")
    call_command("verify_audit")
    head = _head(capsys)
    record_access(actor=system_actor, subject_user_id=None, action="later")
    call_command("verify_audit", expect_head=head)
    out = capsys.readouterr().out
    assert "intact" in out
    assert "found with its hash" in out


def test_an_anchor_detects_rows_cut_off_the_end_of_the_log(db, system_actor, capsys):
    entries = [
        record_access(actor=system_actor, subject_user_id=None, action=f"a{i}") for i in range(5)
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
        record_access(actor=system_actor, subject_user_id=None, action=f"a{i}") for i in range(3)
    ]
    forged = f"{entries[-1].pk}:{'0' * 64}"
    with pytest.raises(SystemExit):
        call_command("verify_audit", expect_head=forged)
    assert "hash differs" in capsys.readouterr().out


@pytest.mark.parametrize("anchor", ["", "12", "x:" + "0" * 64, "12:abc", "12:" + "g" * 64])
def test_verify_audit_refuses_a_malformed_anchor(db, anchor):
    with pytest.raises(CommandError, match="an anchor is"):
        call_command("verify_audit", expect_head=anchor or " ")
