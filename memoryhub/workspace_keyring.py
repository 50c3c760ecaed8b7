"""Per-workspace data keys: create, load, destroy and re-wrap, and the workspace cipher.

The workspace variant of memoryhub/keyring.py, for data that belongs to a workspace rather
than to one user (the knowledge graph). Ciphertexts and wrapped keys are bound to a UUID
derived from the workspace id: version 5, so it can never equal a user's (version 4) id, and a
workspace's ciphertext or wrapped key can never be passed off as a user's.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from memoryhub import crypto
from memoryhub.errors import KeyDestroyedError
from memoryhub.keyring import master_keys
from memoryhub.models import Workspace, WorkspaceKey

_WORKSPACE_NAMESPACE = uuid.UUID("6f1d4d2e-3c8a-5b7e-9a41-0c2f7e5d9b13")


def workspace_owner_id(workspace_id: int) -> uuid.UUID:
    """The UUID a workspace's ciphertexts and wrapped key are bound to."""
    return uuid.uuid5(_WORKSPACE_NAMESPACE, f"workspace:{workspace_id}")


@dataclass(frozen=True)
class WorkspaceCipher:
    """Encrypts and decrypts one workspace's fields, each bound to its (table, row, field)."""

    workspace_id: int
    data_key: bytes

    def __repr__(self) -> str:
        return f"WorkspaceCipher(workspace_id={self.workspace_id})"

    def _binding(self, table: str, row_id: object, field: str) -> crypto.FieldBinding:
        return crypto.FieldBinding(
            user_id=workspace_owner_id(self.workspace_id),
            table=table,
            row_id=str(row_id),
            field=field,
        )

    def encrypt(self, text: str, *, table: str, row_id: object, field: str) -> bytes:
        return crypto.encrypt_text(
            text, key=self.data_key, binding=self._binding(table, row_id, field)
        )

    def decrypt(self, blob: bytes | memoryview, *, table: str, row_id: object, field: str) -> str:
        return crypto.decrypt_text(
            bytes(blob), key=self.data_key, binding=self._binding(table, row_id, field)
        )

    def key_hash(self, value: str) -> str:
        """A keyed hash of a normalised value: equal for "Hôtel  Lumière" and "hotel lumiere"."""
        key = crypto.derive_subkey(self.data_key, "graph-key")
        normalised = " ".join(crypto.normalise_token(value).split())
        return crypto.keyed_digest(key, normalised, length=64)


def _create_key(workspace_id: int) -> bytes:
    newest = master_keys()[0]
    data_key = crypto.generate_data_key()
    try:
        with transaction.atomic():
            WorkspaceKey.objects.create(
                workspace_id=workspace_id,
                wrapped_key=crypto.wrap_data_key(
                    data_key, master=newest, user_id=workspace_owner_id(workspace_id)
                ),
                master_key_id=newest.key_id,
            )
    except IntegrityError:
        return _load_key(workspace_id)  # Another process created it first.
    return data_key


def _load_key(workspace_id: int) -> bytes:
    row = WorkspaceKey.objects.filter(workspace_id=workspace_id).first()
    if row is None:
        raise KeyDestroyedError("this workspace's data key does not exist")
    return crypto.unwrap_data_key(
        bytes(row.wrapped_key),
        master_keys=master_keys(),
        key_id=row.master_key_id,
        user_id=workspace_owner_id(workspace_id),
    )


def workspace_cipher(workspace: Workspace | int, *, create: bool = True) -> WorkspaceCipher:
    """The workspace's cipher; creates its data key on first use unless `create` is False.

    Raises KeyDestroyedError when the key does not exist and `create` is False.
    """
    workspace_id = workspace.pk if isinstance(workspace, Workspace) else workspace
    if create and not WorkspaceKey.objects.filter(workspace_id=workspace_id).exists():
        return WorkspaceCipher(workspace_id=workspace_id, data_key=_create_key(workspace_id))
    return WorkspaceCipher(workspace_id=workspace_id, data_key=_load_key(workspace_id))


def destroy_workspace_key(workspace: Workspace | int) -> bool:
    """Crypto-shred: delete the workspace's wrapped key so none of its ciphertext opens again."""
    workspace_id = workspace.pk if isinstance(workspace, Workspace) else workspace
    deleted, _ = WorkspaceKey.objects.filter(workspace_id=workspace_id).delete()
    return deleted > 0


def rewrap_workspace_keys() -> int:
    """Re-wrap every workspace key under the newest master key; the data itself is untouched."""
    newest = master_keys()[0]
    count = 0
    for row in WorkspaceKey.objects.exclude(master_key_id=newest.key_id).iterator():
        with transaction.atomic():
            locked = WorkspaceKey.objects.select_for_update().get(pk=row.pk)
            owner = workspace_owner_id(locked.workspace_id)
            data_key = crypto.unwrap_data_key(
                bytes(locked.wrapped_key),
                master_keys=master_keys(),
                key_id=locked.master_key_id,
                user_id=owner,
            )
            locked.wrapped_key = crypto.wrap_data_key(data_key, master=newest, user_id=owner)
            locked.master_key_id = newest.key_id
            locked.save(update_fields=["wrapped_key", "master_key_id"])
        count += 1
    return count
