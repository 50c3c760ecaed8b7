"""Look for a canary everywhere it could hide: columns, a pg_dump, and what any kept key opens."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

from django.db import connection

from memoryhub.embedded_db import client_binary
from memoryhub.errors import DecryptionError
from memoryhub.keyring import UserCipher, WorkspaceCipher, cipher_for, workspace_cipher
from memoryhub.models import Memory, UserKey, WorkspaceKey

# Every (table, field) binding name the code encrypts under, and then some: a ciphertext is
# tried under each, so a new table or field that forgot the cascade is still found.
TABLE_LABELS = (
    "memory",
    "memory_version",
    "message",
    "session",
    "journal_entry",
    "answer_record",
    "learning_candidate",
    "graph_node",
    "forget_receipt",
)
FIELD_NAMES = (
    "content",
    "payload",
    "summary",
    "key",
    "working_memory",
    "items",
    "question",
    "answer",
    "comment",
    "feedback_comment",
    "text",
)
TEXT_TYPES = ("text", "character varying", "bytea", "json", "jsonb", "ARRAY")


def _columns(data_types: tuple[str, ...]) -> list[tuple[str, str, str]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'public' AND data_type = ANY(%s) ORDER BY 1, 2",
            [list(data_types)],
        )
        return list(cursor.fetchall())


def columns_holding(text: str) -> list[str]:
    """Every text, bytea, JSON and array column of every table that contains `text` as is."""
    hits = []
    with connection.cursor() as cursor:
        for table, column, data_type in _columns(TEXT_TYPES):
            if data_type == "bytea":
                condition = f"position(convert_to(%s, 'UTF8') in \"{column}\") > 0"
            else:
                condition = f'position(lower(%s) in lower("{column}"::text)) > 0'
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE {condition}', [text])  # noqa: S608
            if cursor.fetchone()[0]:
                hits.append(f"{table}.{column}")
    return hits


def dump_holds(text: str) -> bool:
    """Whether a data-only pg_dump of the database contains `text` (any case)."""
    settings_dict = connection.settings_dict
    dump = subprocess.run(  # noqa: S603
        [
            str(client_binary("pg_dump")),
            "--data-only",
            "-h",
            settings_dict["HOST"],
            "-p",
            str(settings_dict["PORT"] or "5432"),
            "-U",
            settings_dict["USER"] or "postgres",
            settings_dict["NAME"],
        ],
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    assert "memoryhub_memory" in dump  # The dump did include the tables.
    return text.lower() in dump.lower()


def _kept_ciphers() -> list[UserCipher | WorkspaceCipher]:
    """A cipher for every data key still in the database: users' and workspaces'."""
    users = [
        cipher_for(user_id, create=False)
        for user_id in UserKey.objects.values_list("user_id", flat=True)
    ]
    workspaces = [
        workspace_cipher(workspace_id, create=False)
        for workspace_id in WorkspaceKey.objects.values_list("workspace_id", flat=True)
    ]
    return [*users, *workspaces]


def _sealed_values() -> Iterator[tuple[str, str, str, bytes]]:
    """(table, column, row id, bytes) of every non-null bytea value in the database."""
    with connection.cursor() as cursor:
        for table, column, _ in _columns(("bytea",)):
            pk = connection.introspection.get_primary_key_column(cursor, table)
            if pk is None:
                continue
            cursor.execute(
                f'SELECT "{pk}"::text, "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL'  # noqa: S608
            )
            for row_id, value in cursor.fetchall():
                yield table, column, row_id, bytes(value)


def decryptable_holding(text: str) -> list[str]:
    """Every value that some kept key decrypts, under some binding, to a text containing `text`.

    A forget that left a row behind is found here even though the row is ciphertext: the
    user's key (or the workspace's) is still there to open it.
    """
    ciphers = _kept_ciphers()
    hits = []
    for table, column, row_id, blob in _sealed_values():
        fields = {*FIELD_NAMES, column.removesuffix("_ciphertext")}
        for cipher in ciphers:
            for label in TABLE_LABELS:
                for field in fields:
                    try:
                        plain = cipher.decrypt(blob, table=label, row_id=row_id, field=field)
                    except (DecryptionError, UnicodeDecodeError):
                        continue
                    if text.lower() in plain.lower():
                        hits.append(f"{table}.{column}:{row_id}")
    return hits


def blind_index_holding(word: str) -> list[str]:
    """Memories of any user whose blind index still holds `word` under that user's key."""
    hits = []
    for user_id in UserKey.objects.values_list("user_id", flat=True):
        token = cipher_for(user_id, create=False).blind_tokens(word)[0]
        for memory_id in (
            Memory.objects.for_owner(user=user_id, mode=None)
            .filter(blind_tokens__contains=[token])
            .values_list("pk", flat=True)
        ):
            hits.append(f"memory:{memory_id}")
    return hits
