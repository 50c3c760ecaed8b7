"""Data keys of users and workspaces: create, load, destroy (crypto-shred), re-wrap; the ciphers.

One implementation serves both owners. A user's ciphertexts and wrapped key are bound to the
user's id; a workspace's (the knowledge graph: data of no single user) to a UUID derived from
the workspace id: version 5, so it can never equal a user's (version 4) id, and a workspace's
ciphertext or wrapped key can never be passed off as a user's.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError, connections, router, transaction
from django.views.decorators.debug import sensitive_variables

from memoryhub import crypto, text_patterns
from memoryhub.errors import DecryptionError, KeyDestroyedError
from memoryhub.models import (
    AnswerRecord,
    JournalEntry,
    LearningCandidate,
    Memory,
    Session,
    User,
    UserKey,
    Workspace,
    WorkspaceKey,
)

TOKEN_PATTERN = text_patterns.compile(r"\w+", text_patterns.UNICODE)
# A memory written as a transcript line, "Caroline: I went hiking", names its speaker: one to
# three words before a colon and a space. Times ("10:30") and links ("https://") do not match.
SPEAKER_PATTERN = text_patterns.compile(
    r"\A\s*([^\W\d_][\w'’.-]*(?:[ \t]+[^\W\d_][\w'’.-]*){0,2})[ \t]*:\s"
)
# Labels that open a line the way a speaker's name does ("Note: call the bank"), normalised.
NOT_SPEAKERS = frozenset(
    {
        *("note", "notes", "nb", "ps", "fyi", "reminder", "todo", "to do", "update", "edit"),
        *("summary", "question", "answer", "q", "a", "tip", "warning", "important", "status"),
        *("subject", "re", "fwd", "decision", "action", "action item", "next steps", "deadline"),
        *("date", "time", "location", "address", "phone", "email", "goal", "idea", "task"),
        *("remarque", "rappel", "objet", "sujet", "reponse", "attention", "a faire"),
    }
)
# Secrets of no user's data (TOTP seeds): "<prefix>:<master key id>:<base64 ciphertext>". No
# base32 TOTP secret or hex recovery seed starts with it, so older plaintext is told apart.
SEALED_VALUE_PREFIX = "mhsec1"
# The owner a sealed secret is bound to: a fixed UUID that is no user's (version 5).
SECRET_OWNER = UUID("2c4f3a5e-8d1b-5e9f-a7c3-6b0d2e4f8a19")
_WORKSPACE_NAMESPACE = UUID("6f1d4d2e-3c8a-5b7e-9a41-0c2f7e5d9b13")


@cache
@sensitive_variables()  # The whole MEMORYHUB_MASTER_KEYS value.
def _master_keys(configured: str) -> tuple[crypto.MasterKey, ...]:
    return crypto.parse_master_keys(configured)


def master_keys() -> tuple[crypto.MasterKey, ...]:
    """The configured master keys, newest first."""
    return _master_keys(settings.MEMORYHUB_MASTER_KEYS)


def tokenize(text: str) -> list[str]:
    """Split text into normalised word tokens (the unit of the blind index)."""
    return [crypto.normalise_token(t) for t in TOKEN_PATTERN.findall(text)]


def speaker_of(text: str) -> list[str]:
    """The normalised words of the speaker a memory's text opens with ("Caroline: …"), if any.

    A label ("Note: …", "Rappel : …") is no speaker.
    """
    match = SPEAKER_PATTERN.match(text)
    if not match:
        return []
    words = tokenize(match.group(1))
    return [] if " ".join(words) in NOT_SPEAKERS else words


def workspace_owner_id(workspace_id: int) -> UUID:
    """The UUID a workspace's ciphertexts and wrapped key are bound to."""
    return uuid.uuid5(_WORKSPACE_NAMESPACE, f"workspace:{workspace_id}")


