"""Nothing personal in plaintext: audit modes, journal keys, forgotten topics, TOTP secrets,
secret files; and the demo account only exists in DEBUG."""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import stat
from pathlib import Path

import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import (
    format_hotp_value,
    hotp_value,
    yield_hotp_counters_from_time,
)
from django.contrib.sessions.models import Session as DjangoSession
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from accounts.adapter import MFAAdapter
from memoryhub import crypto
from memoryhub import settings as settings_module
from memoryhub.audit.log import (
    _row_hash,
    mode_pseudonym,
    subject_pseudonym,
    verify_chain,
)
from memoryhub.errors import DecryptionError
from memoryhub.keyring import is_sealed_secret
from memoryhub.models import AuditEntry, JournalEntry, User
from memoryhub.queries.export import export_user_data
from memoryhub.services.users import create_mode

from .canary_scan import columns_holding, dump_holds

PASSWORD = "correct horse battery staple"  # tests/factories.py

pytestmark = pytest.mark.django_db(transaction=True)


# --- Audit rows name a mode by its pseudonym -------------------------------------------------


def test_audit_rows_hold_a_pseudonym_of_the_mode_never_its_name(world):
    create_mode(user=world.alice, name="divorce")
    written = world.agent_http.post(
        "/memories",
        {"user": "alice", "mode": "divorce", "kind": "fact", "content": "Lawyer on Monday"},
    )
    assert written.status_code == 201, written.text
    assert world.agent_http.get("/memories", user="alice", mode="divorce").status_code == 200
    rows = AuditEntry.objects.filter(subject=subject_pseudonym(world.alice.pk))
    assert rows.count() >= 2
    assert set(rows.exclude(mode="").values_list("mode", flat=True)) == {
        mode_pseudonym(subject_pseudonym(world.alice.pk), "divorce")
    }
    assert "memoryhub_auditentry.mode" not in columns_holding("divorce")
    # The same mode name of another user is another pseudonym: rows do not link the two.
    assert mode_pseudonym(subject_pseudonym(world.bob.pk), "divorce") not in set(
        rows.values_list("mode", flat=True)
    )
    assert verify_chain().is_intact


def _old_row(user, slug: str, action: str) -> AuditEntry:
    """A row as written before pseudonyms: the slug itself, hashed as it is."""
    subject = subject_pseudonym(user.pk)
    last = AuditEntry.objects.filter(chain=subject).order_by("-id").first()
    entry = AuditEntry(
        actor_type="agent",
        actor_id="old-agent",
        actor_label="old agent",
        subject=subject,
        chain=subject,
        action=action,
        mode=slug,
        channel="api",
        prev_hash=last.row_hash if last else "0" * 64,
    )
    entry.row_hash = _row_hash(entry)
    entry.save()
    return entry


def test_the_users_access_log_shows_the_mode_of_new_and_old_rows(world, client: Client):
    create_mode(user=world.alice, name="divorce")
    world.agent_http.get("/memories", user="alice", mode="divorce")
    _old_row(world.alice, "divorce", "memory.search")
    assert verify_chain().is_intact  # Old rows keep verifying next to new ones.
    client.force_login(world.alice)
    page = client.get("/dashboard/access/").content.decode()
    assert page.count('<td data-label="Mode">divorce</td>') == 2
    assert "mode:" not in page


def test_the_admin_filters_the_audit_by_user_and_mode(world, superuser_client):
    create_mode(user=world.alice, name="divorce")
    world.agent_http.get("/memories", user="alice", mode="divorce")
    world.agent_http.get("/memories", user="alice", mode="work")
    world.agent_http.get("/memories", user="bob", mode="work")
    old = _old_row(world.alice, "divorce", "memory.search")
    page = superuser_client.get(
        "/admin-tools/audit/", {"user": "alice@example.com", "mode": "divorce"}
    )
    assert page.status_code == 200
    shown = list(page.context["page"].object_list)
    assert {row.action for row in shown} == {"memory.list", "memory.search"}
    assert old in shown
    assert all(row.subject == subject_pseudonym(world.alice.pk) for row in shown)
    no_user = superuser_client.get("/admin-tools/audit/", {"mode": "divorce"})
    assert no_user.status_code == 422
    assert "Name a user too" in no_user.content.decode()


# --- Journal keys are a blind index ------------------------------------------------------------


