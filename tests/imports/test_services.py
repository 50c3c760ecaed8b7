"""Imports through the domain: each format, the round trip, idempotence, resuming, failures."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memoryhub.actors import Actor
from memoryhub.celery import app
from memoryhub.errors import InvalidInputError, NotFoundError
from memoryhub.imports import review
from memoryhub.imports import services as imports
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import decrypt_memory, memories_of, open_version_content
from memoryhub.message_rows import open_message
from memoryhub.models import (
    ImportedItem,
    ImportJob,
    Memory,
    MemoryVersion,
    Message,
    Session,
)
from memoryhub.queries.export import export_user_data
from memoryhub.services import sessions
from memoryhub.services.forget import delete_account
from memoryhub.services.memories import edit_memory
from tests import factories

from .files import (
    as_bytes,
    chatgpt_conversations,
    claude_conversations,
    committed,
    mem0_memories,
    openmemory_backup,
)


def _zipped(document: dict) -> bytes:
    """OpenMemory's backup as its route sends it: a zip holding memories.json."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("memories.json", json.dumps(document))
    return archive.getvalue()


def _import(user, data: bytes, *, trust=False, file_format=None, actor=None):
    with committed():
        return imports.start_import(
            user=user,
            mode=factories.mode_of(user),
            actor=actor or Actor.for_user(user.pk),
            agent=None,
            chunks=[data[i : i + 1000] for i in range(0, len(data), 1000)],
            file_format=file_format,
            is_trusted=trust,
        )


def _contents(user, mode_slug="personal"):
    cipher = cipher_for(user)
    rows = memories_of(user=user, mode=factories.mode_of(user, mode_slug))
    return sorted(decrypt_memory(row, cipher).content for row in rows)


def _memory_fields(user):
    """Everything a round trip must keep, keyed by text (ids and the user differ)."""
    cipher = cipher_for(user)
    fields = {}
    for row in Memory.all_owners.filter(user=user).select_related("mode", "session"):
        item = decrypt_memory(row, cipher)
        session_start = row.session.started_at if row.session else None
        versions = [
            (open_version_content(v, cipher), v.changed_by_type, v.reason, v.created_at)
            for v in MemoryVersion.objects.filter(memory=row).order_by("created_at", "id")
        ]
        fields[item.content] = (
            row.mode.slug,
            item.kind,
            item.confidence,
            item.status,
            item.source,
            item.importance,
            item.evidence_count,
            item.payload,
            item.created_at,
            item.updated_at,
            item.occurred_at,
            item.valid_to,
            session_start,
            versions,
        )
    return fields


def _sessions(user):
    cipher = cipher_for(user)
    return sorted(
        (
            session.mode.slug,
            session.started_at,
            session.ended_at,
            tuple(
                (m.role, open_message(m, cipher), m.created_at)
                for m in Message.objects.filter(session=session).order_by("seq")
            ),
        )
        for session in Session.objects.filter(user=user).select_related("mode")
    )


def test_an_export_imported_into_a_fresh_user_gives_the_same_memories(
    workspace, user, embedder, eager
):
    personal, work = factories.mode_of(user), factories.mode_of(user, "work")
    actor = Actor.system("test")
    session = sessions.start_session(user=user, mode=personal, actor=actor)
    sessions.add_message(
        session=session, role="user", content="We talked about Lyon", actor=actor, embedder=embedder
    )
    sessions.add_message(
        session=session, role="assistant", content="Yes, Lyon.", actor=actor, embedder=embedder
    )
    # An export's sessions are past ones: an import ends any that was still open.
    sessions.end_session(session=session, actor=actor)
    lyon = factories.make_memory(
        user, personal, "Lives in Lyon", embedder=embedder, confidence="high", importance="high"
    )
    # What an extraction of the session would have recorded as the memory's provenance.
    Memory.all_owners.filter(pk=lyon.pk).update(session=session)
    edited = factories.make_memory(
        user, personal, "Likes tea", kind="preference", embedder=embedder
    )
    edit_memory(
        user=user,
        mode=personal,
        memory_id=edited.pk,
        actor=actor,
        embedder=embedder,
        content="Likes green tea",
    )
    factories.make_memory(
        user,
        work,
        "Maybe plays chess",
        embedder=embedder,
        confidence="candidate",
        status="candidate",
        source="extracted",
        occurred_at=datetime(2024, 1, 2, tzinfo=UTC),
        created_at=datetime(2023, 5, 6, tzinfo=UTC),
    )
    document = export_user_data(user=user, actor=actor)
    fresh = factories.make_user(workspace=workspace, external_id="fresh")

    job = _import(fresh, json.dumps(document, indent=2).encode(), trust=True)

    job.refresh_from_db()
    assert job.status == "done" and job.format == "memoryhub", job.error_detail
    assert job.counts == {"session": 1, "message": 2, "fact": 2, "preference": 1}
    assert _memory_fields(fresh) == _memory_fields(user)
    assert _sessions(fresh) == _sessions(user)