@dataclass(frozen=True, repr=False)
class _FieldCipher:
    """Encrypts and decrypts an owner's fields, each bound to its (owner, table, row, field)."""

    data_key: bytes

    @property
    def owner_id(self) -> UUID:
        raise NotImplementedError

    def __repr__(self) -> str:
        # Never the data key: a cipher may end up in a log line or a traceback.
        return f"{type(self).__name__}({self._owner_label})"

    @property
    def _owner_label(self) -> str:
        raise NotImplementedError

    def _binding(self, table: str, row_id: object, field: str) -> crypto.FieldBinding:
        return crypto.FieldBinding(
            user_id=self.owner_id, table=table, row_id=str(row_id), field=field
        )

    def encrypt(self, text: str, *, table: str, row_id: object, field: str) -> bytes:
        return crypto.encrypt_text(
            text, key=self.data_key, binding=self._binding(table, row_id, field)
        )

    def decrypt(self, blob: bytes | memoryview, *, table: str, row_id: object, field: str) -> str:
        return crypto.decrypt_text(
            bytes(blob), key=self.data_key, binding=self._binding(table, row_id, field)
        )


# repr=False: the base class's __repr__, which leaves the data key out, stays.
@dataclass(frozen=True, repr=False)
class UserCipher(_FieldCipher):
    """Encrypts and decrypts one user's fields, each bound to its (table, row, field)."""

    user_id: UUID

    @property
    def owner_id(self) -> UUID:
        return self.user_id

    @property
    def _owner_label(self) -> str:
        return f"user_id={self.user_id}"

    def encrypt_json(self, value: Any, *, table: str, row_id: object, field: str) -> bytes:
        return self.encrypt(
            json.dumps(value, sort_keys=True), table=table, row_id=row_id, field=field
        )

    def decrypt_json(
        self, blob: bytes | memoryview | None, *, table: str, row_id: object, field: str
    ) -> Any:
        if blob is None:
            return {}
        return json.loads(self.decrypt(blob, table=table, row_id=row_id, field=field))

    @sensitive_variables("key")
    def blind_tokens(self, text: str) -> list[str]:
        """Keyed hashes of the text's distinct tokens: lexical search without plaintext."""
        key = crypto.derive_subkey(self.data_key, "blind-index")
        # Each distinct word is normalised and hashed once: a long text repeats most of them.
        words = {crypto.normalise_token(word) for word in set(TOKEN_PATTERN.findall(text))}
        return sorted({crypto.keyed_digest(key, word) for word in words})

    @sensitive_variables("key")
    def speaker_tokens(self, words: list[str]) -> list[str]:
        """Keyed hashes of speaker names, under a key of their own: they never match a word."""
        if not words:  # Most memories name no speaker: no key to derive.
            return []
        key = crypto.derive_subkey(self.data_key, "blind-speaker")
        return [crypto.keyed_digest(key, crypto.normalise_token(word)) for word in words]

    def memory_index(self, content: str) -> list[str]:
        """A memory's blind index: its words, and the speaker it opens with ("Caroline: …")."""
        return sorted({*self.blind_tokens(content), *self.speaker_tokens(speaker_of(content))})

    def journal_key_hash(self, key: str) -> str:
        """A keyed hash of an agent's journal key: a blind index, so equal keys still match."""
        return crypto.keyed_digest(
            crypto.derive_subkey(self.data_key, "journal-key"), key, length=64
        )

    @sensitive_variables("key")
    def slot_hash(self, slot: str) -> str:
        """A keyed hash of a contradiction slot name, so slots stay unreadable at rest."""
        key = crypto.derive_subkey(self.data_key, "slot")
        return crypto.keyed_digest(key, crypto.normalise_token(slot.strip()), length=32)


@dataclass(frozen=True, repr=False)
class WorkspaceCipher(_FieldCipher):
    """Encrypts and decrypts one workspace's fields, each bound to its (table, row, field)."""

    workspace_id: int

    @property
    def owner_id(self) -> UUID:
        return workspace_owner_id(self.workspace_id)

    @property
    def _owner_label(self) -> str:
        return f"workspace_id={self.workspace_id}"

    @sensitive_variables("key")
    def key_hash(self, value: str) -> str:
        """A keyed hash of a normalised value: equal for "Hôtel  Lumière" and "hotel lumiere"."""
        key = crypto.derive_subkey(self.data_key, "graph-key")
        normalised = " ".join(crypto.normalise_token(value).split())
        return crypto.keyed_digest(key, normalised, length=64)


