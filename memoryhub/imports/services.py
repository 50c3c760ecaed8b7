"""Start an import, run it (resumable, idempotent), undo a failed one, review what came in."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from uuid import UUID, uuid4

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop
from kombu.exceptions import OperationalError as BrokerUnavailableError

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.embeddings import Embedder, embedder_for_workspace
from memoryhub.errors import (
    AgentBlockedError,
    InvalidInputError,
    MemoryHubError,
    NotFoundError,
)
from memoryhub.keyring import cipher_for
from memoryhub.models import (
    ActorType,
    Agent,
    AgentBlock,
    Channel,
    ImportedItem,
    ImportFormat,
    ImportJob,
    Memory,
    Mode,
    Session,
    User,
)
from memoryhub.services.memories import delete_memories
from memoryhub.services.users import ensure_mode
from memoryhub.services.write_checks import check_writable
from memoryhub.task_queue import RUN_IMPORT, enqueue

from .formats import Opener, detect_format, read_records
from .records import ImportFileError, MemoryRecord, Record, SessionRecord, SkippedRecord
from .uploads import SealedReader, delete_upload, seal_upload
from .words import file_error_in_words
from .writing import BatchReport, write_memories, write_sessions

logger = logging.getLogger(__name__)

# Records written per transaction: the unit of progress (a resumed run starts after the last).
BATCH_RECORDS = 50
# A queued or running job untouched this long lost its task: the sweep queues it again.
STRANDED_AFTER = timedelta(minutes=10)
# The receipt lists this many skipped items; the count covers them all.
MAX_SKIPPED_LISTED = 200
_FILE_KEY_TABLE = "import_job"
_FILE_KEY_FIELD = "file_key"


class ImportFileRejectedError(MemoryHubError):
    """A file we cannot import: malformed or foreign (422, with the code of ImportFileError)."""

    status = 422

    def __init__(self, error: ImportFileError) -> None:
        super().__init__(error.message, **error.words)
        self.code = error.code

    def in_words(self) -> str:
        """The message in the reader's language, and the item it names ("memory 3") too."""
        return file_error_in_words(self.message, self.words)


def _actor_of(job: ImportJob) -> Actor:
    return Actor(
        ActorType(job.actor_type), job.actor_id, Channel(job.actor_channel), label=job.actor_label
    )


def _opener(job: ImportJob) -> Opener:
    key_text = cipher_for(job.user).decrypt(
        bytes(job.file_key_ciphertext or b""),
        table=_FILE_KEY_TABLE,
        row_id=job.pk,
        field=_FILE_KEY_FIELD,
    )
    key = base64.b64decode(key_text)
    path = Path(job.file_path)
    return lambda: SealedReader(path, key)


def _enqueue_import(job_id: UUID) -> None:
    # Never raises for the broker: the upload has committed, and the job stays queued; sending
    # the same file again queues it again (and it resumes where it got to).
    try:
        enqueue(RUN_IMPORT, str(job_id))
    except BrokerUnavailableError as error:
        logger.warning("import %s stays queued: broker unavailable (%s)", job_id, error)


def _check_allowed(job_user: User, mode: Mode, actor: Actor, agent: Agent | None) -> None:
    check_writable(job_user, actor, mode)
    if agent is not None and AgentBlock.objects.filter(user=job_user, agent=agent).exists():
        raise AgentBlockedError(gettext_noop("this user has blocked this agent"))