def test_importing_the_same_file_twice_changes_nothing(user, embedder, eager):
    data = as_bytes(mem0_memories())
    first = _import(user, data, trust=True)
    before = _contents(user)
    second = _import(user, data, trust=True)
    assert second.pk == first.pk
    assert (
        _contents(user)
        == before
        == [
            "Prefers window seats on flights",
            "Works at a bakery in Nantes",
        ]
    )
    assert ImportJob.objects.filter(user=user).count() == 1


def test_items_already_imported_from_another_file_are_skipped(user, embedder, eager):
    _import(user, as_bytes(mem0_memories()), trust=True)
    bigger = mem0_memories()
    bigger["results"].append({"id": "new-one", "memory": "Has a cat named Miso"})
    job = _import(user, as_bytes(bigger), trust=True)
    job.refresh_from_db()
    assert job.counts == {"fact": 1}
    reasons = [entry["reason"] for entry in job.skipped]
    assert reasons.count("already imported") == 2 and "empty memory" in reasons
    assert len(_contents(user)) == 3


def test_mem0_memories_come_in_as_candidates_with_their_dates(user, embedder, eager):
    job = _import(user, as_bytes(mem0_memories()))
    job.refresh_from_db()
    assert job.format == "mem0" and job.status == "done"
    assert job.counts == {"preference": 1, "fact": 1}
    assert job.skipped == [
        {"item": "memory 6f1b0c5e-0000-4000-8000-000000000003", "reason": "empty memory"}
    ]
    cipher = cipher_for(user)
    items = {
        decrypt_memory(row, cipher).content: decrypt_memory(row, cipher)
        for row in memories_of(user=user, mode=factories.mode_of(user))
    }
    seat = items["Prefers window seats on flights"]
    assert (seat.kind, seat.confidence, seat.status, seat.source) == (
        "preference",
        "candidate",
        "candidate",
        "imported",
    )
    assert seat.created_at == datetime(2024, 7, 20, 8, 2, 3, 123456, tzinfo=UTC)
    assert seat.updated_at == datetime(2024, 7, 21, 8, 2, 3, 123456, tzinfo=UTC)
    assert seat.payload["mem0_id"] == "6f1b0c5e-0000-4000-8000-000000000001"
    assert seat.payload["categories"] == ["travel", "user_preferences"]


def test_a_trusted_mem0_import_is_stored_at_medium(user, embedder, eager):
    _import(user, as_bytes(mem0_memories()), trust=True)
    rows = memories_of(user=user, mode=factories.mode_of(user))
    assert {(row.confidence, row.status) for row in rows} == {("medium", "active")}


def test_a_plain_mem0_list_is_read_too(user, embedder, eager):
    job = _import(user, as_bytes(mem0_memories()["results"]))
    assert job.format == "mem0"
    assert len(_contents(user)) == 2


def test_an_openmemory_backup_brings_its_live_memories_and_skips_put_away_ones(
    user, embedder, eager
):
    job = _import(user, as_bytes(openmemory_backup()))
    job.refresh_from_db()
    assert job.format == "openmemory" and job.status == "done", job.error_detail
    assert job.counts == {"preference": 1, "fact": 1}
    assert sorted(entry["reason"] for entry in job.skipped) == [
        "archived in OpenMemory",
        "deleted in OpenMemory",
    ]
    cipher = cipher_for(user)
    items = {
        decrypt_memory(row, cipher).content: decrypt_memory(row, cipher)
        for row in memories_of(user=user, mode=factories.mode_of(user))
    }
    assert set(items) == {"Prefers tabs over spaces", "Leads the billing team"}
    tabs = items["Prefers tabs over spaces"]
    assert (tabs.kind, tabs.status, tabs.source) == ("preference", "candidate", "imported")
    assert tabs.created_at == datetime(2025, 3, 1, 9, 30, tzinfo=UTC)
    assert tabs.payload["categories"] == ["user_preferences"]
    assert tabs.payload["openmemory_id"] == "a0000000-0000-4000-8000-000000000001"
    assert items["Leads the billing team"].payload["categories"] == ["work"]


