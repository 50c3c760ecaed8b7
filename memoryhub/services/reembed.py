"""Embed stored vectors again with another model: how a deployment or a workspace switches.

Each table that holds vectors (memories, messages, knowledge chunks, learning candidates)
records which model made each one (`embedding_model`). This finds the rows of any other model,
a page at a time, reads the text their vector was made from (decrypting it under its owner's
key), embeds the page with the new model and writes the vectors with the model's name.

A workspace may choose its own model (`Workspace.embedding_model`): a run for one workspace
touches only its rows; a run for the deployment's default touches only the workspaces that
follow the default (blank `embedding_model`), never one that chose its own.

- **Resumable**: each page is committed on its own, and a row's model says whether it is done,
  so a run stopped anywhere (a crash, Ctrl-C) continues where it stopped when started again.
- **Safe while agents read and write**: a page is embedded outside any transaction, then
  written in a short one that locks its rows and skips any whose text changed meanwhile (the
  edit wrote its own vector, and a later pass re-embeds it if its model is still the old
  one). Searches never compare vectors of two models (memoryhub/vector_search.py): during
  the switch, a row not yet re-embedded is still found by its words, not by its meaning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db import models, transaction
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import MODELS, Embedder
from memoryhub.errors import InvalidInputError, KeyDestroyedError
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.memory_rows import open_content
from memoryhub.message_rows import open_message
from memoryhub.models import KnowledgeChunk, LearningCandidate, Memory, Message, Workspace
from memoryhub.sealed_tables import CANDIDATE_TABLE

BATCH = 128


@dataclass(frozen=True)
class _Table:
    """One table of vectors: its rows, and the text each row's vector was made from."""

    name: str
    model: type[models.Model]
    # The columns read to rebuild the text; compared again before writing (changed: skipped).
    columns: tuple[str, ...]
    owner: Callable[[Any], UUID | None]
    text: Callable[[Any, UserCipher | None], str]
    # The lookup from a row to its workspace's id.
    workspace_id: str

    def manager(self) -> Any:
        # Every owner: a switch of model is the deployment's, not one user's.
        return Memory.all_owners if self.model is Memory else self.model._default_manager

    def rows(self, workspaces: models.QuerySet[Workspace] | None = None) -> models.QuerySet[Any]:
        rows: models.QuerySet[Any] = self.manager().filter(embedding__isnull=False)
        if workspaces is not None:
            rows = rows.filter(**{f"{self.workspace_id}__in": workspaces.values("pk")})
        return rows


def _memory_text(row: Memory, cipher: UserCipher | None) -> str:
    assert cipher is not None  # noqa: S101  # Memories always have an owner.
    return open_content(row, cipher)


def _message_text(row: Message, cipher: UserCipher | None) -> str:
    assert cipher is not None  # noqa: S101  # Messages always have an owner.
    return open_message(row, cipher)


def _chunk_text(row: KnowledgeChunk, cipher: UserCipher | None) -> str:
    # As knowledge/documents.py embeds a passage: under its document's title.
    return f"{row.document.title}\n\n{row.text}"


def _candidate_text(row: LearningCandidate, cipher: UserCipher | None) -> str:
    assert cipher is not None  # noqa: S101  # Candidates always have an owner.
    # As knowledge/answers.py embeds a candidate: its scrubbed question, else its answer.
    field, blob = (
        ("question", row.question_ciphertext)
        if row.question_ciphertext
        else ("answer", row.answer_ciphertext)
    )
    return cipher.decrypt(blob, table=CANDIDATE_TABLE, row_id=row.pk, field=field)


TABLES = (
    _Table(
        "memories",
        Memory,
        ("content_ciphertext",),
        lambda row: row.user_id,
        _memory_text,
        "user__workspace_id",
    ),
    _Table(
        "messages",
        Message,
        ("content_ciphertext", "session__user_id"),
        lambda row: row.session.user_id,
        _message_text,
        "session__user__workspace_id",
    ),
    _Table(
        "knowledge chunks",
        KnowledgeChunk,
        ("text", "document__title"),
        lambda row: None,
        _chunk_text,
        "workspace_id",
    ),
    _Table(
        "candidates",
        LearningCandidate,
        ("question_ciphertext", "answer_ciphertext", "user_id"),
        lambda row: row.user_id,
        _candidate_text,
        "user__workspace_id",
    ),
)


@dataclass(frozen=True)
class ReembedReport:
    model: str
    embedded: dict[str, int]
    # Of the last pass: rows whose owner's key is destroyed (their text cannot be read).
    skipped: dict[str, int]
    # Rows of another model still there after the run (0 everywhere: the switch is complete).
    remaining: dict[str, int]


def choose_embedding_model(*, workspace: Workspace, model: str, actor: Actor) -> Workspace:
    """Set the model that embeds the workspace's texts from now on ("": the deployment's).

    New vectors take it at once; its stored ones keep their model, and searches stop finding
    them by meaning, until `reembed(embedder=…, workspaces=only(workspace))` has run (the
    command: `manage.py reembed --workspace <slug>`). Raises InvalidInputError for a model
    this code does not know.
    """
    if model and model not in MODELS:
        raise InvalidInputError(
            gettext_noop("unknown embedding model {model!r}; known: {models}"),
            model=model,
            models=", ".join(MODELS),
        )
    if workspace.embedding_model == model:
        return workspace
    with transaction.atomic():
        workspace.embedding_model = model
        workspace.save(update_fields=["embedding_model"])
        record_access(
            actor=actor,
            subject_user_id=None,
            action=AuditAction.WORKSPACE_EMBEDDING_MODEL,
            object_ids=[workspace.slug, model or "default"],
            workspace_id=workspace.pk,
        )
    return workspace


