"""Backups of the database and the restore into a fresh cluster, checked with the keys.

A backup is a folder holding `database.dump` (pg_dump's custom format) and `manifest.json`,
and, written somewhere else, a keys file: the master keys, the audit key and the secret key.
The dump alone is ciphertext that nothing opens; the keys alone hold no data. Both are needed,
and they must be kept apart: whoever holds both reads every memory.

Consistency: the manifest (counts, the master key ids the data keys need, the audit chains'
head) is computed inside one REPEATABLE READ transaction whose snapshot pg_dump then dumps
(`--snapshot`), so manifest and dump describe the same instant while the service keeps writing.

A restore checks everything it can before it touches the target: the dump's checksum, that
every master key the backup needs is given and is the same key (by fingerprint), that the audit
key is the same, and that the target database is empty. Only then does pg_restore run, in one
transaction. `verify_restored_database` (run by `manage.py verify_restore` against the restored
database) opens every data key, decrypts every memory and verifies the audit chains up to the
head the backup recorded.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import psycopg
from django.conf import settings
from django.db import connection, transaction

from memoryhub import crypto
from memoryhub.audit.log import ChainHead, verify_chain
from memoryhub.embedded_db import client_binary
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import decrypt_memory
from memoryhub.models import AuditEntry, Memory, UserKey, WorkspaceKey

DUMP_FILE = "database.dump"
MANIFEST_FILE = "manifest.json"
FORMAT = "memoryhub-backup/1"
_FINGERPRINT_LABEL = b"memoryhub backup key fingerprint"


class BackupError(Exception):
    """A backup or restore that cannot go on; the message says why and what to do."""


@dataclass(frozen=True)
class Manifest:
    format: str
    created_at: str
    database: str
    pg_dump_version: str
    dump_sha256: str
    master_key_fingerprints: dict[str, str]  # Each key id the data keys need: its fingerprint.
    audit_key_fingerprint: str
    audit_head: str  # "" for an empty log
    counts: dict[str, int]

    @classmethod
    def read(cls, folder: Path) -> Manifest:
        path = folder / MANIFEST_FILE
        try:
            data = json.loads(path.read_text())
            return cls(**data)
        except (OSError, ValueError, TypeError) as error:
            raise BackupError(f"{path} is not a MemoryHub backup manifest: {error}") from None


@dataclass(frozen=True)
class BackupResult:
    folder: Path
    keys_file: Path
    manifest: Manifest
    seconds: float


def fingerprint(secret: bytes) -> str:
    """A short HMAC of a key that tells it apart from another, and reveals nothing of it."""
    return hmac.new(secret, _FINGERPRINT_LABEL, hashlib.sha256).hexdigest()[:24]


def postgres_program(name: str, bin_dir: Path | None) -> str:
    """pg_dump or pg_restore: from `bin_dir`, else the embedded install's, else the PATH's."""
    if bin_dir is not None:
        return str(bin_dir / name)
    embedded = client_binary(name)
    if embedded.exists():
        return str(embedded)
    found = shutil.which(name)
    if found is None:
        raise BackupError(
            f"{name} not found: install PostgreSQL's client programs or pass --pg-bin"
        )
    return found


def _libpq_url(settings_dict: dict[str, object]) -> str:
    """The default database's connection URL for libpq programs (password and all)."""
    user = quote(str(settings_dict["USER"] or "postgres"))
    password = str(settings_dict.get("PASSWORD") or "")
    auth = f"{user}:{quote(password)}" if password else user
    host = str(settings_dict["HOST"] or "")
    name = quote(str(settings_dict["NAME"]))
    if host.startswith("/"):  # A socket directory: the embedded server.
        return (
            f"postgresql://{auth}@/{name}?host={quote(host)}&port={settings_dict['PORT'] or 5432}"
        )
    return f"postgresql://{auth}@{host or '127.0.0.1'}:{settings_dict['PORT'] or 5432}/{name}"