def test_chatgpt_conversations_become_past_sessions_and_are_extracted(user, embedder, eager):
    job = _import(user, as_bytes(chatgpt_conversations()))
    job.refresh_from_db()
    assert job.format == "chatgpt" and job.status == "done", job.error_detail
    assert job.counts["session"] == 1 and job.counts["message"] == 3
    assert job.skipped == [
        {"item": "conversation c0ffee00-0000-4000-8000-000000000002", "reason": "no text messages"}
    ]
    session = Session.objects.get(user=user)
    assert session.started_at == datetime.fromtimestamp(1_700_000_000, tz=UTC)
    assert session.ended_at == datetime.fromtimestamp(1_700_000_300, tz=UTC)
    cipher = cipher_for(user)
    said = [
        (m.role, open_message(m, cipher), m.created_at)
        for m in Message.objects.filter(session=session).order_by("seq")
    ]
    assert said == [
        (
            "user",
            "I live in Lyon and I work as a nurse.",
            datetime.fromtimestamp(1_700_000_010, tz=UTC),
        ),
        ("assistant", "Noted, how can I help?", datetime.fromtimestamp(1_700_000_020, tz=UTC)),
        (
            "user",
            "Remember that I am allergic to peanuts.",
            datetime.fromtimestamp(1_700_000_100, tz=UTC),
        ),
    ]
    # End-of-session extraction ran over it, as over a live session; what it found waits for
    # the user's review like the import's own items (the import was not trusted).
    session.refresh_from_db()
    assert session.extraction_status == "done"
    found = Memory.all_owners.filter(user=user, session=session)
    assert found.exists()
    assert {(row.confidence, row.status) for row in found} == {("candidate", "candidate")}
    assert any("peanut" in text.lower() for text in _contents(user))
    assert set(review.imported_candidates(job=job)) == {row.pk for row in found}


def test_a_trusted_conversation_import_is_extracted_on_the_ladder(user, embedder, eager):
    _import(user, as_bytes(chatgpt_conversations()), trust=True)
    session = Session.objects.get(user=user)
    rows = Memory.all_owners.filter(user=user, session=session)
    # "Remember that I am allergic to peanuts" is the user's explicit word: medium at once.
    assert "medium" in {row.confidence for row in rows}


def test_claude_conversations_become_past_sessions(user, embedder, eager):
    job = _import(user, as_bytes(claude_conversations()))
    job.refresh_from_db()
    assert job.format == "claude" and job.counts == {"session": 1, "message": 2}
    session = Session.objects.get(user=user)
    assert session.started_at == datetime(2024, 3, 2, 9, 0, tzinfo=UTC)
    cipher = cipher_for(user)
    said = [
        (m.role, open_message(m, cipher))
        for m in Message.objects.filter(session=session).order_by("seq")
    ]
    assert said == [
        ("user", "My name is Camille and I grow tomatoes."),
        ("assistant", "Lovely! Which varieties?"),
    ]


def test_an_interrupted_import_resumes_where_it_stopped(user, embedder, monkeypatch):
    monkeypatch.setattr(imports, "BATCH_RECORDS", 2)
    document = {"results": [{"id": f"m{i}", "memory": f"Fact number {i}"} for i in range(7)]}
    job = _import(user, as_bytes(document), trust=True)  # Queued: not eager here.
    calls = []

    class DiesOnSecondBatch:
        name = embedder.name

        def embed(self, texts):
            calls.append(len(texts))
            if len(calls) == 2:
                raise RuntimeError("worker lost")
            return embedder.embed(texts)

    with pytest.raises(RuntimeError):
        imports.run_import(job_id=job.pk, embedder=DiesOnSecondBatch())
    job.refresh_from_db()
    assert (job.status, job.position) == ("running", 2)
    imports.run_import(job_id=job.pk, embedder=embedder)
    job.refresh_from_db()
    assert (job.status, job.position, job.counts) == ("done", 7, {"fact": 7})
    assert len(_contents(user)) == 7
    assert not Path(job.file_path or "/nonexistent").exists()


@pytest.mark.parametrize(
    ("data", "code", "words"),
    [
        (
            b'{"results": [\n{"id": "a", "memory": "x"},\n{"id": "b", "memory": @}\n]}',
            "import_malformed",
            "line 3",
        ),
        (
            b'[{"title": "x", "mapping": {}}, {"title": "y", "mapping": 3}]',
            "import_malformed",
            "conversation 1",
        ),
        (b'{"hello": "world"}', "import_unrecognised", "none of the formats"),
        (_zipped(openmemory_backup()), "import_unrecognised", "unzip it first"),
        (b"", "import_unrecognised", "empty"),
        (b'[{"memory": "ok", "created_at": "yesterday"}]', "import_malformed", "item 0"),
    ],
)
def test_a_malformed_or_foreign_file_is_refused_naming_the_line_or_item(
    user, embedder, eager, settings, tmp_path, data, code, words
):
    settings.MEMORYHUB_IMPORT_DIR = str(tmp_path)
    with pytest.raises(imports.ImportFileRejectedError) as refused:
        _import(user, data)
    assert refused.value.code == code and words in str(refused.value)
    assert not ImportJob.objects.exists() and not Memory.all_owners.filter(user=user).exists()
    assert list(tmp_path.iterdir()) == []


