"""Encryption at rest: no plaintext in the database, row binding, crypto-shredding, rotation."""

from __future__ import annotations

import uuid

import pytest
from django.core.management import call_command

from memoryhub import crypto
from memoryhub.errors import DecryptionError, KeyDestroyedError
from memoryhub.keyring import UserCipher, cipher_for, destroy_user_key
from memoryhub.memory_rows import decrypt_memory
from memoryhub.models import Memory, UserKey
from memoryhub.queries.memories import get_memory
from tests.factories import make_memory
from tests.security.canary_scan import columns_holding, dump_holds

CANARY = "canary-7f3e9b2a-plaintext-must-never-be-stored"


def test_canary_never_appears_in_plaintext_in_any_column(user, personal, embedder, system_actor):
    memory = make_memory(
        user,
        personal,
        f"My secret code is {CANARY}",
        embedder=embedder,
        payload={"note": CANARY, "topics": [CANARY]},
    )
    assert columns_holding(CANARY) == []
    # ...and the domain API still reads it back.
    item = get_memory(user=user, mode=personal, memory_id=memory.id, actor=system_actor)
    assert CANARY in item.content
    assert item.payload["note"] == CANARY


def test_the_plaintext_scan_finds_plaintext_when_there_is_some(user):
    user.display_name = CANARY
    user.save(update_fields=["display_name"])
    assert "memoryhub_user.display_name" in columns_holding(CANARY)


@pytest.mark.django_db(transaction=True)
def test_pg_dump_of_the_database_holds_no_plaintext(user, personal, embedder):
    make_memory(user, personal, f"Remember {CANARY}", embedder=embedder)
    assert not dump_holds(CANARY)  # dump_holds checks the memory table was dumped.


def test_ciphertext_moved_to_another_users_row_fails_to_decrypt(
    user, other_user, personal, embedder
):
    mine = make_memory(user, personal, "Alice's private fact", embedder=embedder)
    theirs_mode = other_user.modes.get(slug="personal")
    theirs = make_memory(other_user, theirs_mode, "Bob's fact", embedder=embedder)
    # An attacker with database access swaps the ciphertexts.
    Memory.all_owners.filter(pk=theirs.pk).update(content_ciphertext=mine.content_ciphertext)
    swapped = Memory.all_owners.get(pk=theirs.pk)
    with pytest.raises(DecryptionError, match="does not belong"):
        decrypt_memory(swapped, cipher_for(other_user))


def test_ciphertext_moved_to_another_row_or_field_of_the_same_user_fails(user, personal, embedder):
    first = make_memory(user, personal, "first fact", embedder=embedder)
    second = make_memory(user, personal, "second fact", embedder=embedder)
    Memory.all_owners.filter(pk=second.pk).update(content_ciphertext=first.content_ciphertext)
    with pytest.raises(DecryptionError):
        decrypt_memory(Memory.all_owners.get(pk=second.pk), cipher_for(user))
    cipher = cipher_for(user)
    with pytest.raises(DecryptionError):
        cipher.decrypt(first.content_ciphertext, table="memory", row_id=first.id, field="payload")


def test_destroying_the_data_key_makes_every_ciphertext_unreadable(user, personal, embedder):
    memory = make_memory(user, personal, "soon shredded", embedder=embedder)
    saved_ciphertext = bytes(memory.content_ciphertext)  # as a backup would hold it
    assert destroy_user_key(user)
    with pytest.raises(KeyDestroyedError):
        cipher_for(user, create=False)
    # Data of theirs still exists: no fresh key is made for it, on any path.
    with pytest.raises(KeyDestroyedError, match="missing although their data exists"):
        cipher_for(user)
    # And no other key opens what the destroyed one sealed.
    other = UserCipher(user_id=user.pk, data_key=crypto.generate_data_key())
    with pytest.raises(DecryptionError):
        other.decrypt(saved_ciphertext, table="memory", row_id=memory.id, field="content")


def test_rotation_rewraps_data_keys_and_data_still_decrypts(user, personal, embedder, settings):
    memory = make_memory(user, personal, "survives rotation", embedder=embedder)
    old_entry = settings.MEMORYHUB_MASTER_KEYS
    new_entry = crypto.generate_master_key_entry("rotated")
    settings.MEMORYHUB_MASTER_KEYS = f"{new_entry},{old_entry}"
    call_command("rotate_master_key", verbosity=0)
    assert UserKey.objects.get(user=user).master_key_id == "rotated"
    # The old master key can now be dropped entirely.
    settings.MEMORYHUB_MASTER_KEYS = new_entry
    row = Memory.objects.for_owner(user=user, mode=personal).get(pk=memory.pk)
    assert decrypt_memory(row, cipher_for(user, create=False)).content == "survives rotation"


def test_malformed_master_keys_are_rejected():
    with pytest.raises(ValueError, match="id:base64key"):
        crypto.parse_master_keys("no-colon-here")
    with pytest.raises(ValueError, match="32 bytes"):
        crypto.parse_master_keys("k1:c2hvcnQ=")


def test_unknown_master_key_id_is_a_clear_error():
    key = crypto.parse_master_keys(crypto.generate_master_key_entry("a"))
    wrapped = crypto.wrap_data_key(crypto.generate_data_key(), master=key[0], user_id=uuid.uuid4())
    with pytest.raises(DecryptionError, match="not configured"):
        crypto.unwrap_data_key(wrapped, master_keys=key, key_id="missing", user_id=uuid.uuid4())