def _run(argv: list[str], what: str) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, check=False)  # noqa: S603
    if result.returncode != 0:
        raise BackupError(f"{what} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return result.stdout


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _needed_master_key_ids() -> set[str]:
    user_keys = UserKey.objects.values_list("master_key_id", flat=True).distinct()
    workspace_keys = WorkspaceKey.objects.values_list("master_key_id", flat=True).distinct()
    return set(user_keys) | set(workspace_keys)


def create_backup(
    *, destination: Path, keys_destination: Path, pg_bin: Path | None
) -> BackupResult:
    """Dump the database and write the keys file apart; raise BackupError on any failure."""
    if destination.resolve() == keys_destination.resolve():
        raise BackupError("keep the keys apart from the dump: give --keys-to another folder")
    started = datetime.now(UTC)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    folder = destination / f"memoryhub-{stamp}"
    folder.mkdir(parents=True, exist_ok=False)
    keys_destination.mkdir(parents=True, exist_ok=True)
    pg_dump = postgres_program("pg_dump", pg_bin)
    version = _run([pg_dump, "--version"], "pg_dump --version").strip()
    dump_path = folder / DUMP_FILE
    configured = {
        key.key_id: key for key in crypto.parse_master_keys(settings.MEMORYHUB_MASTER_KEYS)
    }
    with transaction.atomic():
        with connection.cursor() as cursor:
            # One snapshot for the manifest and the dump: both describe the same instant.
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cursor.execute("SELECT pg_export_snapshot()")
            row = cursor.fetchone()
            snapshot = str(row[0]) if row else ""
        needed = _needed_master_key_ids()
        missing = sorted(needed - configured.keys())
        if missing:
            raise BackupError(f"data keys are wrapped by master keys not configured: {missing}")
        report = verify_chain()
        if not report.is_intact:
            raise BackupError(
                f"the audit chain is broken at row {report.first_broken_id}: {report.reason}; "
                "back up anyway with pg_dump by hand, and investigate"
            )
        counts = {
            "memories": Memory.all_owners.count(),
            "user_keys": UserKey.objects.count(),
            "workspace_keys": WorkspaceKey.objects.count(),
            "audit_entries": AuditEntry.objects.count(),
        }
        _run(
            [
                pg_dump,
                "--format=custom",
                f"--snapshot={snapshot}",
                f"--file={dump_path}",
                f"--dbname={_libpq_url(connection.settings_dict)}",
            ],
            "pg_dump",
        )
    manifest = Manifest(
        format=FORMAT,
        created_at=started.isoformat(),
        database=str(connection.settings_dict["NAME"]),
        pg_dump_version=version,
        dump_sha256=_sha256(dump_path),
        master_key_fingerprints={
            key_id: fingerprint(configured[key_id].secret) for key_id in sorted(needed)
        },
        audit_key_fingerprint=fingerprint(settings.MEMORYHUB_AUDIT_KEY.encode()),
        audit_head=str(report.head) if report.head is not None else "",
        counts=counts,
    )
    (folder / MANIFEST_FILE).write_text(json.dumps(asdict(manifest), indent=2) + "\n")
    keys_file = keys_destination / f"memoryhub-{stamp}.keys.env"
    _write_private(
        keys_file,
        f"MEMORYHUB_MASTER_KEYS={settings.MEMORYHUB_MASTER_KEYS}\n"
        f"MEMORYHUB_AUDIT_KEY={settings.MEMORYHUB_AUDIT_KEY}\n"
        f"SECRET_KEY={settings.SECRET_KEY}\n",
    )
    seconds = (datetime.now(UTC) - started).total_seconds()
    return BackupResult(folder=folder, keys_file=keys_file, manifest=manifest, seconds=seconds)


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read, from its first byte."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)


def read_keys_file(path: Path) -> dict[str, str]:
    """The variables of a keys file (NAME=value lines)."""
    try:
        lines = path.read_text().splitlines()
    except OSError as error:
        raise BackupError(f"cannot read the keys file {path}: {error.strerror}") from None
    values = {}
    for line in lines:
        name, sep, value = line.partition("=")
        if sep and name.strip():
            values[name.strip()] = value.strip()
    return values


def check_keys(manifest: Manifest, *, master_keys: str, audit_key: str) -> None:
    """Raise BackupError unless these keys are the ones the backup's data needs."""
    try:
        given = {key.key_id: key for key in crypto.parse_master_keys(master_keys)}
    except ValueError as error:
        raise BackupError(f"MEMORYHUB_MASTER_KEYS is malformed: {error}") from None
    for key_id, expected in sorted(manifest.master_key_fingerprints.items()):
        if key_id not in given:
            raise BackupError(
                f"master key {key_id!r} is missing: the backup's data keys are wrapped by it, so "
                "without it no memory can be read. Nothing was restored; give the keys file "
                "written with this backup (--keys)"
            )
        if not hmac.compare_digest(fingerprint(given[key_id].secret), expected):
            raise BackupError(
                f"master key {key_id!r} is not the key this backup was taken with (its "
                "fingerprint differs). Nothing was restored; give the keys file written with "
                "this backup (--keys)"
            )
    if not hmac.compare_digest(fingerprint(audit_key.encode()), manifest.audit_key_fingerprint):
        raise BackupError(
            "MEMORYHUB_AUDIT_KEY is not the key this backup was taken with: the audit chains "
            "would not verify. Nothing was restored"
        )


def check_target_is_empty(target_url: str) -> None:
    """Raise BackupError unless the target database answers and holds no table of its own."""
    try:
        with psycopg.connect(target_url, connect_timeout=10) as target:
            row = target.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN "
                "('pg_catalog', 'information_schema')"
            ).fetchone()
    except psycopg.Error as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise BackupError(f"cannot connect to the target database: {first_line}") from None
    if row is not None and row[0]:
        raise BackupError(
            f"the target database already holds {row[0]} table(s): restore only into a fresh, "
            "empty database. Nothing was changed"
        )


