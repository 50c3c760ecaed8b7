"""A conversation message's sealed form: sealing its text with its vector and flag, opening it.

Below services and queries, like memory_rows.py for memories: the message table binding
appears nowhere else, so every writer and reader of a message's text goes through here.
"""

from __future__ import annotations

from memoryhub.injection import looks_like_instructions
from memoryhub.keyring import UserCipher
from memoryhub.models import Message
from memoryhub.sealed_tables import MESSAGE_TABLE


def seal_message(
    message: Message,
    *,
    cipher: UserCipher,
    content: str,
    embedding: list[float] | None,
    embedding_model: str,
) -> None:
    """Seal a message's text into its (unsaved) row, flagged when it reads like instructions.

    `embedding` is the text's vector and `embedding_model` the model that made it
    (memoryhub/embeddings.py MODELS): searches compare only vectors of one model.
    """
    # Security invariant: only ciphertext reaches the ORM.
    message.content_ciphertext = cipher.encrypt(
        content, table=MESSAGE_TABLE, row_id=message.pk, field="content"
    )
    message.embedding = embedding
    message.embedding_model = embedding_model if embedding is not None else ""
    message.is_flagged = looks_like_instructions(content)


def open_message(message: Message, cipher: UserCipher) -> str:
    """A message's text (the caller audits the read where a person or agent sees it)."""
    return cipher.decrypt(
        message.content_ciphertext, table=MESSAGE_TABLE, row_id=message.pk, field="content"
    )
