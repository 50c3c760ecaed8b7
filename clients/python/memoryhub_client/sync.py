"""The synchronous client: `MemoryHub(base_url, key)`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from types import TracebackType

import httpx

from .errors import TransportError
from .operations import DEFAULT_MODE, JSON, Call, Kind, Operations
from .retry import RetryPolicy
from .transport import api_root, headers_for, result_of, wait_before_retry


class MemoryHub(Operations[JSON]):
    """Every API operation as a method returning the answer's JSON; errors raise ApiError.

    hub = MemoryHub("http://127.0.0.1:8000", key="mh_…")
    hub.remember("alice", "Allergic to peanuts", kind="fact")
    """

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=api_root(base_url),
            headers=headers_for(key),
            timeout=timeout,
            transport=transport,
        )

    def _send(self, call: Call) -> JSON:
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.request(
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
            self._sleep(wait)

    def iter_memories(
        self,
        user: str | None = None,
        *,
        mode: str = DEFAULT_MODE,
        kind: Kind | None = None,
        status: str | None = None,
        page_size: int = 50,
    ) -> Iterator[JSON]:
        """Every memory, newest first, fetching pages as the iteration goes."""
        cursor: str | None = None
        while True:
            page = self.list_memories(
                user, mode=mode, kind=kind, status=status, cursor=cursor, limit=page_size
            )
            yield from page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryHub:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
