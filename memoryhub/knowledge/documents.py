"""Write the workspace knowledge base: add, edit, publish and unpublish documents.

Every document is chunked and embedded the same way, whether it came from an approved
candidate or was pasted or uploaded by a reviewer, so search treats them alike.
"""

from __future__ import annotations

from uuid import UUID

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.embeddings import Embedder
from memoryhub.errors import ContentTooLargeError, InvalidInputError
from memoryhub.models import KnowledgeChunk, KnowledgeDocument, LearningCandidate, User, Workspace
from memoryhub.services.write_checks import check_storable

from .chunking import chunk_text
from .queries import get_document

MAX_TITLE_CHARS = 200
MAX_DOCUMENT_CHARS = 200_000


def _check_text(value: str, *, field: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(gettext_noop("{field} must not be empty"), field=field)
    check_storable(value, field=field)
    if len(value) > limit:
        raise ContentTooLargeError(
            gettext_noop("{field} is longer than {limit} characters"), field=field, limit=limit
        )
    return value.strip()


def title_from(text: str) -> str:
    """A title for a document from its first line, cut at a word within the title limit."""
    first_line = next((line.strip(" #") for line in text.splitlines() if line.strip()), "")
    if len(first_line) <= MAX_TITLE_CHARS:
        return first_line or "Untitled"
    return first_line[: MAX_TITLE_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _write_chunks(document: KnowledgeDocument, embedder: Embedder) -> list[KnowledgeChunk]:
    """Replace the document's chunks; each passage is embedded with the title in front of it.

    The title (a question, for a reviewed answer) makes every passage of a long document
    findable by the question it answers, not only the first one.
    """
    passages = chunk_text(document.body)
    vectors = embedder.embed([f"{document.title}\n\n{passage}" for passage in passages])
    KnowledgeChunk.objects.filter(document=document).delete()
    return KnowledgeChunk.objects.bulk_create(
        KnowledgeChunk(
            document=document,
            workspace_id=document.workspace_id,
            position=position,
            text=passage,
            embedding=vector,
            embedding_model=embedder.name,
        )
        for position, (passage, vector) in enumerate(zip(passages, vectors, strict=True))
    )


def publish_document(
    *,
    workspace: Workspace,
    title: str,
    body: str,
    source: str,
    embedder: Embedder,
    created_by: User | None = None,
    source_candidate: LearningCandidate | None = None,
) -> KnowledgeDocument:
    """Create a document, chunk and embed it, and publish it at once."""
    if source not in KnowledgeDocument.Source.values:
        raise InvalidInputError(gettext_noop("unknown document source"))
    body = _check_text(body, field="body", limit=MAX_DOCUMENT_CHARS)
    title = _check_text(title or title_from(body), field="title", limit=MAX_TITLE_CHARS)
    with transaction.atomic():
        document = KnowledgeDocument.objects.create(
            workspace=workspace,
            title=title,
            body=body,
            source=source,
            source_candidate=source_candidate,
            created_by=created_by,
            is_published=True,
        )
        _write_chunks(document, embedder)
    return document


def edit_document(
    *,
    workspace: Workspace,
    document_id: UUID | str,
    title: str,
    body: str,
    embedder: Embedder,
) -> KnowledgeDocument:
    """Change a document's title and text; it is chunked and embedded again."""
    body = _check_text(body, field="body", limit=MAX_DOCUMENT_CHARS)
    title = _check_text(title or title_from(body), field="title", limit=MAX_TITLE_CHARS)
    with transaction.atomic():
        document = get_document(workspace=workspace, document_id=document_id)
        document.title = title
        document.body = body
        document.updated_at = timezone.now()
        document.save(update_fields=["title", "body", "updated_at"])
        _write_chunks(document, embedder)
    return document


def set_published(
    *, workspace: Workspace, document_id: UUID | str, is_published: bool
) -> KnowledgeDocument:
    """Publish or unpublish a document: only published ones are searched and injected."""
    document = get_document(workspace=workspace, document_id=document_id)
    if document.is_published != is_published:
        document.is_published = is_published
        document.updated_at = timezone.now()
        document.save(update_fields=["is_published", "updated_at"])
    return document
