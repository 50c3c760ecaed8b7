"""Agent API routes: import a file of memories or conversations, follow it, review what came in."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Literal
from uuid import UUID

from django.http import HttpRequest
from django.utils.translation import gettext_noop
from ninja import File, P, PathEx, Query, Router, Schema, Status
from ninja.files import UploadedFile
from pydantic import Field

from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import ImportNotAllowedError, NotFoundError, PermissionDeniedError
from memoryhub.imports import review
from memoryhub.imports import services as imports
from memoryhub.models import Agent, AgentPermission, ImportJob
from memoryhub.queries.connections import is_agent_allowed

from .auth import Scope, resolve_scope
from .schemas import ERRORS, ScopeIn

router = Router(tags=["imports"])

FormatName = Literal["memoryhub", "mem0", "openmemory", "chatgpt", "claude"]


class ImportQuery(ScopeIn):
    format: FormatName | None = Field(
        default=None,
        description=(
            "The file's format; detected from its content when left out. memoryhub: a "
            "MemoryHub export; mem0: Mem0's get_all or its server's memories list; openmemory: "
            "the memories.json inside OpenMemory's backup zip (archived and deleted memories "
            "are skipped); chatgpt and claude: the conversations.json of their data exports."
        ),
    )
    trust: bool = Field(
        default=False,
        description=(
            "Store the memories as ordinary ones, at the confidence the file gives (medium for "
            "other services' files), instead of candidates the user reviews. Personal keys "
            "only: an agent's import always waits for the user's review."
        ),
    )


class SkippedOut(Schema):
    item: str = Field(description="The item: its id in the file, or its place.")
    reason: str = Field(description="Why it was not imported (already imported, empty, …).")


class ImportOut(Schema):
    id: UUID = Field(description="The import's id.")
    mode: str = Field(description="The mode it imports into (a MemoryHub export keeps its own).")
    format: str = Field(description="memoryhub, mem0, chatgpt or claude.")
    status: str = Field(description="queued, running, done or failed.")
    is_trusted: bool = Field(description="Imported as ordinary memories, not candidates.")
    file_size: int = Field(description="The file's size in bytes.")
    position: int = Field(description="Items of the file done so far.")
    total: int = Field(description="Items in the file.")
    percent: int = Field(description="Progress, 0 to 100.")
    counts: dict[str, int] = Field(
        description="What came in, by kind: memory kinds, session, message."
    )
    skipped_count: int = Field(description="Items not imported.")
    skipped: list[SkippedOut] = Field(description="The first 200 items not imported, and why.")
    error_code: str = Field(description="Why a failed import failed (empty otherwise).")
    error_detail: str = Field(description="The failure in words, naming the line or item.")
    created_at: datetime = Field(description="When the file was uploaded.")
    finished_at: datetime | None = Field(description="When the import ended.")

    @classmethod
    def of(cls, job: ImportJob) -> ImportOut:
        return cls(
            id=job.pk,
            mode=job.mode.slug,
            format=job.format,
            status=job.status,
            is_trusted=job.is_trusted,
            file_size=job.file_size,
            position=job.position,
            total=job.total,
            percent=job.percent,
            counts=job.counts,
            skipped_count=job.skipped_count,
            skipped=[SkippedOut(**entry) for entry in job.skipped],
            error_code=job.error_code,
            error_detail=job.error_detail,
            created_at=job.created_at,
            finished_at=job.finished_at,
        )


class ReviewIn(ScopeIn):
    memory_ids: list[UUID] | None = Field(
        default=None,
        description="The memories to keep or discard; all that wait for review when left out.",
    )


class ReviewOut(Schema):
    count: int = Field(description="How many memories were kept or discarded.")
    waiting: int = Field(description="How many memories of the import still wait for review.")


def _chunks(upload: UploadedFile) -> Iterator[bytes]:
    yield from upload.chunks()


ImportId = PathEx[
    UUID, P(description="The import's id, as POST /imports returned it; another user's is 404.")
]


def check_agent_may_import(scope: Scope, agent: Agent) -> None:
    """Raise ImportNotAllowedError unless the user turned "may import" on for this agent.

    Security invariant: an agent brings a file into someone's memory only with their consent
    (dashboard, Agents; off by default), and even then its items wait for the user's review.
    """
    if not is_agent_allowed(user=scope.user, agent=agent, permission=AgentPermission.IMPORT):
        record_access(
            actor=scope.actor, subject_user_id=scope.user.pk, action=AuditAction.IMPORT_REFUSED
        )
        raise ImportNotAllowedError(
            gettext_noop(
                "the user has not allowed this agent to import files into their memory "
                "(dashboard: Agents)"
            )
        )


def _job_of(scope: Scope, import_id: UUID) -> ImportJob:
    # Security invariant: only the user's own imports, and only an agent's own ones for an agent.
    job = imports.get_import(user=scope.user, job_id=import_id)
    if scope.agent is not None and job.agent_id != scope.agent.pk:
        raise NotFoundError(gettext_noop("import not found"))
    return job


@router.post(
    "/imports",
    response={202: ImportOut, **ERRORS},
    summary="Import a file of memories or conversations",
)
def start_import(
    request: HttpRequest, options: Query[ImportQuery], file: File[UploadedFile]
) -> Status[ImportOut]:
    """Upload a file (multipart, field `file`, up to MEMORYHUB_MAX_IMPORT_BYTES) and queue its
    import. The file is checked first: not JSON, a format we do not read or a malformed item is
    a 422 (`import_malformed`, `import_unrecognised`) naming the line or item, and nothing is
    stored. The same file again returns the same import and changes nothing. An agent needs the
    user's "may import" permission (dashboard, Agents; 403 `import_not_allowed` otherwise) and
    its import always waits for the user's review. Follow it with GET /imports/{id}."""
    scope = resolve_scope(request, options.user, options.mode)
    if scope.agent is not None:
        check_agent_may_import(scope, scope.agent)
    if options.trust and scope.agent is not None:
        raise PermissionDeniedError(gettext_noop("only the user's own key may trust an import"))
    job = imports.start_import(
        user=scope.user,
        mode=scope.mode,
        actor=scope.actor,
        agent=scope.agent,
        chunks=_chunks(file),
        file_format=options.format,
        is_trusted=options.trust,
        is_single_mode=scope.agent is not None or scope.api_key.mode_id is not None,
    )
    job.refresh_from_db()
    return Status(202, ImportOut.of(job))