@dataclass(frozen=True)
class _KeyStore:
    """Where one kind of owner's wrapped data keys live, and what each is bound to."""

    model: type[UserKey] | type[WorkspaceKey]
    owner_field: str
    bind: Callable[[Any], UUID]
    missing: str

    def rows(self, owner: Any) -> Any:
        return self.model.objects.filter(**{self.owner_field: owner})

    @sensitive_variables()
    def unwrap(self, row: UserKey | WorkspaceKey) -> bytes:
        return self._unwrap(row.wrapped_key, row.master_key_id, getattr(row, self.owner_field))

    @sensitive_variables()
    def _unwrap(self, wrapped_key: Any, master_key_id: str, owner: Any) -> bytes:
        return crypto.unwrap_data_key(
            bytes(wrapped_key),
            master_keys=master_keys(),
            key_id=master_key_id,
            user_id=self.bind(owner),
        )

    def _read(self, owner: Any) -> tuple[Any, str, Any] | None:
        """The owner's wrapped key, its master key's id and the owner as stored, or None.

        Hand-written SQL: every request opens a data key, and the ORM's compile of this one
        lookup cost more Python than the unwrapping (issue 34).
        """
        # The owner field is the attname of a concrete column ("user_id", "workspace_id").
        column = next(
            f.column for f in self.model._meta.concrete_fields if f.attname == self.owner_field
        )
        sql = (
            f'SELECT wrapped_key, master_key_id, "{column}" '  # noqa: S608  # Our own names.
            f'FROM {self.model._meta.db_table} WHERE "{column}" = %s LIMIT 1'
        )
        with connections[router.db_for_read(self.model)].cursor() as cursor:
            cursor.execute(sql, [owner])
            found = cursor.fetchone()
        return None if found is None else (found[0], found[1], found[2])

    def load(self, owner: Any) -> bytes:
        row = self.rows(owner).first()
        if row is None:
            raise KeyDestroyedError(self.missing)
        return self.unwrap(row)

    @sensitive_variables("data_key")
    def create(self, owner: Any) -> bytes:
        newest = master_keys()[0]
        data_key = crypto.generate_data_key()
        try:
            with transaction.atomic():
                self.model.objects.create(
                    **{self.owner_field: owner},
                    wrapped_key=crypto.wrap_data_key(
                        data_key, master=newest, user_id=self.bind(owner)
                    ),
                    master_key_id=newest.key_id,
                )
        except IntegrityError:
            return self.load(owner)  # Another process created it first.
        return data_key

    def open(self, owner: Any, *, create: bool, before_create: Callable[[], None]) -> bytes:
        # One query on the hot path (every read decrypts): load the row, create only when missing.
        found = self._read(owner)
        if found is not None:
            return self._unwrap(*found)
        if not create:
            raise KeyDestroyedError(self.missing)
        before_create()
        return self.create(owner)

    def destroy(self, owner: Any) -> bool:
        deleted, _ = self.rows(owner).delete()
        return int(deleted) > 0

    @sensitive_variables("data_key")
    def rewrap_all(self) -> int:
        newest = master_keys()[0]
        count = 0
        for row in self.model.objects.exclude(master_key_id=newest.key_id).iterator():
            with transaction.atomic():
                locked = self.model.objects.select_for_update().get(pk=row.pk)
                data_key = self.unwrap(locked)
                locked.wrapped_key = crypto.wrap_data_key(
                    data_key, master=newest, user_id=self.bind(getattr(locked, self.owner_field))
                )
                locked.master_key_id = newest.key_id
                locked.save(update_fields=["wrapped_key", "master_key_id"])
            count += 1
        return count


_USER_KEYS = _KeyStore(
    model=UserKey,
    owner_field="user_id",
    bind=lambda user_id: user_id,
    missing="this user's data key does not exist (destroyed or never created)",
)
_WORKSPACE_KEYS = _KeyStore(
    model=WorkspaceKey,
    owner_field="workspace_id",
    bind=workspace_owner_id,
    missing="this workspace's data key does not exist",
)


def has_sealed_data(user_id: UUID) -> bool:
    """Whether any row holds ciphertext under this user's data key."""
    # Messages and versions hang off sessions and memories: those two stand for them.
    sealed = [
        Memory.all_owners.filter(user_id=user_id),
        Session.objects.filter(user_id=user_id),
        JournalEntry.objects.filter(user_id=user_id),
        AnswerRecord.objects.filter(user_id=user_id),
        LearningCandidate.objects.filter(user_id=user_id),
    ]
    return any(rows.exists() for rows in sealed)


