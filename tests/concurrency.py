"""Two real transactions at once, each in a thread with its own database connection.

`held_open` runs some work in a transaction it keeps open until the test commits it, and
`run_into` starts a second piece of work in another thread and returns once it is waiting on a
lock (of the held transaction) or has finished. Tests that use them need
`django_db(transaction=True)`: the threads' connections must see committed rows.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction

WAIT_SECONDS = 30.0


def _on_own_connection(work: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        try:
            return work()
        finally:
            connection.close()  # this thread's connection: the test database can then be dropped

    return run


@contextmanager
def held_open(work: Callable[[], Any]) -> Iterator[Callable[[], Any]]:
    """Run `work` inside a transaction in a thread; yield a function that commits and returns it."""
    done, release = threading.Event(), threading.Event()

    def run() -> Any:
        with transaction.atomic():
            try:
                result = work()
            finally:
                done.set()
            if not release.wait(WAIT_SECONDS):
                raise TimeoutError("the held transaction was never released")
        return result

    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(_on_own_connection(run))
        try:
            if not done.wait(WAIT_SECONDS):
                raise TimeoutError("the held work did not finish")
            if future.done():
                future.result()  # raises what the work raised

            def commit() -> Any:
                release.set()
                return future.result(timeout=WAIT_SECONDS)

            yield commit
        finally:
            release.set()  # also on failure: no thread outlives its test


def run_into(work: Callable[[], Any], pool: ThreadPoolExecutor) -> Future[Any]:
    """Start `work` on its own connection; return once it waits on a lock or has finished."""
    backend_pid: list[int] = []

    def run() -> Any:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend_pid.append(cursor.fetchone()[0])
        return work()

    future = pool.submit(_on_own_connection(run))
    deadline = time.monotonic() + WAIT_SECONDS
    while not wait([future], timeout=0.01).done:
        if backend_pid and _is_waiting_on_a_lock(backend_pid[0]):
            return future
        if time.monotonic() > deadline:
            raise TimeoutError("the work neither finished nor waited on a lock")
    return future


def _is_waiting_on_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return row is not None and row[0] == "Lock"
