"""Workspace data keys: created once, bound to the workspace, rotated and shredded like users'."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from memoryhub import crypto
from memoryhub.errors import DecryptionError, KeyDestroyedError
from memoryhub.keyring import (
    cipher_for,
    destroy_workspace_key,
    master_keys,
    workspace_cipher,
    workspace_owner_id,
)
from memoryhub.models import WorkspaceKey
from tests import factories


def _seal(workspace, text="Hotel Lumiere"):
    return workspace_cipher(workspace).encrypt(text, table="graph_node", row_id="n1", field="text")


def test_a_workspace_key_is_created_once_and_opens_what_it_sealed(workspace):
    blob = _seal(workspace)
    assert WorkspaceKey.objects.filter(workspace=workspace).count() == 1
    again = workspace_cipher(workspace, create=False)
    assert again.decrypt(blob, table="graph_node", row_id="n1", field="text") == "Hotel Lumiere"
    assert WorkspaceKey.objects.filter(workspace=workspace).count() == 1


def test_another_workspace_key_cannot_open_it(workspace):
    blob = _seal(workspace)
    other = workspace_cipher(factories.make_workspace())
    with pytest.raises(DecryptionError):
        other.decrypt(blob, table="graph_node", row_id="n1", field="text")


def test_a_ciphertext_moved_to_another_row_does_not_open(workspace):
    blob = _seal(workspace)
    with pytest.raises(DecryptionError):
        workspace_cipher(workspace).decrypt(blob, table="graph_node", row_id="n2", field="text")


def test_the_binding_can_never_equal_a_user_id(workspace, user):
    owner = workspace_owner_id(workspace.pk)
    assert owner.version == 5
    assert user.pk.version == 4


def test_key_hashes_ignore_case_accents_and_spacing_but_differ_per_workspace(workspace):
    cipher = workspace_cipher(workspace)
    assert cipher.key_hash("Hôtel  Lumière") == cipher.key_hash("hotel lumiere")
    assert cipher.key_hash("Hotel Lumiere") != cipher.key_hash("Hotel Soleil")
    other = workspace_cipher(factories.make_workspace())
    assert other.key_hash("Hotel Lumiere") != cipher.key_hash("Hotel Lumiere")


def test_shredding_the_workspace_key_makes_its_ciphertext_unreadable(workspace):
    blob = _seal(workspace)
    assert destroy_workspace_key(workspace)
    with pytest.raises(KeyDestroyedError):
        workspace_cipher(workspace, create=False)
    with pytest.raises(DecryptionError):
        workspace_cipher(workspace).decrypt(blob, table="graph_node", row_id="n1", field="text")


def test_rotation_rewraps_workspace_keys_too(workspace, settings):
    blob = _seal(workspace)
    old_entry = settings.MEMORYHUB_MASTER_KEYS
    new_entry = crypto.generate_master_key_entry("rotated")
    settings.MEMORYHUB_MASTER_KEYS = f"{new_entry},{old_entry}"
    call_command("rotate_master_key", verbosity=0)
    assert WorkspaceKey.objects.get(workspace=workspace).master_key_id == "rotated"
    settings.MEMORYHUB_MASTER_KEYS = new_entry  # The old master key is gone for good.
    assert master_keys()[0].key_id == "rotated"
    cipher = workspace_cipher(workspace, create=False)
    assert cipher.decrypt(blob, table="graph_node", row_id="n1", field="text") == "Hotel Lumiere"


def test_a_cipher_never_shows_its_data_key(workspace, user):
    for cipher in (workspace_cipher(workspace), cipher_for(user)):
        assert cipher.data_key.hex() not in repr(cipher)
        assert repr(cipher) in {
            f"WorkspaceCipher(workspace_id={workspace.pk})",
            f"UserCipher(user_id={user.pk})",
        }