def restore_backup(
    *, folder: Path, target_url: str, master_keys: str, audit_key: str, pg_bin: Path | None
) -> Manifest:
    """Check the backup, the keys and the target, then pg_restore in one transaction."""
    manifest = Manifest.read(folder)
    if manifest.format != FORMAT:
        raise BackupError(f"unknown backup format {manifest.format!r}")
    dump_path = folder / DUMP_FILE
    if not dump_path.is_file() or _sha256(dump_path) != manifest.dump_sha256:
        raise BackupError(f"{dump_path} is missing or does not match the manifest's checksum")
    check_keys(manifest, master_keys=master_keys, audit_key=audit_key)
    check_target_is_empty(target_url)
    _run(
        [
            postgres_program("pg_restore", pg_bin),
            "--no-owner",
            "--no-privileges",
            "--exit-on-error",
            "--single-transaction",
            f"--dbname={target_url}",
            str(dump_path),
        ],
        "pg_restore",
    )
    return manifest


@dataclass(frozen=True)
class RestoreCheck:
    memories_decrypted: int
    keys_opened: int
    audit_rows_checked: int
    problems: tuple[str, ...]

    @property
    def is_sound(self) -> bool:
        return not self.problems


def verify_restored_database(manifest: Manifest) -> RestoreCheck:
    """On the restored database: counts as in the manifest, every memory decrypts, audit holds.

    Writes nothing (no audit row either): decrypting here is the operator's check, not a read
    of anyone's memory by an actor.
    """
    problems = []
    counts = {
        "memories": Memory.all_owners.count(),
        "user_keys": UserKey.objects.count(),
        "workspace_keys": WorkspaceKey.objects.count(),
        "audit_entries": AuditEntry.objects.count(),
    }
    for name, expected in manifest.counts.items():
        if counts.get(name) != expected:
            problems.append(f"{name}: {counts.get(name)} restored, {expected} backed up")
    decrypted = 0
    user_ids = UserKey.objects.values_list("user_id", flat=True)
    for user_id in user_ids.iterator():
        cipher = cipher_for(user_id, create=False)
        for memory in Memory.objects.for_owner(user=user_id, mode=None).iterator():
            decrypt_memory(memory, cipher)
            decrypted += 1
    if decrypted != counts["memories"]:
        problems.append(f"{counts['memories'] - decrypted} memories have no data key")
    anchor = ChainHead.parse(manifest.audit_head) if manifest.audit_head else None
    report = verify_chain(anchor=anchor)
    if not report.is_intact:
        problems.append(f"audit chain: {report.reason} (row {report.first_broken_id})")
    return RestoreCheck(
        memories_decrypted=decrypted,
        keys_opened=len(user_ids),
        audit_rows_checked=report.rows_checked,
        problems=tuple(problems),
    )