def start_import(
    *,
    user: User,
    mode: Mode,
    actor: Actor,
    agent: Agent | None,
    chunks: Iterable[bytes],
    file_format: str | None = None,
    is_trusted: bool = False,
    is_single_mode: bool = False,
) -> ImportJob:
    """Keep the file sealed, check it through, and queue its import; the same file again is
    the same job (a failed or unfinished one is queued again, to resume).

    Raises ImportFileRejectedError (422: not JSON, not a format we read, a malformed item),
    ContentTooLargeError, MemoryPausedError / MemoryOffError and InvalidInputError.
    """
    _check_allowed(user, mode, actor, agent)
    if file_format is not None and file_format not in ImportFormat.values:
        raise InvalidInputError(
            gettext_noop("format must be one of: {formats}"), formats=", ".join(ImportFormat.values)
        )
    job_id = uuid4()
    upload = seal_upload(chunks, name=job_id, limit=settings.MEMORYHUB_MAX_IMPORT_BYTES)
    try:

        def opener() -> SealedReader:
            return SealedReader(upload.path, upload.key)

        if upload.size == 0:
            raise ImportFileError(gettext_noop("the file is empty"), code="import_unrecognised")
        detected = file_format or detect_format(opener)
        # The whole file is read once here, so that a malformed item is a 422 now, naming
        # it, rather than a failed job later.
        total = sum(1 for _ in read_records(opener, detected))
    except ImportFileError as error:
        upload.path.unlink(missing_ok=True)
        raise ImportFileRejectedError(error) from None
    except BaseException:
        upload.path.unlink(missing_ok=True)
        raise
    cipher = cipher_for(user)
    try:
        with transaction.atomic():
            job = (
                ImportJob.objects.select_for_update()
                .filter(user=user, mode=mode, file_sha256=upload.sha256)
                .first()
            )
            if job is not None and job.status != ImportJob.Status.FAILED:
                # Done: nothing changes. Queued or running: its copy of the same bytes is
                # still on disk (a running task may be reading it), so it is queued again to
                # resume; a run already at work holds the job's lock, the other returns.
                upload.path.unlink(missing_ok=True)
                if job.status != ImportJob.Status.DONE:
                    transaction.on_commit(partial(_enqueue_import, job.pk))
                return job
            if job is None:
                job = ImportJob(id=job_id, user=user, mode=mode, file_sha256=upload.sha256)
            else:  # A failed import, tried again: its file was deleted when it failed.
                job.error_code = job.error_detail = ""
            job.agent = agent
            job.actor_type, job.actor_id = actor.actor_type, actor.actor_id
            job.actor_label, job.actor_channel = actor.label[:200], actor.channel
            job.format = detected
            job.file_size = upload.size
            job.file_path = str(upload.path)
            job.file_key_ciphertext = cipher.encrypt(
                base64.b64encode(upload.key).decode(),
                table=_FILE_KEY_TABLE,
                row_id=job.pk,
                field=_FILE_KEY_FIELD,
            )
            job.is_trusted = is_trusted
            job.is_single_mode = is_single_mode
            job.total = total
            job.status = ImportJob.Status.QUEUED
            job.save()
            record_access(
                actor=actor,
                subject_user_id=user.pk,
                action=AuditAction.IMPORT_START,
                object_ids=[job.pk],
                mode=mode.slug,
            )
            transaction.on_commit(partial(_enqueue_import, job.pk))
    except IntegrityError:
        # The same file uploaded twice at once: the other upload made the job.
        upload.path.unlink(missing_ok=True)
        return ImportJob.objects.get(user=user, mode=mode, file_sha256=upload.sha256)
    return job


def _batches(records: Iterator[Record], start: int) -> Iterator[tuple[int, list[Record]]]:
    """Batches of records after the first `start`, each with the position it ends at."""
    batch: list[Record] = []
    position = 0
    for position, record in enumerate(records, start=1):
        if position <= start:
            continue
        batch.append(record)
        # A session is written alone: one conversation may hold thousands of messages.
        if len(batch) >= BATCH_RECORDS or isinstance(record, SessionRecord):
            yield position, batch
            batch = []
    if batch:
        yield position, batch


