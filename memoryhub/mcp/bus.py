"""Resource-updated events across web workers, over PostgreSQL LISTEN/NOTIFY.

The `mcp` SDK hands a tool call's `notify_resource_updated` to a subscription bus, and its
default bus is in-process: with several web workers, a listener held by one worker would miss
the tool calls that the others answer. This bus sends each event as a NOTIFY on one channel;
every worker with a listener LISTENs on it (one connection per worker, open while it has
listeners) and hands what arrives to its own streams. Events reach listeners once committed
(a NOTIFY is sent in autocommit), with no replay: a stream that drops re-listens and rereads,
as the SDK's protocol says.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import psycopg
from asgiref.sync import sync_to_async
from django.db import connection
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated, ServerEvent

from .listening import is_canonical

logger = logging.getLogger(__name__)

CHANNEL = "memoryhub_mcp_resources"
RECONNECT_SECONDS = 1.0


def _notify(uri: str) -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, uri])
    finally:
        connection.close()  # Back to the pool: this runs outside Django's request cycle.


def _listen_params() -> dict[str, Any]:
    # Django's own connection settings, without its sync cursor class and adapters.
    params = dict(connection.get_connection_params())
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return params


class PostgresSubscriptionBus:
    """A `SubscriptionBus` whose resource-updated events reach every worker's listeners."""

    def __init__(self) -> None:
        self._local = InMemorySubscriptionBus()
        self._listening: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._listeners = 0

    async def publish(self, event: ServerEvent) -> None:
        if not isinstance(event, ResourceUpdated):
            await self._local.publish(event)  # List changes: not sent by MemoryHub's tools.
        elif is_canonical(event.uri):
            # Listeners over HTTP hold only UUID spellings (listening.py): send no other.
            await sync_to_async(_notify, thread_sensitive=False)(event.uri)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        self._start_listening()
        self._listeners += 1
        unsubscribe_locally = self._local.subscribe(listener)
        done = False

        def unsubscribe() -> None:
            nonlocal done
            if not done:
                done = True
                unsubscribe_locally()
                self._listeners -= 1
                if self._listeners == 0:
                    self._stop_listening()  # A worker without listeners holds no connection.

        return unsubscribe

    async def listening(self) -> None:
        """Wait until this worker LISTENs, so no event after a listen's ack is missed."""
        self._start_listening()
        await self._ready.wait()

    def _start_listening(self) -> None:
        if self._listening is None or self._listening.done():
            self._listening = asyncio.get_running_loop().create_task(self._listen())

    def _stop_listening(self) -> None:
        if self._listening is not None:
            self._listening.cancel()
            self._listening = None
        self._ready.clear()

    async def _listen(self) -> None:
        params = await sync_to_async(_listen_params)()
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(**params, autocommit=True) as db:
                    await db.execute(f"LISTEN {CHANNEL}")
                    self._ready.set()
                    async for notification in db.notifies():
                        await self._local.publish(ResourceUpdated(uri=notification.payload))
            except psycopg.Error:
                # Events sent meanwhile are lost, as on a dropped stream: clients reread.
                self._ready.clear()
                logger.warning("MCP resource events: LISTEN connection lost", exc_info=True)
                await asyncio.sleep(RECONNECT_SECONDS)
