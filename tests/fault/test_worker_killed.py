"""A web worker SIGKILLed under load: the other keeps serving, and uvicorn starts a new one.

The production web command runs uvicorn supervising two worker processes on one listening
socket. Killing one mid-load may break off the requests it was serving at that moment (at
most one per client thread); every later request is served, by the survivor or the
replacement.
"""

from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

from tests.fault.conftest import WEB_WORKERS, wait_for
from tests.fault.load import Load, running

pytestmark = pytest.mark.fault

THREADS = 4


def _is_serving(pid: int, port: int) -> bool:
    """Whether the worker holds a client's connection to the server port right now."""
    connections = psutil.Process(pid).net_connections(kind="tcp")
    return any(c.status == psutil.CONN_ESTABLISHED and c.laddr.port == port for c in connections)


def test_a_web_worker_killed_under_load_leaves_the_other_serving_and_is_replaced(stack, report):
    user = stack.create_user("kill-writer")
    before = stack.web.worker_pids()
    assert len(before) == WEB_WORKERS
    victim = min(before)
    load = Load(stack.port, stack.key, user, threads=THREADS)
    with running(load):
        started = time.monotonic()
        wait_for(lambda: load.successes_since(started) >= 10, "writes before the kill")

        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()

        def replaced() -> bool:
            now = stack.web.worker_pids()
            return victim not in now and len(now) == WEB_WORKERS

        took = wait_for(replaced, "uvicorn to start a replacement worker")
        wait_for(lambda: load.successes_since(killed_at) >= 20, "writes after the kill")
        (replacement,) = stack.web.worker_pids() - before
        serves = wait_for(
            lambda: _is_serving(replacement, stack.port), "the replacement to take requests"
        )
        serving_at = time.monotonic()
        wait_for(lambda: load.successes_since(serving_at) >= 10, "writes after the replacement")
    after = stack.web.worker_pids()

    outcomes = load.snapshot()
    broken = [o for o in outcomes if o.reply is None]
    report(
        f"worker {victim} killed; replaced after {took:.1f} s, serving {took + serves:.1f} s "
        f"after the kill; {len(outcomes)} requests, {len(broken)} broken off by the kill"
    )
    # Only requests already sent when the worker died may break off: one per client at most.
    assert len(broken) <= THREADS, broken
    failed = [o.reply for o in outcomes if o.reply is not None and not o.is_success]
    assert failed == [], f"{failed[:3]}\n{stack.web.log_text()}"
    assert victim not in after
    assert len(after) == WEB_WORKERS
    assert after == (before - {victim}) | {replacement}  # The survivor served on.

    acknowledged = load.acknowledged_writes()
    stored = stack.stored_memories(user)
    assert {memory_id: stored.get(memory_id) for memory_id in acknowledged} == acknowledged
