"""The broker stopped while sessions end: each ending answers 200, and after the broker returns
every session is extracted exactly once.

Ending a session marks it queued and publishes its extraction after the commit. With Redis
stopped the publish fails: the request must still answer 200 and the session stay queued (it
is the outbox). Redis comes back empty; the stranded-extraction sweep publishes each session
again, here twice over to be sure a duplicate delivery writes nothing twice, and a real Celery
worker (the production command line) extracts them with the offline extractor.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from memoryhub.process_model import worker_command
from tests.fault.client import call
from tests.fault.conftest import REPO, Stack, wait_for

pytestmark = pytest.mark.fault

PREFERENCES = ["window seats", "green tea", "morning meetings", "dark chocolate"]
# The sweep publishes every queued session at once, not only those queued for 5 minutes.
AT_ONCE = {"MEMORYHUB_EXTRACTION_STRANDED_AFTER_MINUTES": "0"}
SWEEP_TWICE = (
    "from memoryhub.services.extraction_queue import requeue_stranded_extractions as sweep; "
    "print(sweep(), sweep())"
)
# The beat's task, published as beat would.
CALL_SWEEP_TASK = (
    "from memoryhub.tasks import requeue_stranded_extractions as task; print(task.delay().id)"
)


def _session_with_messages(stack: Stack, user: str, preference: str) -> str:
    started = call(stack.port, "POST", "/api/v1/sessions", key=stack.key, body={"user": user})
    assert started.status == 201, started.body
    session_id: str = started.json()["id"]
    for role, content in [("user", f"I prefer {preference}."), ("assistant", "Noted.")]:
        path = f"/api/v1/sessions/{session_id}/messages"
        body = {"role": role, "content": content}
        assert call(stack.port, "POST", path, key=stack.key, body=body).status == 201
    return session_id


def _extraction_statuses(stack: Stack, session_ids: list[str]) -> dict[str, str]:
    rows = stack.sql(
        "SELECT id::text, extraction_status FROM memoryhub_session WHERE id::text = ANY(%s)",
        (session_ids,),
    )
    return dict(rows)


def _start_worker(stack: Stack, log_path) -> subprocess.Popen[bytes]:
    argv = worker_command(concurrency=1)
    argv += ["--without-gossip", "--without-mingle", "--without-heartbeat", "--hostname=fault@%h"]
    process = subprocess.Popen(  # noqa: S603  # Our own interpreter and arguments.
        argv,
        cwd=REPO,
        env={**stack.env, **AT_ONCE},
        stdout=log_path.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    stack.processes.append(process)  # Killed in the stack's teardown if still running.
    return process


def test_sessions_ended_while_the_broker_is_down_are_extracted_exactly_once_after(
    stack, report, tmp_path
):
    users = {}
    for number, preference in enumerate(PREFERENCES):
        user = stack.create_user(f"broker-{number}")
        users[_session_with_messages(stack, user, preference)] = (user, preference)
    session_ids = list(users)

    stack.broker.stop()
    try:
        endings = []
        for session_id in session_ids:
            sent = time.monotonic()
            reply = call(stack.port, "POST", f"/api/v1/sessions/{session_id}/end", key=stack.key)
            endings.append((reply, time.monotonic() - sent))
        while_down = _extraction_statuses(stack, session_ids)
    finally:
        stack.broker.start()  # Empty: nothing of before the outage survives in it.
    report(
        "ending a session with the broker down took " + ", ".join(f"{s:.2f} s" for _, s in endings)
    )

    assert [reply.status for reply, _ in endings] == [200] * len(session_ids), endings
    assert {reply.json()["extraction_status"] for reply, _ in endings} == {"queued"}
    assert set(while_down.values()) == {"queued"}

    # The web server publishes again on its own once the broker is back (its pooled
    # connection died with the old broker: the publish retry reconnects).
    broker = stack.broker.client()
    assert broker.llen("celery") == 0
    user = stack.create_user("broker-after")
    after = _session_with_messages(stack, user, "jazz")
    assert call(stack.port, "POST", f"/api/v1/sessions/{after}/end", key=stack.key).status == 200
    assert broker.llen("celery") == 1
    users[after] = (user, "jazz")
    session_ids.append(after)

    swept = stack.manage("shell", "-c", SWEEP_TWICE, env=AT_ONCE).split()
    assert swept[-2:] == [str(len(session_ids))] * 2  # The last one is still queued too.
    assert broker.llen("celery") == 1 + 2 * len(session_ids)
    # And the beat task itself, queued behind them: by its turn there is nothing left to publish.
    called = stack.manage("shell", "-c", CALL_SWEEP_TASK, env=AT_ONCE).split()[-1]

    log = tmp_path / "worker.log"
    worker = _start_worker(stack, log)

    def all_extracted() -> bool:
        assert worker.poll() is None, log.read_text(errors="replace")
        return set(_extraction_statuses(stack, session_ids).values()) == {"done"}

    wait_for(all_extracted, "every session to be extracted", timeout=180)
    wait_for(
        lambda: broker.llen("celery") == 0 and broker.hlen("unacked") == 0,
        "the worker to take and acknowledge every task",
    )
    wait_for(lambda: f"[{called}] succeeded" in log.read_text(errors="replace"), "the beat task")
    assert _sweep_result(log.read_text(errors="replace"), called) == "0"

    runs = stack.sql(
        "SELECT session_id::text, status, items_written FROM memoryhub_extractionrun "
        "WHERE session_id::text = ANY(%s)",
        (session_ids,),
    )
    assert sorted(session_id for session_id, _, _ in runs) == sorted(session_ids)  # One each.
    for session_id, status, items_written in runs:
        user, preference = users[session_id]
        contents = list(stack.stored_memories(user).values())
        assert status == "done"
        assert f"The user prefers {preference}." in contents
        assert len(contents) == len(set(contents)) == items_written  # Written once, not twice.


def _sweep_result(log: str, task_id: str) -> str:
    line = next(line for line in log.splitlines() if f"[{task_id}] succeeded" in line)
    return line.rsplit(":", 1)[-1].strip()
