"""Resource-updated events across web workers: each worker's PostgresSubscriptionBus (two
instances here, as two uvicorn workers hold) hears what any of them publishes."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from mcp.server.subscriptions import ResourceUpdated

from memoryhub.mcp.bus import CHANNEL, PostgresSubscriptionBus

pytestmark = pytest.mark.django_db(transaction=True)


def _listening_connections() -> int:
    """This test database's connections LISTENing for the events (another run's are elsewhere)."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND query = %s",
                [f"LISTEN {CHANNEL}"],
            )
            return cursor.fetchone()[0]
    finally:
        connection.close()  # Runs on asgiref's thread: leave no session behind.


def test_an_event_published_by_one_worker_reaches_the_listeners_of_another():
    canonical = f"memoryhub://users/{uuid.uuid4()}/modes/personal/open-items"
    by_external_id = "memoryhub://users/alice/modes/personal/open-items"

    async def run():
        answering, listening = PostgresSubscriptionBus(), PostgresSubscriptionBus()
        heard: list[str] = []
        arrived = asyncio.Event()

        def listener(event):
            heard.append(event.uri)
            arrived.set()

        unsubscribe = listening.subscribe(listener)
        await asyncio.wait_for(listening.listening(), 30)
        # Only UUID spellings travel: listeners over HTTP hold no other (mcp/listening.py).
        await answering.publish(ResourceUpdated(uri=by_external_id))
        await answering.publish(ResourceUpdated(uri=canonical))
        await asyncio.wait_for(arrived.wait(), 30)
        open_while_listening = await sync_to_async(_listening_connections)()
        unsubscribe()
        await asyncio.sleep(0.5)
        return heard, open_while_listening, await sync_to_async(_listening_connections)()

    heard, open_while_listening, open_after = asyncio.run(run())
    assert heard == [canonical]
    # One LISTEN connection while a listener is there, none once the last one left.
    assert (open_while_listening, open_after) == (1, 0)