def test_a_format_given_explicitly_is_checked_item_by_item(user, embedder, eager):
    with pytest.raises(imports.ImportFileRejectedError) as refused:
        _import(user, as_bytes(chatgpt_conversations()), file_format="claude")
    assert "conversation 0" in str(refused.value) and "chat_messages" in str(refused.value)


def test_the_upload_is_sealed_at_rest_and_deleted_when_the_import_ends(
    user, embedder, settings, tmp_path, eager
):
    settings.MEMORYHUB_IMPORT_DIR = str(tmp_path)
    seen = []
    real_run = imports.run_import

    def look_then_run(**kwargs):
        seen.extend(path.read_bytes() for path in tmp_path.iterdir())
        return real_run(**kwargs)

    imports.run_import = look_then_run
    try:
        _import(user, as_bytes(mem0_memories()))
    finally:
        imports.run_import = real_run
    assert seen and all(b"window seats" not in blob for blob in seen)
    assert list(tmp_path.iterdir()) == []


def test_a_pause_before_the_task_runs_fails_it_and_leaves_nothing(user, embedder):
    agent_actor = Actor.system("agent")
    job = _import(user, as_bytes(mem0_memories()), actor=agent_actor)
    user.is_memory_paused = True
    user.save(update_fields=["is_memory_paused"])
    imports.run_import(job_id=job.pk, embedder=embedder)
    job.refresh_from_db()
    assert (job.status, job.error_code) == ("failed", "memory_paused")
    assert not Memory.all_owners.filter(user=user).exists()
    assert not ImportedItem.objects.exists() and job.file_path == ""


def test_a_file_that_fails_halfway_leaves_nothing_imported(user, embedder, monkeypatch):
    monkeypatch.setattr(imports, "BATCH_RECORDS", 1)
    conversation = chatgpt_conversations()[0]
    three = [dict(conversation, conversation_id=f"conv-{i}", id=f"conv-{i}") for i in range(3)]
    job = _import(user, as_bytes(three))
    real_write = imports._write_batch
    written = []

    def fail_on_third(job, batch, embedder, report):
        written.append(batch)
        if len(written) == 3:
            raise InvalidInputError("broken item")
        real_write(job, batch, embedder, report)

    monkeypatch.setattr(imports, "_write_batch", fail_on_third)
    imports.run_import(job_id=job.pk, embedder=embedder)
    job.refresh_from_db()
    assert (job.status, job.error_detail) == ("failed", "broken item")
    assert not Session.objects.filter(user=user).exists()
    assert not Memory.all_owners.filter(user=user).exists()


def test_keep_selected_and_discard_the_rest(user, embedder, eager):
    job = _import(user, as_bytes(mem0_memories()))
    job.refresh_from_db()
    waiting = review.imported_candidates(job=job)
    assert len(waiting) == 2
    actor = Actor.for_user(user.pk)
    assert review.keep_imported(job=job, actor=actor, memory_ids=[waiting[0]]) == 1
    assert review.discard_imported(job=job, actor=actor) == 1
    rows = list(memories_of(user=user, mode=factories.mode_of(user)))
    assert [(row.pk, row.confidence, row.status) for row in rows] == [
        (waiting[0], "high", "active")
    ]
    # Importing the file again does not bring back what was discarded.
    assert _import(user, as_bytes(mem0_memories())).pk == job.pk
    assert len(list(memories_of(user=user, mode=factories.mode_of(user)))) == 1


def test_keeping_refuses_memories_outside_the_import(user, embedder, eager):
    job = _import(user, as_bytes(mem0_memories()))
    job.refresh_from_db()
    other = factories.make_memory(
        user,
        factories.mode_of(user),
        "Not imported",
        embedder=embedder,
        confidence="candidate",
        status="candidate",
    )
    with pytest.raises(InvalidInputError):
        review.keep_imported(job=job, actor=Actor.for_user(user.pk), memory_ids=[other.pk])