def _mode_for(job: ImportJob, slug: str | None, modes: dict[str, Mode]) -> Mode | None:
    """The mode a record goes to: its own (a MemoryHub export), else the job's."""
    if slug is None or slug == job.mode.slug:
        return job.mode
    if job.is_single_mode:
        return None
    if slug not in modes:
        modes[slug] = ensure_mode(user=job.user, slug=slug)
    return modes[slug]


def _write_batch(
    job: ImportJob, batch: list[Record], embedder: Embedder, report: BatchReport
) -> None:
    cipher = cipher_for(job.user)
    actor = _actor_of(job)
    modes: dict[str, Mode] = {}
    memories: dict[int, list[MemoryRecord]] = {}
    for record in batch:
        if isinstance(record, SkippedRecord):
            report.skipped.append(record)
            continue
        mode = _mode_for(job, record.mode, modes)
        if mode is None:
            report.skipped.append(
                SkippedRecord(record.key, record.label, "its mode is out of this key's reach")
            )
            continue
        if mode.is_memory_off:
            report.skipped.append(
                SkippedRecord(record.key, record.label, f"memory is off in mode {mode.slug}")
            )
            continue
        if isinstance(record, SessionRecord):
            write_sessions(
                job=job, mode=mode, records=[record], cipher=cipher, actor=actor, report=report
            )
        else:
            memories.setdefault(mode.pk, []).append(record)
            modes.setdefault(mode.slug, mode)
    by_pk = {mode.pk: mode for mode in [job.mode, *modes.values()]}
    for mode_pk, records in memories.items():
        write_memories(
            job=job,
            mode=by_pk[mode_pk],
            records=records,
            cipher=cipher,
            embedder=embedder,
            actor=actor,
            report=report,
        )


def _add_to_receipt(job: ImportJob, report: BatchReport) -> None:
    for kind, number in report.counts.items():
        job.counts[kind] = job.counts.get(kind, 0) + number
    job.skipped_count += len(report.skipped)
    room = MAX_SKIPPED_LISTED - len(job.skipped)
    job.skipped += [
        {"item": skipped.label, "reason": skipped.reason} for skipped in report.skipped[:room]
    ]


def run_import(*, job_id: UUID | str, embedder: Embedder | None = None) -> ImportJob:
    """Import the job's file from where it got to; a done job is left as it is.

    A file that turns out malformed, a pause, memory turned off or an agent block ends it:
    everything it wrote is removed again, and the job says why. Without `embedder`, it
    embeds with the workspace's model.
    """
    job = (
        ImportJob.objects.select_related("user__workspace", "mode", "agent")
        .filter(pk=job_id)
        .first()
    )
    if job is None:
        raise NotFoundError(gettext_noop("import not found"))
    with _job_lock(job.pk) as is_ours:
        if not is_ours:
            # Another run of the same job (a redelivered or requeued task) is at work.
            return job
        job.refresh_from_db()
        if job.status in (ImportJob.Status.DONE, ImportJob.Status.FAILED):
            return job
        return _run(job, embedder or embedder_for_workspace(job.user.workspace))


@contextmanager
def _job_lock(job_id: UUID) -> Iterator[bool]:
    """Hold the job's lock while it runs, if no other run holds it (then yield False)."""
    key = f"import-job:{job_id}"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [key])
        is_ours = bool(cursor.fetchone()[0])
    try:
        yield is_ours
    finally:
        if is_ours:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [key])


def _run(job: ImportJob, embedder: Embedder) -> ImportJob:
    now = timezone.now()
    if job.started_at is None:
        job.started_at = now
    job.status = ImportJob.Status.RUNNING
    job.updated_at = now
    job.save(update_fields=["status", "started_at", "updated_at"])
    try:
        _check_allowed(job.user, job.mode, _actor_of(job), job.agent)
        records = read_records(_opener(job), job.format)
        for position, batch in _batches(records, job.position):
            # A pause or a block that comes mid-import ends it (and undoes it) at once.
            job.user.refresh_from_db(fields=["is_memory_paused"])
            _check_allowed(job.user, job.mode, _actor_of(job), job.agent)
            report = BatchReport()
            with transaction.atomic():
                _write_batch(job, batch, embedder, report)
                _add_to_receipt(job, report)
                job.position = position
                job.updated_at = timezone.now()
                job.save(
                    update_fields=["position", "counts", "skipped", "skipped_count", "updated_at"]
                )
    except ImportFileError as error:
        return fail_import(job=job, code=error.code, detail=str(error))
    except MemoryHubError as error:
        return fail_import(job=job, code=error.code, detail=str(error))
    return _finish(job)