def test_journal_keys_are_matched_by_a_keyed_hash_and_stored_encrypted(world, system_actor):
    note = {"user": "alice", "type": "action", "summary": "Booked a call", "key": "divorce-lawyer"}
    first = world.agent_http.post("/journal", note)
    again = world.agent_http.post("/journal", {**note, "summary": "Booked it again"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]  # Deduplicated by key, as before.
    listed = world.agent_http.get("/journal", user="alice").json()["items"]
    assert [item["key"] for item in listed] == ["divorce-lawyer"]
    bobs = world.agent_http.post("/journal", {**note, "user": "bob"})
    assert bobs.status_code == 201  # Another user's note with the same key is another note.
    assert columns_holding("divorce") == []
    hashes = set(JournalEntry.objects.values_list("key_hash", flat=True))
    assert len(hashes) == 2  # Keyed per user: equal keys of two users do not look alike.
    exported = export_user_data(user=world.alice, actor=system_actor)
    personal = next(mode for mode in exported["modes"] if mode["slug"] == "personal")
    assert [entry["key"] for entry in personal["agent_journal"]] == ["divorce-lawyer"]


def test_the_migration_seals_journal_keys_stored_in_clear(world):
    note = {"user": "alice", "type": "alert", "summary": "Court date", "key": "custody-hearing"}
    created = world.agent_http.post("/journal", note)
    assert created.status_code == 201
    executor = MigrationExecutor(connection)
    executor.migrate([("memoryhub", "0012_user_links")])  # Back: the key returns to clear.
    with connection.cursor() as cursor:
        cursor.execute("SELECT key FROM memoryhub_journalentry")
        assert cursor.fetchall() == [("custody-hearing",)]
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert columns_holding("custody") == []
    again = world.agent_http.post("/journal", {**note, "summary": "Court date, again"})
    assert again.status_code == 200 and again.json()["id"] == created.json()["id"]


# --- A forgotten topic is never kept in clear ----------------------------------------------


def test_the_forget_receipt_keeps_the_forgotten_topic_sealed(world, client: Client):
    world.agent_http.post(
        "/memories", {"user": "alice", "kind": "fact", "content": "Talks about the divorce"}
    )
    client.force_login(world.alice)
    done = client.post("/dashboard/modes/personal/forget/", {"what": "topic", "topic": "divorce"})
    assert done.status_code == 302, done.content
    for session in DjangoSession.objects.all():
        assert "divorce" not in json.dumps(session.get_decoded())
    assert columns_holding("divorce") == []
    for _ in range(2):  # Shown on every reload of the receipt, opened each time.
        page = client.get("/dashboard/receipt/").content.decode()
        assert "everything about “divorce”" in page


# --- TOTP secrets are sealed -------------------------------------------------------------------


def _code(secret: str) -> str:
    cache.clear()  # allauth refuses a code twice within its window; each step uses a fresh one.
    return format_hotp_value(hotp_value(secret, next(yield_hotp_counters_from_time())))


def _sign_in_with_totp(client: Client, email: str, secret: str) -> None:
    client.logout()
    response = client.post("/accounts/login/", {"login": email, "password": PASSWORD})
    assert response.status_code == 302 and "/2fa/authenticate" in response["Location"]
    response = client.post(response["Location"], {"code": _code(secret)})
    assert response.status_code == 302, response.content
    assert client.get("/dashboard/").status_code == 200


def test_a_totp_secret_set_up_over_http_is_stored_sealed_and_still_signs_in(world, client):
    EmailAddress.objects.create(
        user=world.alice, email=world.alice.email, verified=True, primary=True
    )
    response = client.post("/accounts/login/", {"login": world.alice.email, "password": PASSWORD})
    assert response.status_code == 302
    # Straight after the login, no second password before adding an authenticator (issue 29).
    page = client.get("/accounts/2fa/totp/activate/")
    assert page.status_code == 200, page.content
    secret = page.context["form"].secret
    activated = client.post("/accounts/2fa/totp/activate/", {"code": _code(secret)})
    assert activated.status_code == 302, activated.content
    stored = Authenticator.objects.get(user=world.alice, type=Authenticator.Type.TOTP)
    assert is_sealed_secret(stored.data["secret"])
    assert columns_holding(secret) == []
    assert not dump_holds(secret)
    _sign_in_with_totp(client, world.alice.email, secret)


def test_a_secret_stored_in_clear_before_keeps_working_until_sealed(world, client, settings):
    secret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
    Authenticator.objects.create(
        user=world.alice, type=Authenticator.Type.TOTP, data={"secret": secret}
    )
    _sign_in_with_totp(client, world.alice.email, secret)
    # Rotation seals it (and everything else) under the newest master key ...
    old = settings.MEMORYHUB_MASTER_KEYS
    settings.MEMORYHUB_MASTER_KEYS = f"{crypto.generate_master_key_entry('next')},{old}"
    call_command("rotate_master_key", verbosity=0)
    sealed = Authenticator.objects.get(user=world.alice).data["secret"]
    assert sealed.startswith("mhsec1:next:")
    # ... so the old master key can go and the secret still opens.
    settings.MEMORYHUB_MASTER_KEYS = settings.MEMORYHUB_MASTER_KEYS.split(",")[0]
    _sign_in_with_totp(client, world.alice.email, secret)


def test_a_sealed_secret_that_was_altered_is_refused(world):
    sealed = MFAAdapter().encrypt("JBSWY3DPEHPK3PXP")
    assert MFAAdapter().decrypt(sealed) == "JBSWY3DPEHPK3PXP"
    tampered = sealed[:-6] + ("A" if sealed[-6] != "A" else "B") + sealed[-5:]
    with pytest.raises(DecryptionError):
        MFAAdapter().decrypt(tampered)


# --- Secret files -------------------------------------------------------------------------------


def _create_secret(data_dir: str, value: str) -> str:
    os.umask(0)  # The file must be private whatever the umask.
    settings_module.DATA_DIR = Path(data_dir)
    return settings_module._local_secret("secret-key", value)


def test_secret_files_are_private_and_two_processes_starting_at_once_agree(tmp_path):
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(max_workers=8, mp_context=context) as pool:
        values = [f"secret-{n}" for n in range(32)]
        results = list(pool.map(_create_secret, [str(tmp_path)] * len(values), values))
    assert len(set(results)) == 1 and results[0] in values
    path = tmp_path / "secret-key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret-key"]  # No temporary file left.
    assert _create_secret(str(tmp_path), "another") == results[0]  # Read, never rewritten.


# --- The demo account ---------------------------------------------------------------------------


def test_the_demo_account_is_refused_with_debug_off(settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG"):
        call_command("load_demo")
    assert not User.objects.filter(email="demo@example.com").exists()
