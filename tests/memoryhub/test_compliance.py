"""Compliance deletion end to end: account erasure, forgetting an hour, data-deletion requests."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import CommandError, call_command

from memoryhub import tasks
from memoryhub.actors import Actor
from memoryhub.audit.log import subject_pseudonym, verify_chain
from memoryhub.crypto import generate_data_key
from memoryhub.errors import DecryptionError, KeyDestroyedError
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.models import (
    ApiKey,
    AuditEntry,
    Memory,
    MemoryVersion,
    Message,
    Mode,
    Session,
    User,
    UserKey,
)
from memoryhub.queries.export import export_user_data
from memoryhub.queries.memories import list_memories
from memoryhub.queries.recall import search_memories
from memoryhub.sealed_tables import MEMORY_TABLE
from memoryhub.services.agents import create_personal_key
from memoryhub.services.forget import ForgetSelector, delete_account, forget
from memoryhub.services.ingest import run_extraction
from memoryhub.services.memories import edit_memory
from memoryhub.services.sessions import end_session
from tests.factories import make_memory
from tests.memoryhub.threads import make_session, say

NOW = datetime(2025, 9, 10, 18, 0, tzinfo=UTC)


def _extracted_session(user, mode, embedder, lines):
    session = make_session(user, mode)
    for line in lines:
        say(session, line, embedder=embedder)
    end_session(session=session, actor=Actor.system("tests"))
    run_extraction(session_id=session.pk, embedder=embedder)
    return session


# --- Account deletion ----------------------------------------------------------------------


def test_account_deletion_shreds_the_key_so_old_ciphertext_never_opens(user, personal, embedder):
    memory = make_memory(user, personal, "My passport number is 12AB34567", embedder=embedder)
    session = make_session(user, personal)
    message = say(session, "My passport number is 12AB34567.", embedder=embedder)
    stolen_memory = bytes(memory.content_ciphertext)
    stolen_message = bytes(Message.objects.get(pk=message.pk).content_ciphertext)
    user_id = user.pk
    delete_account(user=user, actor=Actor.system("tests"))
    assert not UserKey.objects.filter(user_id=user_id).exists()
    with pytest.raises(KeyDestroyedError):
        cipher_for(user_id, create=False)
    # No other key opens what the destroyed one sealed.
    fresh = UserCipher(user_id=user_id, data_key=generate_data_key())
    with pytest.raises(DecryptionError):
        fresh.decrypt(stolen_memory, table=MEMORY_TABLE, row_id=memory.pk, field="content")
    with pytest.raises(DecryptionError):
        fresh.decrypt(stolen_message, table="message", row_id=message.pk, field="content")


def test_account_deletion_removes_every_row_of_the_user(user, other_user, personal, work, embedder):
    make_memory(user, personal, "Personal thing", embedder=embedder)
    edited = make_memory(user, work, "Work thing", embedder=embedder)
    edit_memory(
        user=user,
        mode=work,
        memory_id=edited.pk,
        actor=Actor.system("tests"),
        embedder=embedder,
        content="Work thing, edited",
    )
    say(make_session(user, personal), "Hello there.", embedder=embedder)
    create_personal_key(user=user, name="laptop")
    theirs = make_memory(other_user, other_user.modes.get(slug="personal"), "Bob's thing")
    user_id = user.pk
    delete_account(user=user, actor=Actor.for_user(user_id))
    assert not User.objects.filter(pk=user_id).exists()
    assert not Memory.objects.for_owner(user=user_id, mode=None).exists()
    assert not MemoryVersion.objects.filter(memory_id=edited.pk).exists()
    assert not Session.objects.filter(user_id=user_id).exists()
    assert not Message.objects.filter(session__user_id=user_id).exists()
    assert not Mode.objects.filter(user_id=user_id).exists()
    assert not ApiKey.objects.filter(user_id=user_id).exists()
    assert Memory.objects.for_owner(user=other_user, mode=None).filter(pk=theirs.pk).exists()


def test_account_deletion_leaves_a_pseudonymous_audit_record(user, personal):
    user_id, email = user.pk, user.email
    delete_account(user=user, actor=Actor.for_user(user_id, client_ip="203.0.113.9"))
    entry = AuditEntry.objects.get(action="account.delete")
    assert entry.subject == subject_pseudonym(user_id)
    assert entry.actor_id == subject_pseudonym(user_id)
    row = json.dumps([entry.actor_id, entry.actor_label, entry.subject, entry.object_ids])
    assert str(user_id) not in row
    assert email not in row
    assert verify_chain().is_intact


# --- Forget the last hour, end to end ------------------------------------------------------


def test_forget_the_last_hour_erases_it_from_every_read_path(user, personal, embedder):
    actor = Actor.system("tests")
    with time_machine.travel(NOW - timedelta(days=2), tick=False):
        _extracted_session(user, personal, embedder, ["I live in Grenoble.", "I work as a baker."])
    with time_machine.travel(NOW - timedelta(minutes=30), tick=False):
        _extracted_session(
            user,
            personal,
            embedder,
            ["My brother is called Hugo.", "I'm allergic to penicillin."],
        )
    before = [i.content for i in list_memories(user=user, mode=personal, actor=actor, limit=200)]
    assert any("Hugo" in text for text in before)
    with time_machine.travel(NOW, tick=False):
        receipt = forget(
            user=user,
            mode=personal,
            selector=ForgetSelector(since=NOW - timedelta(hours=1)),
            actor=actor,
            embedder=embedder,
        )
    assert receipt.counts["message"] == 2
    after = [i.content for i in list_memories(user=user, mode=personal, actor=actor, limit=200)]
    assert not any("Hugo" in text or "penicillin" in text for text in after)
    assert any("Grenoble" in text for text in after)
    hits = search_memories(
        user=user,
        mode=personal,
        query="brother Hugo penicillin allergy",
        actor=actor,
        embedder=embedder,
        k=20,
    )
    assert not any("Hugo" in hit.content or "penicillin" in hit.content for hit in hits)
    exported = json.dumps(export_user_data(user=user, actor=actor))
    assert "Hugo" not in exported
    assert "penicillin" not in exported
    assert "Grenoble" in exported


def test_the_dashboard_no_longer_shows_what_was_forgotten(client, user, personal, embedder):
    make_memory(user, personal, "Secret surprise party for Léa", embedder=embedder)
    make_memory(user, personal, "Likes climbing", embedder=embedder)
    client.force_login(user)
    assert "surprise party" in client.get("/dashboard/?mode=personal").content.decode()
    forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(topic="surprise party"),
        actor=Actor.for_user(user.pk),
        embedder=embedder,
    )
    page = client.get("/dashboard/?mode=personal").content.decode()
    assert "surprise party" not in page
    assert "Likes climbing" in page


# --- Data-deletion requests ----------------------------------------------------------------


def test_a_deletion_request_by_topic_runs_from_the_command_line(user, personal, embedder, capsys):
    make_memory(user, personal, "Therapy sessions on Tuesdays", embedder=embedder)
    make_memory(user, personal, "Likes climbing", embedder=embedder)
    call_command("forget_data", "--user", user.email, "--mode", "personal", "--topic", "therapy")
    assert "1 fact" in capsys.readouterr().out
    left = [i.content for i in list_memories(user=user, mode=personal, actor=Actor.system("t"))]
    assert left == ["Likes climbing"]


def test_a_deletion_request_by_period_runs_as_a_task(user, personal, embedder):
    with time_machine.travel(NOW - timedelta(days=40), tick=False):
        make_memory(user, personal, "January diet notes", embedder=embedder)
    with time_machine.travel(NOW - timedelta(days=5), tick=False):
        kept = make_memory(user, personal, "Likes climbing", embedder=embedder)
    counts = tasks.forget_data(
        str(user.pk),
        "personal",
        since=(NOW - timedelta(days=60)).isoformat(),
        until=(NOW - timedelta(days=30)).isoformat(),
    )
    assert counts == {"fact": 1}
    left = Memory.objects.for_owner(user=user, mode=personal).values_list("pk", flat=True)
    assert list(left) == [kept.pk]


def test_a_deletion_request_for_specific_facts_touches_nothing_else(user, personal, embedder):
    doomed = make_memory(user, personal, "Old address 4 rue Verte", embedder=embedder)
    kept = make_memory(user, personal, "Likes climbing", embedder=embedder)
    call_command(
        "forget_data", "--user", str(user.pk), "--mode", "personal", "--memory-id", str(doomed.pk)
    )
    left = Memory.objects.for_owner(user=user, mode=personal).values_list("pk", flat=True)
    assert list(left) == [kept.pk]


@pytest.mark.parametrize(
    "arguments",
    [
        ["--user", "nobody@example.com", "--mode", "personal", "--topic", "x"],
        ["--user", "alice@example.com", "--mode", "no-such-mode", "--topic", "x"],
        ["--user", "alice@example.com", "--mode", "personal"],
        ["--user", "alice@example.com", "--mode", "personal", "--since", "yesterday"],
        ["--user", "alice@example.com", "--mode", "personal", "--since", "2025-01-01T00:00"],
    ],
)
def test_a_malformed_deletion_request_is_refused(user, personal, arguments):
    with pytest.raises(CommandError):
        call_command("forget_data", *arguments)