def requeue_stranded_imports(*, now: datetime | None = None) -> int:
    """Queue again the imports whose task was lost (a broker outage, a lost message); how many.

    A live run touches its job after every batch, and a second run of a job that is still at
    work returns at once (`_job_lock`), so a job requeued too early costs nothing.
    """
    now = now or timezone.now()
    stranded = ImportJob.objects.filter(
        status__in=[ImportJob.Status.QUEUED, ImportJob.Status.RUNNING],
        updated_at__lt=now - STRANDED_AFTER,
    )
    count = 0
    for job_id in stranded.values_list("pk", flat=True):
        ImportJob.objects.filter(pk=job_id).update(updated_at=now)
        _enqueue_import(job_id)
        count += 1
    return count


def _finish(job: ImportJob) -> ImportJob:
    delete_upload(job.file_path)
    job.file_path = ""
    job.file_key_ciphertext = None
    job.status = ImportJob.Status.DONE
    job.finished_at = timezone.now()
    job.save(update_fields=["file_path", "file_key_ciphertext", "status", "finished_at"])
    record_access(
        actor=_actor_of(job),
        subject_user_id=job.user_id,
        action=AuditAction.IMPORT_FINISH,
        object_ids=[job.pk],
        mode=job.mode.slug,
    )
    return job


def fail_import(*, job: ImportJob, code: str, detail: str) -> ImportJob:
    """End the import as failed and remove everything it wrote (nothing half-imported stays)."""
    undo_import(job=job)
    delete_upload(job.file_path)
    job.file_path = ""
    job.file_key_ciphertext = None
    job.status = ImportJob.Status.FAILED
    job.error_code = code[:32]
    job.error_detail = detail[:500]
    job.finished_at = timezone.now()
    job.position = 0
    job.counts = {}
    job.skipped = []
    job.skipped_count = 0
    job.save()
    return job


def undo_import(*, job: ImportJob) -> None:
    """Delete the memories and sessions the job wrote, and what extraction made of them."""
    actor = Actor.system("import-undo")
    items = ImportedItem.objects.filter(job=job)
    session_ids = list(items.exclude(session=None).values_list("session_id", flat=True))
    by_mode: dict[int, list[UUID]] = {}
    for mode_id, memory_id in items.exclude(memory=None).values_list("mode_id", "memory_id"):
        by_mode.setdefault(mode_id, []).append(memory_id)
    for mode_id, memory_id in Memory.all_owners.filter(
        user=job.user, session_id__in=session_ids
    ).values_list("mode_id", "id"):
        by_mode.setdefault(mode_id, []).append(memory_id)
    for mode in Mode.objects.filter(pk__in=list(by_mode)):
        delete_memories(
            user=job.user,
            mode=mode,
            memory_ids=by_mode[mode.pk],
            actor=actor,
            action=AuditAction.IMPORT_UNDO,
        )
    Session.objects.filter(user=job.user, pk__in=session_ids).delete()
    items.delete()


def get_import(*, user: User, job_id: UUID | str) -> ImportJob:
    """One import of the user; another user's does not exist."""
    try:
        job = ImportJob.objects.select_related("user", "mode").filter(user=user, pk=job_id).first()
    except ValueError:
        job = None
    if job is None:
        raise NotFoundError(gettext_noop("import not found"))
    return job
