"""The streamed export (queries/export.py, json_stream.py): the same file, a page at a time."""

from __future__ import annotations

import json

import anyio
import time_machine
from asgiref.sync import sync_to_async
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connections
from django.test import AsyncClient

from memoryhub import json_stream
from memoryhub.actors import Actor
from memoryhub.audit.log import subject_pseudonym
from memoryhub.json_stream import Streamed, json_pieces
from memoryhub.models import AuditEntry
from memoryhub.queries import export
from memoryhub.queries.export import export_user_data, stream_user_data
from memoryhub.services.memories import edit_memory
from tests import factories

ACTOR = Actor.system("tests")


def _dumped(document):
    return json.dumps(document, cls=DjangoJSONEncoder, ensure_ascii=False, indent=2)


def test_streamed_json_is_the_same_text_as_json_dumps():
    document = {
        "a": [],
        "b": Streamed(iter([{"x": "é\nline", "y": [1, {}]}, 2])),
        "c": [{"d": Streamed([])}, {"e": Streamed(iter(["z"]))}],
        "f": {"g": None},
    }
    plain = {
        "a": [],
        "b": [{"x": "é\nline", "y": [1, {}]}, 2],
        "c": [{"d": []}, {"e": ["z"]}],
        "f": {"g": None},
    }
    assert "".join(json_pieces(document)) == _dumped(plain)


def test_the_stream_pages_through_memories_and_matches_the_whole_export(
    user, personal, work, other_user, embedder, monkeypatch
):
    monkeypatch.setattr(export, "EXPORT_PAGE_SIZE", 2)  # Several pages, and a partial last one.
    rows = [
        factories.make_memory(user, personal, f"Personal fact {n}.", embedder=embedder)
        for n in range(5)
    ]
    factories.make_memory(user, work, "Work fact.", embedder=embedder)
    factories.make_memory(other_user, factories.mode_of(other_user), "Bob's secret.")
    edit_memory(
        user=user,
        mode=personal,
        memory_id=rows[3].pk,
        actor=ACTOR,
        embedder=embedder,
        content="Personal fact 3, edited.",
    )

    with time_machine.travel("2026-06-01 12:00:00+00:00", tick=False):
        streamed = "".join(stream_user_data(user=user, actor=ACTOR))
        whole = _dumped(export_user_data(user=user, actor=ACTOR))

    assert streamed == whole
    by_mode = {mode["slug"]: mode for mode in json.loads(streamed)["modes"]}
    personal_items = by_mode["personal"]["memories"]
    assert [m["id"] for m in personal_items] == [str(row.pk) for row in rows]
    assert personal_items[3]["previous_versions"][0]["content"] == "Personal fact 3."
    assert "Bob's secret." not in streamed
    assert (
        AuditEntry.objects.filter(
            subject=subject_pseudonym(user.pk), action="account.export"
        ).count()
        == 2
    )


def test_under_asgi_the_dashboard_sends_the_export_in_pieces(transactional_db, monkeypatch):
    monkeypatch.setattr(json_stream, "PIECE_CHARS", 512)
    owner = factories.make_user()
    mode = factories.mode_of(owner)
    for n in range(12):
        factories.make_memory(owner, mode, f"Fact number {n} about the user.")

    async def download():
        client = AsyncClient()
        await client.aforce_login(owner)
        response = await client.get("/dashboard/export/")
        pieces = [piece async for piece in response.streaming_content]
        # The pieces were read on asgiref's thread: close its connection, or the test
        # database cannot be dropped at the end of the run.
        await sync_to_async(connections.close_all)()
        return response, pieces

    response, pieces = anyio.run(download)

    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    assert len(pieces) > 3
    document = json.loads(b"".join(pieces))
    assert len(document["modes"][0]["memories"]) == 12