def _refuse_fresh_key_for_old_data(user_id: UUID) -> None:
    # Security invariant: a missing key for existing data is an error, never a fresh key. A
    # fresh key would open nothing of the old data, yet new writes under it would sit next to
    # unreadable rows: the user half shredded. Account deletion is atomic, so this only
    # happens when a key was lost or destroyed out of band.
    if has_sealed_data(user_id):
        raise KeyDestroyedError("this user's data key is missing although their data exists")


@sensitive_variables("data_key")
def cipher_for(user: User | UUID, *, create: bool = True) -> UserCipher:
    """The user's cipher; creates the data key on first use unless `create` is False.

    Raises KeyDestroyedError when the key is missing and `create` is False, or when it is
    missing although ciphertext of the user exists (never a fresh key for old data).
    """
    user_id = user.pk if isinstance(user, User) else user
    data_key = _USER_KEYS.open(
        user_id, create=create, before_create=lambda: _refuse_fresh_key_for_old_data(user_id)
    )
    return UserCipher(user_id=user_id, data_key=data_key)


@sensitive_variables("data_key")
def workspace_cipher(workspace: Workspace | int, *, create: bool = True) -> WorkspaceCipher:
    """The workspace's cipher; creates its data key on first use unless `create` is False.

    Raises KeyDestroyedError when the key does not exist and `create` is False.
    """
    workspace_id = workspace.pk if isinstance(workspace, Workspace) else workspace
    data_key = _WORKSPACE_KEYS.open(workspace_id, create=create, before_create=lambda: None)
    return WorkspaceCipher(workspace_id=workspace_id, data_key=data_key)


def destroy_user_key(user: User | UUID) -> bool:
    """Crypto-shred: delete the user's wrapped data key so none of their ciphertext opens again."""
    return _USER_KEYS.destroy(user.pk if isinstance(user, User) else user)


def destroy_workspace_key(workspace: Workspace | int) -> bool:
    """Crypto-shred: delete the workspace's wrapped key so none of its ciphertext opens again."""
    return _WORKSPACE_KEYS.destroy(workspace.pk if isinstance(workspace, Workspace) else workspace)


@sensitive_variables()
def _secret_key(master: crypto.MasterKey, purpose: str) -> bytes:
    return crypto.derive_subkey(master.secret, f"sealed-secret:{purpose}")


def _secret_binding(purpose: str) -> crypto.FieldBinding:
    return crypto.FieldBinding(
        user_id=SECRET_OWNER, table="sealed_secret", row_id="", field=purpose
    )


def is_sealed_secret(value: str) -> bool:
    return value.startswith(f"{SEALED_VALUE_PREFIX}:")


@sensitive_variables()
def seal_secret(text: str, *, purpose: str) -> str:
    """Encrypt a secret that is no user's data (a TOTP seed) under the newest master key."""
    newest = master_keys()[0]
    blob = crypto.encrypt_text(
        text, key=_secret_key(newest, purpose), binding=_secret_binding(purpose)
    )
    return f"{SEALED_VALUE_PREFIX}:{newest.key_id}:{base64.b64encode(blob).decode()}"


@sensitive_variables()
def open_secret(value: str, *, purpose: str) -> str:
    """Decrypt what seal_secret made; a value it did not make (stored before) comes back as is.

    Raises DecryptionError for a sealed value that is altered or whose master key is gone.
    """
    if not is_sealed_secret(value):
        return value
    _, key_id, encoded = value.split(":", 2)
    master = next((key for key in master_keys() if key.key_id == key_id), None)
    if master is None:
        raise DecryptionError(f"master key {key_id!r} is not configured (MEMORYHUB_MASTER_KEYS)")
    try:
        blob = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise DecryptionError("a sealed secret is not valid base64") from None
    return crypto.decrypt_text(
        blob, key=_secret_key(master, purpose), binding=_secret_binding(purpose)
    )


def rewrap_all_keys() -> int:
    """Re-wrap every user data key under the newest master key; the data itself is untouched."""
    return _USER_KEYS.rewrap_all()


def rewrap_workspace_keys() -> int:
    """Re-wrap every workspace key under the newest master key; the data itself is untouched."""
    return _WORKSPACE_KEYS.rewrap_all()
