"""The dashboard's import page: upload, progress (htmx polling), receipt, review, errors."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile

from memoryhub.models import ImportJob, Memory
from tests.imports.files import as_bytes, committed, mem0_memories


def _upload(client, personal, data: bytes, **fields):
    with committed():
        return client.post(
            "/dashboard/imports/",
            {"file": SimpleUploadedFile("memories.json", data), "mode": personal.pk, **fields},
        )


def test_an_upload_runs_and_shows_its_receipt_and_the_memories_to_review(
    signed_in, user, personal, embedder, eager
):
    response = _upload(signed_in, personal, as_bytes(mem0_memories()))
    job = ImportJob.objects.get(user=user)
    assert response.status_code == 302 and response["Location"] == f"/dashboard/imports/{job.pk}/"
    page = signed_in.get(response["Location"]).content.decode()
    assert "Imported" in page and "1 item skipped" in page and "empty memory" in page
    assert "Prefers window seats on flights" in page and "Keep selected" in page
    listing = signed_in.get("/dashboard/imports/").content.decode()
    assert "Mem0 memories" in listing


def test_a_running_import_polls_its_progress_fragment(signed_in, user, personal, embedder):
    _upload(signed_in, personal, as_bytes(mem0_memories()))  # Not eager: it stays queued.
    job = ImportJob.objects.get(user=user)
    fragment = signed_in.get(f"/dashboard/imports/{job.pk}/", headers={"HX-Request": "true"})
    body = fragment.content.decode()
    assert fragment.status_code == 200 and body.lstrip().startswith(
        f'<section id="import-{job.pk}"'
    )
    assert 'hx-trigger="every 2s"' in body and "<progress" in body and "0 of 3 items" in body


def test_keep_selected_then_discard_the_rest(signed_in, user, personal, embedder, eager):
    _upload(signed_in, personal, as_bytes(mem0_memories()))
    job = ImportJob.objects.get(user=user)
    first, _ = Memory.all_owners.filter(user=user).order_by("created_at")
    url = f"/dashboard/imports/{job.pk}/review/"
    signed_in.post(url, {"action": "keep_selected", "memory_ids": [str(first.pk)]})
    first.refresh_from_db()
    assert (first.confidence, first.status) == ("high", "active")
    signed_in.post(url, {"action": "discard"})
    assert list(Memory.all_owners.filter(user=user)) == [first]


def test_keep_all(signed_in, user, personal, embedder, eager):
    _upload(signed_in, personal, as_bytes(mem0_memories()))
    job = ImportJob.objects.get(user=user)
    signed_in.post(f"/dashboard/imports/{job.pk}/review/", {"action": "keep_all"})
    assert set(Memory.all_owners.filter(user=user).values_list("status", flat=True)) == {"active"}


def test_keep_selected_without_a_choice_is_a_form_error(signed_in, user, personal, embedder, eager):
    _upload(signed_in, personal, as_bytes(mem0_memories()))
    job = ImportJob.objects.get(user=user)
    response = signed_in.post(f"/dashboard/imports/{job.pk}/review/", {"action": "keep_selected"})
    assert (
        response.status_code == 422 and "Choose the memories to keep." in response.content.decode()
    )


def test_a_malformed_file_is_a_form_error_naming_the_line(signed_in, user, personal, eager):
    response = _upload(signed_in, personal, b'[\n{"memory": "a"},\n{"memory": @}\n]')
    assert response.status_code == 422
    assert "near line 3" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_a_trusted_upload_keeps_its_memories_at_once(signed_in, user, personal, embedder, eager):
    _upload(signed_in, personal, as_bytes(mem0_memories()), trust="on")
    assert set(Memory.all_owners.filter(user=user).values_list("confidence", flat=True)) == {
        "medium"
    }


def test_another_users_import_is_not_found(client, user, other_user, personal, embedder, eager):
    client.force_login(user)
    _upload(client, personal, as_bytes(mem0_memories()))
    job = ImportJob.objects.get(user=user)
    client.force_login(other_user)
    assert client.get(f"/dashboard/imports/{job.pk}/").status_code == 404
    assert (
        client.post(f"/dashboard/imports/{job.pk}/review/", {"action": "discard"}).status_code
        == 404
    )
    assert Memory.all_owners.filter(user=user).count() == 2


def test_the_import_page_needs_a_login(client):
    assert client.get("/dashboard/imports/").status_code == 302
