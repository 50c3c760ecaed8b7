"""Client threads that write and read memories through the API until stopped, keeping every outcome."""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from uuid import uuid4

from tests.fault.client import Reply, call


@dataclass(frozen=True)
class Outcome:
    """One request of the load: its reply, or the error that broke it off (reply None)."""

    started_at: float  # time.monotonic()
    action: str  # "write" or "read"
    reply: Reply | None
    error: str = ""
    content: str = ""  # What a write asked to remember.

    @property
    def is_success(self) -> bool:
        return self.reply is not None and 200 <= self.reply.status < 300


class Load:
    """`threads` clients, each remembering a fresh fact then listing memories, in a loop."""

    def __init__(self, port: int, key: str, user: str, *, threads: int = 4) -> None:
        self.port = port
        self.key = key
        self.user = user
        self.outcomes: list[Outcome] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(number,), daemon=True)
            for number in range(threads)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=90)  # A request's own timeout is 60 s.
        assert not any(thread.is_alive() for thread in self._threads), "a client thread hangs"

    def snapshot(self) -> list[Outcome]:
        with self._lock:
            return list(self.outcomes)

    def successes_since(self, moment: float, action: str = "write") -> int:
        return sum(
            1
            for outcome in self.snapshot()
            if outcome.started_at >= moment and outcome.action == action and outcome.is_success
        )

    def acknowledged_writes(self) -> dict[str, str]:
        """Memory id -> content of every write the service answered 201."""
        return {
            outcome.reply.json()["id"]: outcome.content
            for outcome in self.snapshot()
            if outcome.action == "write" and outcome.reply is not None and outcome.is_success
        }

    def _run(self, number: int) -> None:
        count = 0
        while not self._stop.is_set():
            count += 1
            content = f"Load note {number}-{count}: {uuid4()}"
            self._record("write", partial(self._write, content), content)
            self._record("read", self._read)

    def _write(self, content: str) -> Reply:
        body = {"user": self.user, "mode": "personal", "kind": "fact", "content": content}
        return call(self.port, "POST", "/api/v1/memories", key=self.key, body=body)

    def _read(self) -> Reply:
        return call(self.port, "GET", f"/api/v1/memories?user={self.user}&limit=5", key=self.key)

    def _record(self, action: str, send: Callable[[], Reply], content: str = "") -> None:
        started_at = time.monotonic()
        try:
            outcome = Outcome(started_at, action, send(), content=content)
        except (OSError, http.client.HTTPException) as error:
            outcome = Outcome(started_at, action, None, error=type(error).__name__, content=content)
        with self._lock:
            self.outcomes.append(outcome)
        if not outcome.is_success:
            self._stop.wait(0.1)  # Pace a client that meets an outage; not a synchronisation.


@contextmanager
def running(load: Load) -> Iterator[Load]:
    """Run the load for the body of the `with`; its threads are stopped also on failure."""
    load.start()
    try:
        yield load
    finally:
        load.stop()
