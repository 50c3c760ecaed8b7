"""Envelope encryption: AES-256-GCM under per-user data keys wrapped by rotating master keys.

This is the only module that imports `cryptography`. It knows nothing of Django models;
`memoryhub/keyring.py` binds it to users and rows. Every function holding a key or plaintext is
marked `sensitive_variables()`: Django's error reports (the 500 email, the log) show its frame's
variables as stars.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import unicodedata
from dataclasses import dataclass
from uuid import UUID

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.views.decorators.debug import sensitive_variables

from memoryhub.errors import DecryptionError

NONCE_BYTES = 12
KEY_BYTES = 32
# A version byte in front of every ciphertext lets the format change without guessing.
FORMAT_VERSION = b"\x01"


@dataclass(frozen=True)
class MasterKey:
    key_id: str
    secret: bytes

    def __repr__(self) -> str:  # Keep the secret out of tracebacks and logs.
        return f"MasterKey(key_id={self.key_id!r})"


@dataclass(frozen=True)
class FieldBinding:
    """What a ciphertext belongs to; it is authenticated as associated data."""

    user_id: UUID
    table: str
    row_id: str
    field: str

    def as_associated_data(self) -> bytes:
        return json.dumps(
            [str(self.user_id), self.table, self.row_id, self.field], separators=(",", ":")
        ).encode()


@sensitive_variables()
def parse_master_keys(value: str) -> tuple[MasterKey, ...]:
    """Parse "id:base64,id:base64" (newest first); raise ValueError on any malformed entry."""
    keys: list[MasterKey] = []
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        key_id, sep, encoded = entry.partition(":")
        if not sep or not key_id:
            raise ValueError("each master key must look like 'id:base64key'")
        try:
            secret = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            raise ValueError(f"master key {key_id!r} is not valid base64") from None
        if len(secret) != KEY_BYTES:
            raise ValueError(f"master key {key_id!r} must be {KEY_BYTES} bytes")
        keys.append(MasterKey(key_id=key_id, secret=secret))
    if not keys:
        raise ValueError("at least one master key is required")
    if len({key.key_id for key in keys}) != len(keys):
        raise ValueError("master key ids must be unique")
    return tuple(keys)


@sensitive_variables()
def generate_master_key_entry(key_id: str) -> str:
    """Return a new "id:base64" master key entry for MEMORYHUB_MASTER_KEYS."""
    return f"{key_id}:{base64.b64encode(os.urandom(KEY_BYTES)).decode()}"


def generate_data_key() -> bytes:
    return AESGCM.generate_key(bit_length=256)


@sensitive_variables()
def _seal(key: bytes, plaintext: bytes, associated_data: bytes) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return FORMAT_VERSION + nonce + AESGCM(key).encrypt(nonce, plaintext, associated_data)


@sensitive_variables()
def _open(key: bytes, blob: bytes, associated_data: bytes) -> bytes:
    if len(blob) < 1 + NONCE_BYTES + 16 or blob[:1] != FORMAT_VERSION:
        raise DecryptionError("ciphertext is truncated or of an unknown format")
    nonce, body = blob[1 : 1 + NONCE_BYTES], blob[1 + NONCE_BYTES :]
    try:
        return AESGCM(key).decrypt(nonce, body, associated_data)
    except InvalidTag:
        # Deliberately vague: the message must not help an attacker, and never holds plaintext.
        raise DecryptionError(
            "ciphertext does not belong to this user, row and field, or was altered"
        ) from None


@sensitive_variables()
def wrap_data_key(data_key: bytes, *, master: MasterKey, user_id: UUID) -> bytes:
    """Encrypt a data key under a master key, bound to its user."""
    return _seal(master.secret, data_key, f"memoryhub:data-key:{user_id}".encode())


@sensitive_variables()
def unwrap_data_key(
    wrapped: bytes, *, master_keys: tuple[MasterKey, ...], key_id: str, user_id: UUID
) -> bytes:
    """Decrypt a wrapped data key with the master key named `key_id`."""
    for master in master_keys:
        if master.key_id == key_id:
            return _open(master.secret, wrapped, f"memoryhub:data-key:{user_id}".encode())
    raise DecryptionError(f"master key {key_id!r} is not configured (MEMORYHUB_MASTER_KEYS)")


@sensitive_variables()
def encrypt_text(plaintext: str, *, key: bytes, binding: FieldBinding) -> bytes:
    return _seal(key, plaintext.encode("utf-8"), binding.as_associated_data())


@sensitive_variables()
def decrypt_text(blob: bytes, *, key: bytes, binding: FieldBinding) -> str:
    return _open(key, bytes(blob), binding.as_associated_data()).decode("utf-8")


@sensitive_variables()
def derive_subkey(data_key: bytes, purpose: str) -> bytes:
    """Derive an independent key for one purpose (blind index, slot hashes) from a data key."""
    return HKDF(
        algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=purpose.encode()
    ).derive(data_key)


def normalise_token(token: str) -> str:
    """Fold case, accents and compatibility forms so "Éva" and "eva" index alike."""
    decomposed = unicodedata.normalize("NFKD", token.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@sensitive_variables()
def keyed_digest(key: bytes, value: str, *, length: int = 16) -> str:
    """A short keyed hash (HMAC-SHA256, hex) of a normalised value: a blind-index entry."""
    return hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()[:length]


@sensitive_variables()
def hmac_hex(key: bytes, message: bytes) -> str:
    return hmac.new(key, message, hashlib.sha256).hexdigest()
