"""Reads of the knowledge domain: the knowledge base and its search, the user's names, an
answer's owner.

Knowledge documents are workspace data, not any user's; reading the user's names decrypts
their memories, so it writes an audit row here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Count
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder
from memoryhub.errors import NotFoundError
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import memories_of, open_payload
from memoryhub.models import AnswerRecord, KnowledgeChunk, KnowledgeDocument, User, Workspace
from memoryhub.vector_search import cosine_distance_sql

# Slots whose value is a name of the user (see memoryhub/extraction: "name" is the usual one).
NAME_SLOTS = ("name", "first_name", "last_name", "full_name")
# A passage less similar than this to the question is noise, not knowledge, for it.
MIN_KNOWLEDGE_SCORE = 0.35
MAX_KNOWLEDGE_K = 20


@dataclass(frozen=True)
class KnowledgePassage:
    """A passage of a published knowledge document that answers a query, with its similarity."""

    document_id: UUID
    chunk_id: int
    title: str
    text: str
    score: float


def known_names_of(*, user: User) -> tuple[str, ...]:
    """The user's names: account and display names, and name facts of every mode (audited)."""
    cipher = cipher_for(user)
    slot_hashes = [cipher.slot_hash(slot) for slot in NAME_SLOTS]
    rows = list(memories_of(user=user, mode=None).filter(slot_hash__in=slot_hashes))
    names = [user.display_name, user.first_name, user.last_name]
    for row in rows:
        payload = open_payload(row, cipher)
        value = payload.get("value")
        if isinstance(value, str):
            names.append(value)
    if rows:
        record_access(
            actor=Actor.system("review scrubber"),
            subject_user_id=user.pk,
            action=AuditAction.REVIEW_NAMES_READ,
            object_ids=[row.pk for row in rows],
        )
    return tuple(dict.fromkeys(name.strip() for name in names if name and name.strip()))


def answer_owner(*, answer_id: UUID | str) -> tuple[UUID, str]:
    """The user id and mode slug of an answer, so the API can check the caller may reach them.

    Only ids leave this function: the caller resolves its scope before reading anything.
    """
    row = (
        AnswerRecord.objects.filter(pk=answer_id).values_list("user_id", "mode__slug").first()
        if _is_uuid(answer_id)
        else None
    )
    if row is None:
        raise NotFoundError(gettext_noop("answer not found"))
    return row


def _is_uuid(value: UUID | str) -> bool:
    try:
        UUID(str(value))
    except ValueError:
        return False
    return True


def search_knowledge(
    *,
    workspace: Workspace,
    query: str,
    embedder: Embedder | None = None,
    vector: Sequence[float] | None = None,
    vector_model: str | None = None,
    k: int = 3,
    min_score: float = MIN_KNOWLEDGE_SCORE,
) -> list[KnowledgePassage]:
    """The k published passages of the workspace knowledge base most similar to the query.

    Pass the query's `vector` and the model that made it (`vector_model`) when it is embedded
    already (the context assembly embeds each message once), else the `embedder` that embeds it.

    Exact cosine over the workspace's chunks (no approximate index can drop a row). Knowledge
    is workspace data, not any user's, so no audit row is written.
    """
    query = query.strip()
    if not query or k < 1:
        return []
    if vector is None or vector_model is None:
        if embedder is None:
            raise TypeError("search_knowledge needs the query's vector and model or an embedder")
        vector = embedder.embed_query(query)
        vector_model = embedder.name
    # Hand-written SQL: the ORM's compile of this one statement cost more Python than the rest
    # of the search, and read every chunk's vector and document row back for a title (issue 34).
    distance_sql, distance_params = cosine_distance_sql(
        vector, model=vector_model, column="c.embedding"
    )
    sql = f"""
        SELECT c.id, c.document_id, d.title, c.text, c.distance FROM (
            SELECT c.id, c.document_id, c.text, {distance_sql} AS distance
            FROM {KnowledgeChunk._meta.db_table} AS c
            WHERE c.workspace_id = %s
        ) AS c JOIN {KnowledgeDocument._meta.db_table} AS d ON d.id = c.document_id
        WHERE d.is_published AND c.distance <= %s
        ORDER BY c.distance, c.id
        LIMIT %s
    """  # noqa: S608  # Only our own SQL is formatted in; every value is a parameter.
    params: list[Any] = [
        *distance_params,
        workspace.pk,
        1.0 - min_score,
        min(k, MAX_KNOWLEDGE_K),
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [
        KnowledgePassage(
            document_id=document_id,
            chunk_id=chunk_id,
            title=title,
            text=text,
            score=round(1.0 - float(distance), 4),
        )
        for chunk_id, document_id, title, text, distance in rows
    ]


def list_documents(
    *, workspace: Workspace, is_published: bool | None = None
) -> Sequence[KnowledgeDocument]:
    """The workspace's knowledge documents, most recently changed first."""
    queryset = KnowledgeDocument.objects.filter(workspace=workspace).annotate(
        chunk_count=Count("chunks")
    )
    if is_published is not None:
        queryset = queryset.filter(is_published=is_published)
    return list(queryset.select_related("source_candidate", "created_by"))


def get_document(*, workspace: Workspace, document_id: UUID | str) -> KnowledgeDocument:
    """A knowledge document of this workspace; another workspace's id is NotFound."""
    try:
        return KnowledgeDocument.objects.get(workspace=workspace, pk=document_id)
    except (KnowledgeDocument.DoesNotExist, ValueError, ValidationError):
        raise NotFoundError(gettext_noop("document not found")) from None
