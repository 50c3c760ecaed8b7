"""An uploaded import file on disk, sealed chunk by chunk, read back as a stream for the parser.

The file waits for the Celery task, so it sits on disk for a while: it is written sealed
(AES-256-GCM, a fresh key per file, each chunk numbered so chunks cannot be swapped or cut
off), and its key is kept in the job row sealed with the user's data key. Deleting the user's
key shreds the file too.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.utils.translation import gettext_noop

from memoryhub.errors import ContentTooLargeError

CHUNK_BYTES = 1 << 20
_HEADER = struct.Struct(">I")
_NONCE_BYTES = 12


@dataclass(frozen=True)
class SealedUpload:
    """Where the sealed file is, its key, its size and the SHA-256 of its plaintext."""

    path: Path
    key: bytes
    size: int
    sha256: str


def upload_dir() -> Path:
    path = Path(settings.MEMORYHUB_IMPORT_DIR)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def _associated_data(index: int, is_last: bool) -> bytes:
    return struct.pack(">Q?", index, is_last)


def seal_upload(chunks: Iterable[bytes], *, name: UUID, limit: int) -> SealedUpload:
    """Write the chunks sealed to a new file; raise ContentTooLargeError past `limit` bytes."""
    key = AESGCM.generate_key(bit_length=256)
    aead = AESGCM(key)
    digest = hashlib.sha256()
    path = upload_dir() / f"{name}.sealed"
    size = 0
    index = 0
    pending = b""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as out:

            def write(block: bytes, *, is_last: bool) -> None:
                nonlocal index
                nonce = os.urandom(_NONCE_BYTES)
                sealed = aead.encrypt(nonce, block, _associated_data(index, is_last))
                out.write(_HEADER.pack(len(sealed)) + nonce + sealed)
                index += 1

            for chunk in chunks:
                size += len(chunk)
                if size > limit:
                    raise ContentTooLargeError(
                        gettext_noop("the import file is over {limit} bytes"), limit=limit
                    )
                digest.update(chunk)
                pending += chunk
                while len(pending) >= CHUNK_BYTES:
                    write(pending[:CHUNK_BYTES], is_last=False)
                    pending = pending[CHUNK_BYTES:]
            write(pending, is_last=True)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return SealedUpload(path=path, key=key, size=size, sha256=digest.hexdigest())


class SealedReader:
    """A read-only binary stream of a sealed upload's plaintext (what ijson reads)."""

    def __init__(self, path: Path, key: bytes) -> None:
        self._file = path.open("rb")
        self._aead = AESGCM(key)
        self._index = 0
        self._buffer = b""
        self._done = False

    def _next_chunk(self) -> bytes:
        header = self._file.read(_HEADER.size)
        if len(header) < _HEADER.size:
            raise ValueError("the sealed import file is cut short")
        (length,) = _HEADER.unpack(header)
        nonce = self._file.read(_NONCE_BYTES)
        sealed = self._file.read(length)
        # The last chunk says so in its associated data: a file cut at a chunk boundary fails.
        is_last = self._file.peek(1) == b"" if hasattr(self._file, "peek") else False
        block = self._aead.decrypt(nonce, sealed, _associated_data(self._index, is_last))
        self._index += 1
        self._done = is_last
        return block

    def read(self, size: int = -1) -> bytes:
        while not self._done and (size < 0 or len(self._buffer) < size):
            self._buffer += self._next_chunk()
        if size < 0:
            size = len(self._buffer)
        block, self._buffer = self._buffer[:size], self._buffer[size:]
        return block

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> SealedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def delete_upload(path: str) -> None:
    """Remove an upload's file (nothing if it is already gone)."""
    if path:
        Path(path).unlink(missing_ok=True)