def test_deleting_the_account_deletes_a_file_waiting_for_its_import(user, settings, tmp_path):
    settings.MEMORYHUB_IMPORT_DIR = str(tmp_path)
    job = _import(user, as_bytes(mem0_memories()))  # Not eager: the file waits for the task.
    assert [path.name for path in tmp_path.iterdir()] == [f"{job.pk}.sealed"]
    with committed():
        delete_account(user=user, actor=Actor.for_user(user.pk))
    assert list(tmp_path.iterdir()) == []
    assert not ImportJob.objects.exists()
    # The task, still queued, finds nothing to do.
    with pytest.raises(NotFoundError):
        imports.run_import(job_id=job.pk, embedder=None)


def test_claude_senders_are_read_whatever_their_case(user, embedder, eager):
    conversations = claude_conversations()
    conversations[0]["chat_messages"][0]["sender"] = "Human"
    conversations[0]["chat_messages"][1]["sender"] = "Assistant"
    job = _import(user, as_bytes(conversations))
    job.refresh_from_db()
    assert job.counts == {"session": 1, "message": 2}


def test_a_job_whose_task_was_lost_is_queued_again_and_runs(user, embedder, settings):
    lost = _import(user, as_bytes(mem0_memories()))  # Not eager: its message is never run.
    assert imports.requeue_stranded_imports() == 0  # Too recent to call lost.
    ImportJob.objects.filter(pk=lost.pk).update(updated_at=datetime(2020, 1, 1, tzinfo=UTC))
    app.conf.task_always_eager = True
    try:
        assert imports.requeue_stranded_imports() == 1
    finally:
        app.conf.task_always_eager = False
    lost.refresh_from_db()
    assert lost.status == "done" and len(_contents(user)) == 2
    assert imports.requeue_stranded_imports() == 0  # A done job is never queued again.
    assert "memoryhub.requeue_stranded_imports" in {
        entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()
    }


def test_uploading_an_unfinished_import_again_resumes_it(user, embedder, settings, tmp_path):
    settings.MEMORYHUB_IMPORT_DIR = str(tmp_path)
    data = as_bytes(mem0_memories())
    queued = _import(user, data)  # Not eager: its task has not run.
    app.conf.task_always_eager = True
    try:
        again = _import(user, data)
    finally:
        app.conf.task_always_eager = False
    again.refresh_from_db()
    assert again.pk == queued.pk and again.status == "done"
    assert len(_contents(user)) == 2 and list(tmp_path.iterdir()) == []


def test_a_pause_in_the_middle_of_an_import_ends_it_and_undoes_it(user, embedder, monkeypatch):
    monkeypatch.setattr(imports, "BATCH_RECORDS", 1)
    job = _import(user, as_bytes(mem0_memories()), actor=Actor.system("agent"))
    real_write = imports._write_batch

    def pause_after_first(job, batch, embedder, report):
        real_write(job, batch, embedder, report)
        type(user).objects.filter(pk=user.pk).update(is_memory_paused=True)

    monkeypatch.setattr(imports, "_write_batch", pause_after_first)
    imports.run_import(job_id=job.pk, embedder=embedder)
    job.refresh_from_db()
    assert (job.status, job.error_code) == ("failed", "memory_paused")
    assert not Memory.all_owners.filter(user=user).exists()


def _two_mode_export(user, embedder):
    factories.make_memory(user, factories.mode_of(user), "Lives in Lyon", embedder=embedder)
    factories.make_memory(user, factories.mode_of(user, "work"), "Uses Python", embedder=embedder)
    return json.dumps(export_user_data(user=user, actor=Actor.system("test"))).encode()


def test_a_single_mode_import_skips_the_exports_other_modes(workspace, user, embedder, eager):
    data = _two_mode_export(user, embedder)
    fresh = factories.make_user(workspace=workspace, external_id="fresh")
    with committed():
        job = imports.start_import(
            user=fresh,
            mode=factories.mode_of(fresh),
            actor=Actor.for_user(fresh.pk),
            agent=None,
            chunks=[data],
            is_trusted=True,
            is_single_mode=True,
        )
    job.refresh_from_db()
    assert _contents(fresh) == ["Lives in Lyon"]
    assert [entry["reason"] for entry in job.skipped] == ["its mode is out of this key's reach"]


def test_a_mode_with_memory_off_is_skipped(workspace, user, embedder, eager):
    data = _two_mode_export(user, embedder)
    fresh = factories.make_user(workspace=workspace, external_id="fresh")
    work = factories.mode_of(fresh, "work")
    work.is_memory_off = True
    work.save(update_fields=["is_memory_off"])
    job = _import(fresh, data, trust=True)
    job.refresh_from_db()
    assert _contents(fresh) == ["Lives in Lyon"] and _contents(fresh, "work") == []
    assert [entry["reason"] for entry in job.skipped] == ["memory is off in mode work"]
