"""Helpers for tests that start real processes on the test database: its URL, bounded waits."""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import quote

from django.db import connection


def current_database_url() -> str:
    """The URL of the test database this process uses, for a subprocess to use too."""
    db = connection.settings_dict
    auth = quote(db["USER"]) + (f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else "")
    if db["HOST"].startswith("/"):  # A Unix socket directory (the embedded server).
        return f"postgresql://{auth}@/{quote(db['NAME'])}?host={quote(db['HOST'])}"
    return f"postgresql://{auth}@{db['HOST']}:{db['PORT'] or 5432}/{quote(db['NAME'])}"


def wait_for(
    condition: Callable[[], bool], what: str, *, timeout: float = 120, interval: float = 0.2
) -> None:
    """Poll `condition` until it holds; fail after `timeout` seconds, naming `what`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(interval)