@router.get(
    "/imports/{import_id}",
    summary="Read an import's progress and receipt",
    response={200: ImportOut, **ERRORS},
)
def get_import(request: HttpRequest, import_id: ImportId, scope_in: Query[ScopeIn]) -> ImportOut:
    """The import's progress and, once done, its receipt: counts by kind, items skipped and why."""
    scope = resolve_scope(request, scope_in.user, scope_in.mode)
    return ImportOut.of(_job_of(scope, import_id))


@router.post(
    "/imports/{import_id}/keep",
    response={200: ReviewOut, **ERRORS},
    summary="Keep imported memories",
)
def keep_imported(request: HttpRequest, import_id: ImportId, body: ReviewIn) -> ReviewOut:
    """Confirm the import's memories waiting for review, all or the ones named."""
    scope = resolve_scope(request, body.user, body.mode)
    job = _job_of(scope, import_id)
    count = review.keep_imported(job=job, actor=scope.actor, memory_ids=body.memory_ids)
    return ReviewOut(count=count, waiting=len(review.imported_candidates(job=job)))


@router.post(
    "/imports/{import_id}/discard",
    response={200: ReviewOut, **ERRORS},
    summary="Discard imported memories",
)
def discard_imported(request: HttpRequest, import_id: ImportId, body: ReviewIn) -> ReviewOut:
    """Delete the import's memories waiting for review, all or the ones named."""
    scope = resolve_scope(request, body.user, body.mode)
    job = _job_of(scope, import_id)
    count = review.discard_imported(job=job, actor=scope.actor, memory_ids=body.memory_ids)
    return ReviewOut(count=count, waiting=len(review.imported_candidates(job=job)))
