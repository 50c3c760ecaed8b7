"""The asyncio client: `AsyncMemoryHub(base_url, key)`; every method is awaited."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType

import httpx

from .errors import TransportError
from .operations import DEFAULT_MODE, JSON, Call, Kind, Operations
from .retry import RetryPolicy
from .transport import api_root, headers_for, result_of, wait_before_retry


class AsyncMemoryHub(Operations[Awaitable[JSON]]):
    """Every API operation as an awaitable returning the answer's JSON; errors raise ApiError.

    async with AsyncMemoryHub("http://127.0.0.1:8000", key="mh_…") as hub:
        await hub.remember("alice", "Allergic to peanuts", kind="fact")
    """

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._http = httpx.AsyncClient(
            base_url=api_root(base_url),
            headers=headers_for(key),
            timeout=timeout,
            transport=transport,
        )

    def _send(self, call: Call) -> Awaitable[JSON]:
        return self._send_with_retries(call)

    async def _send_with_retries(self, call: Call) -> JSON:
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.request(
                    call.method,
                    call.path,
                    params=call.query,
                    json=call.body if call.files is None else None,
                    files=call.files,
                )
            except httpx.TransportError as exc:
                wait = self.retry.delay(attempt, None) if call.is_repeatable else None
                if wait is None:
                    raise TransportError(f"{call.method} {call.path}: {exc}") from exc
            else:
                wait = wait_before_retry(response, attempt, self.retry)
                if wait is None:
                    return result_of(response)
            await self._sleep(wait)

    async def iter_memories(
        self,
        user: str | None = None,
        *,
        mode: str = DEFAULT_MODE,
        kind: Kind | None = None,
        status: str | None = None,
        page_size: int = 50,
    ) -> AsyncIterator[JSON]:
        """Every memory, newest first, fetching pages as the iteration goes."""
        cursor: str | None = None
        while True:
            page = await self.list_memories(
                user, mode=mode, kind=kind, status=status, cursor=cursor, limit=page_size
            )
            for item in page["items"]:
                yield item
            cursor = page.get("next_cursor")
            if not cursor:
                return

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryHub:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