def following_default() -> models.QuerySet[Workspace]:
    """The workspaces that embed with the deployment's MEMORYHUB_EMBEDDING_MODEL."""
    return Workspace.objects.filter(embedding_model="")


def only(workspace: Workspace) -> models.QuerySet[Workspace]:
    """One workspace, as the `workspaces` of a run."""
    return Workspace.objects.filter(pk=workspace.pk)


def remaining_rows(
    model: str, *, workspaces: models.QuerySet[Workspace] | None = None
) -> dict[str, int]:
    """How many stored vectors of each table another model made (left to re-embed).

    With `workspaces`, only their rows count; without, every row does.
    """
    return {
        table.name: table.rows(workspaces).exclude(embedding_model=model).count()
        for table in TABLES
    }


def reembed(
    *,
    embedder: Embedder,
    workspaces: models.QuerySet[Workspace] | None = None,
    batch: int = BATCH,
    on_page: Callable[[str, int], None] | None = None,
) -> ReembedReport:
    """Re-embed every stored vector that another model made with `embedder`; report the counts.

    With `workspaces` (`only(workspace)`, `following_default()`), only their rows; the rows
    of any other workspace keep their vectors. `on_page(table, rows)` is called after each
    committed page (progress; an exception there stops the run, and a new run resumes).
    """
    embedded = dict.fromkeys((table.name for table in TABLES), 0)
    skipped = dict.fromkeys((table.name for table in TABLES), 0)
    for table in TABLES:
        # Passes until a pass changes nothing: rows edited during one are taken by the next.
        while True:
            done, left_alone = _pass(table, embedder, workspaces, batch, on_page)
            embedded[table.name] += done
            skipped[table.name] = left_alone
            if done == 0:
                break
    return ReembedReport(
        model=embedder.name,
        embedded=embedded,
        skipped=skipped,
        remaining=remaining_rows(embedder.name, workspaces=workspaces),
    )


def _pass(
    table: _Table,
    embedder: Embedder,
    workspaces: models.QuerySet[Workspace] | None,
    batch: int,
    on_page: Callable[[str, int], None] | None,
) -> tuple[int, int]:
    done = left_alone = 0
    last: Any = None
    # Keyset pages in primary-key order: each row is read once per pass, whatever the size.
    stale = table.rows(workspaces).exclude(embedding_model=embedder.name).order_by("pk")
    while True:
        page_rows = stale if last is None else stale.filter(pk__gt=last)
        page = list(page_rows.select_related(*_relations(table)).only("pk", *table.columns)[:batch])
        if not page:
            return done, left_alone
        last = page[-1].pk
        readable, texts = _texts(table, page)
        left_alone += len(page) - len(readable)
        vectors = embedder.embed(texts)
        written = _write(table, embedder.name, readable, vectors)
        done += written
        left_alone += len(readable) - written
        if on_page is not None:
            on_page(table.name, len(page))


def _relations(table: _Table) -> list[str]:
    return sorted({column.split("__")[0] for column in table.columns if "__" in column})


def _texts(table: _Table, page: list[Any]) -> tuple[list[Any], list[str]]:
    ciphers: dict[UUID, UserCipher | None] = {}
    readable, texts = [], []
    for row in page:
        owner = table.owner(row)
        if owner is not None and owner not in ciphers:
            try:
                ciphers[owner] = cipher_for(owner, create=False)
            except KeyDestroyedError:  # Crypto-shredded: its text is gone, and so is its use.
                ciphers[owner] = None
        cipher = ciphers.get(owner) if owner is not None else None
        if owner is not None and cipher is None:
            continue
        readable.append(row)
        texts.append(table.text(row, cipher))
    return readable, texts


def _write(table: _Table, model: str, rows: list[Any], vectors: Iterable[list[float]]) -> int:
    own_columns = [column for column in table.columns if "__" not in column]
    with transaction.atomic():
        # Locked, then compared: a row whose text changed since it was read keeps the vector
        # its edit wrote; one re-embedded by a concurrent run is left alone too.
        current = {
            row.pk: row
            for row in table.rows()
            .filter(pk__in=[row.pk for row in rows])
            .exclude(embedding_model=model)
            .select_for_update(of=("self",))
            .only("pk", *own_columns)
        }
        fresh = []
        for row, vector in zip(rows, vectors, strict=True):
            now = current.get(row.pk)
            if now is None or any(
                _value(now, column) != _value(row, column) for column in own_columns
            ):
                continue
            now.embedding = vector
            now.embedding_model = model
            fresh.append(now)
        table.manager().bulk_update(fresh, ["embedding", "embedding_model"])
    return len(fresh)


def _value(row: Any, column: str) -> Any:
    value = getattr(row, column)
    return bytes(value) if isinstance(value, memoryview) else value
