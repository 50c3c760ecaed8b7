"""Backup and restore, drilled: a fresh cluster gets every memory back, readable, audit intact.

Each test restores into a new embedded PostgreSQL of its own (tests/pg_clusters.py), as an
operator would after losing the database server.
"""

from __future__ import annotations

import base64
import os
import stat
import subprocess
import sys
from io import StringIO
from pathlib import Path

import psycopg
import pytest
from django.core.management import CommandError, call_command

from memoryhub.actors import Actor
from memoryhub.backup import Manifest, read_keys_file
from memoryhub.queries.memories import list_memories
from tests import factories
from tests.pg_clusters import temporary_cluster

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]
TEXTS = {
    "alice": ["Allergic to hazelnuts", "Runs the Lisbon office"],
    "bob": ["Prefers tea to coffee", "Birthday on 4 May", "Learning Portuguese"],
}


@pytest.fixture
def backed_up(tmp_path, embedder):
    """Two users' memories, read once (audited), then a backup: its folder and keys file."""
    workspace = factories.make_workspace()
    for name, texts in TEXTS.items():
        user = factories.make_user(workspace=workspace, external_id=name)
        mode = factories.mode_of(user)
        for text in texts:
            factories.make_memory(user, mode, text, embedder=embedder)
        list_memories(user=user, mode=mode, actor=Actor.system("tests"))  # An audit row each.
    out = StringIO()
    call_command("backup", to=tmp_path / "backups", keys_to=tmp_path / "keys", stdout=out)
    [folder] = (tmp_path / "backups").iterdir()
    [keys_file] = (tmp_path / "keys").iterdir()
    return folder, keys_file, out.getvalue()


def _tables(url: str) -> int:
    with psycopg.connect(url) as target:
        row = target.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone()
    return row[0]


def _memories_in(url: str, keys: dict[str, str], external_id: str) -> list[str]:
    """A process on the restored database, with the restored keys, lists the user's memories."""
    script = (
        "from memoryhub.models import User; from memoryhub.actors import Actor; "
        "from memoryhub.queries.memories import list_memories; "
        f"u = User.objects.get(external_id={external_id!r}); "
        "m = u.modes.get(slug='personal'); "
        "print('\\n'.join(sorted(i.content for i in list_memories("
        "user=u, mode=m, actor=Actor.system('restore-test')))))"
    )
    result = subprocess.run(  # noqa: S603  # Our own interpreter and manage.py.
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", script],
        cwd=REPO,
        env={**os.environ, **keys, "DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()


def test_a_backup_restores_into_a_fresh_cluster_readable_with_its_keys(backed_up):
    folder, keys_file, printed = backed_up
    manifest = Manifest.read(folder)
    assert manifest.counts["memories"] == 5
    assert manifest.audit_head  # The chain head the restore must reach again.
    # The keys live apart from the dump, readable by their owner alone, and the dump holds none.
    assert keys_file.parent != folder.parent
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    keys = read_keys_file(keys_file)
    secret = keys["MEMORYHUB_MASTER_KEYS"].split(",")[0].split(":")[1]
    assert secret.encode() not in (folder / "database.dump").read_bytes()
    assert secret not in (folder / "manifest.json").read_text()
    assert "secret store" in printed and "manage.py restore" in printed

    with temporary_cluster() as cluster:
        target = cluster.create_database("restored")
        out = StringIO()
        call_command("restore", str(folder), database_url=target, keys=str(keys_file), stdout=out)
        report = out.getvalue()
        assert "5 memories decrypted with 2 user data key(s)" in report
        assert "audit chain intact" in report
        # Independently of the command's own check: the restored deployment reads them.
        assert _memories_in(target, keys, "alice") == sorted(TEXTS["alice"])
        assert _memories_in(target, keys, "bob") == sorted(TEXTS["bob"])
        # And verify_audit holds on the restored chain, from the head the backup recorded.
        audit = subprocess.run(  # noqa: S603  # Our own interpreter and manage.py.
            [sys.executable, "manage.py", "verify_audit", "--expect-head", manifest.audit_head],
            cwd=REPO,
            env={**os.environ, **keys, "DATABASE_URL": target},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert audit.returncode == 0, audit.stdout + audit.stderr
        assert "Audit chain intact" in audit.stdout


def _keys_file(path: Path, keys: dict[str, str]) -> Path:
    path.write_text("".join(f"{name}={value}\n" for name, value in keys.items()))
    return path


def test_a_missing_or_wrong_master_key_is_refused_before_anything_is_written(backed_up, tmp_path):
    folder, keys_file, _ = backed_up
    keys = read_keys_file(keys_file)
    key_id = keys["MEMORYHUB_MASTER_KEYS"].split(",")[0].split(":")[0]
    other_secret = base64.b64encode(os.urandom(32)).decode()
    missing = _keys_file(
        tmp_path / "missing.env", {**keys, "MEMORYHUB_MASTER_KEYS": f"zz:{other_secret}"}
    )
    wrong = _keys_file(
        tmp_path / "wrong.env", {**keys, "MEMORYHUB_MASTER_KEYS": f"{key_id}:{other_secret}"}
    )
    wrong_audit = _keys_file(tmp_path / "audit.env", {**keys, "MEMORYHUB_AUDIT_KEY": "another"})
    incomplete = _keys_file(tmp_path / "incomplete.env", {"SECRET_KEY": keys["SECRET_KEY"]})
    with temporary_cluster() as cluster:
        target = cluster.create_database("restored")
        for keys_path, message in (
            (missing, f"master key {key_id!r} is missing"),
            (wrong, f"master key {key_id!r} is not the key this backup was taken with"),
            (wrong_audit, "MEMORYHUB_AUDIT_KEY is not the key this backup was taken with"),
            (incomplete, "lacks MEMORYHUB_MASTER_KEYS, MEMORYHUB_AUDIT_KEY"),
        ):
            with pytest.raises(CommandError, match=r"(?i)nothing was restored") as error:
                call_command("restore", str(folder), database_url=target, keys=str(keys_path))
            assert message in str(error.value)
            assert _tables(target) == 0  # Nothing was written to the target.


def test_a_restore_never_overwrites_a_database_that_holds_tables(backed_up):
    folder, keys_file, _ = backed_up
    with temporary_cluster() as cluster:
        target = cluster.create_database("in_use")
        with psycopg.connect(target, autocommit=True) as connection:
            connection.execute("CREATE TABLE precious (note text)")
            connection.execute("INSERT INTO precious VALUES ('keep me')")
        with pytest.raises(CommandError, match="already holds 1 table"):
            call_command("restore", str(folder), database_url=target, keys=str(keys_file))
        with psycopg.connect(target) as connection:
            assert connection.execute("SELECT note FROM precious").fetchall() == [("keep me",)]
            assert _tables(target) == 1


def test_a_dump_that_does_not_match_its_manifest_is_refused(backed_up):
    folder, keys_file, _ = backed_up
    with (folder / "database.dump").open("ab") as dump:
        dump.write(b"tampered")
    with pytest.raises(CommandError, match="does not match the manifest's checksum"):
        call_command(
            "restore", str(folder), database_url="postgresql://x@127.0.0.1:1/x", keys=str(keys_file)
        )
