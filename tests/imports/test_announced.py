"""An import's changes are announced like any other: webhooks hear of memories it brought."""

from __future__ import annotations

import pytest

from memoryhub.actors import Actor
from memoryhub.imports import services as imports
from memoryhub.models import Memory
from memoryhub.webhooks import events
from tests.factories import make_user, mode_of
from tests.webhooks.test_delivery import Receiver, endpoint_for, send_due

from .files import as_bytes, mem0_memories


@pytest.fixture
def receiver(settings):
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS = True  # The receiver is on 127.0.0.1.
    found = Receiver()
    yield found
    found.stop()


@pytest.mark.django_db(transaction=True)
def test_imported_memories_are_announced_as_created_and_an_undo_as_forgotten(receiver, embedder):
    user = make_user()
    endpoint_for(receiver, user.workspace)
    data = as_bytes(mem0_memories())
    job = imports.start_import(
        user=user, mode=mode_of(user), actor=Actor.for_user(user.pk), agent=None, chunks=[data]
    )
    imports.run_import(job_id=job.pk, embedder=embedder)
    send_due()
    created = [m for m in receiver.received if m["payload"]["type"] == events.MEMORY_CREATED]
    imported = {str(pk) for pk in Memory.all_owners.filter(user=user).values_list("pk", flat=True)}
    assert len(imported) == 2
    assert {i for m in created for i in m["payload"]["data"]["ids"]} == imported
    job.refresh_from_db()
    imports.undo_import(job=job)
    send_due()
    forgotten = [m for m in receiver.received if m["payload"]["type"] == events.MEMORY_FORGOTTEN]
    assert forgotten and receiver.bad_signatures == 0
