"""A real Celery worker on Redis, killed mid-extraction: the session is still extracted once.

The worker is a subprocess on the test database (pytest-django's `transactional_db`, so both
processes see committed rows). Its extraction goes to a fake Messages API that holds the first
request open; the test kills the worker there with SIGKILL, starts another, and the broker
redelivers the unacknowledged task (acks_late, a short Redis visibility timeout).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from celery import Celery
from django.conf import settings

from memoryhub.actors import Actor
from memoryhub.celery import app
from memoryhub.models import ActorType, Channel, ExtractionRun, Memory, Session
from memoryhub.services.sessions import add_message, end_session, start_session
from tests import factories
from tests.fake_anthropic import FakeAnthropic, Reply, tool_use_reply
from tests.processes import current_database_url, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

# A Redis database of its own: the test empties it before it starts. Two test runs at once on
# one machine each pick their own (MEMORYHUB_TEST_REDIS_DB).
REDIS_DB = int(os.environ.get("MEMORYHUB_TEST_REDIS_DB", "11"))
BROKER_URL = f"redis://127.0.0.1:6379/{REDIS_DB}"
VISIBILITY_TIMEOUT_SECONDS = 3
REPO = Path(__file__).resolve().parents[2]
AGENT = Actor(ActorType.AGENT, "agent-1", Channel.API, label="assistant")


@pytest.fixture
def producer() -> Iterator[Celery]:
    """A Celery app on the test's Redis database, current while the test runs.

    Shared tasks resolve the current app when called, so the services' own enqueueing
    (`end_session`) publishes here; the project app, whatever other tests did to its
    connection pool, is left alone and made current again afterwards.
    """
    client = redis.Redis.from_url(BROKER_URL)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.fail(f"this test needs Redis at {BROKER_URL} (deselect it with -m 'not worker')")
    client.flushdb()
    test_app = Celery("worker-test", broker=BROKER_URL, set_as_current=True)
    yield test_app
    test_app.close()
    app.set_current()
    client.flushdb()
    client.close()


@dataclass(frozen=True)
class Worker:
    process: subprocess.Popen[bytes]
    log: Path

    def has_finished(self, task_id: str) -> bool:
        return f"[{task_id}] succeeded" in self.log.read_text(errors="replace")

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


@pytest.fixture
def start_worker(tmp_path: Path, transactional_db) -> Iterator[Callable[[str, str], Worker]]:
    workers: list[Worker] = []

    def start(name: str, anthropic_url: str) -> Worker:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
            "DATABASE_URL": current_database_url(),
            "DATABASE_CONN_MAX_AGE": "0",
            "CELERY_BROKER_URL": BROKER_URL,
            "CELERY_VISIBILITY_TIMEOUT_SECONDS": str(VISIBILITY_TIMEOUT_SECONDS),
            "SECRET_KEY": settings.SECRET_KEY,
            "MEMORYHUB_MASTER_KEYS": settings.MEMORYHUB_MASTER_KEYS,
            "MEMORYHUB_AUDIT_KEY": settings.MEMORYHUB_AUDIT_KEY,
            "ANTHROPIC_API_KEY": "sk-test",
            "ANTHROPIC_BASE_URL": anthropic_url,
            "MEMORYHUB_LLM_TIMEOUT_SECONDS": "300",
            "MEMORYHUB_LLM_MAX_RETRIES": "0",
        }
        log = tmp_path / f"{name}.log"
        process = subprocess.Popen(  # noqa: S603  # Our own interpreter and arguments.
            [
                sys.executable,
                *("-m", "celery", "-A", "memoryhub", "worker", "--pool=solo"),
                # Seconds, not an hour, to see a redelivery: below the tasks' time limits.
                "--allow-short-visibility-timeout",
                *("--without-gossip", "--without-mingle", "--without-heartbeat"),
                *("--loglevel=INFO", f"--hostname={name}@%h"),
            ],
            cwd=REPO,
            env=env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        worker = Worker(process, log)
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        if worker.process.poll() is None:
            worker.kill()


def _extraction_status(session: Session) -> str:
    return Session.objects.values_list("extraction_status", flat=True).get(pk=session.pk)


def test_a_worker_killed_mid_extraction_leaves_it_to_be_done_exactly_once(
    producer, start_worker, embedder
):
    broker = redis.Redis.from_url(BROKER_URL)
    user = factories.make_user()
    mode = factories.mode_of(user)
    session = start_session(user=user, mode=mode, actor=AGENT)
    for line in ("I work at Initech as a data engineer.", "Let's plan my week."):
        add_message(session=session, role="user", content=line, actor=AGENT, embedder=embedder)
    reply = tool_use_reply(
        {
            "summary": {
                # Within the bound: 40% of the 55 characters the user wrote.
                "text": "Works at Initech.",
                "topic": "work",
                "message_refs": ["m1"],
            },
            "items": [
                {
                    "kind": "fact",
                    "content": "The user works at Initech.",
                    "quote": "I work at Initech",
                    "message_refs": ["m1"],
                    "slot": "employer",
                    "value": "Initech",
                }
            ],
        }
    )
    with FakeAnthropic() as fake:
        # The first attempt hangs in the LLM call until the worker is killed; the retry succeeds.
        fake.add_replies(Reply(status=200, body=reply.body, delay=600), reply)
        end_session(session=session, actor=AGENT)  # Enqueues the task once committed.
        first = start_worker("first", fake.url)
        try:
            wait_for(lambda: len(fake.requests) == 1, "the first worker to call the LLM")
        except AssertionError as error:
            log = first.log.read_text(errors="replace")[-4000:]
            status = _extraction_status(session)
            raise AssertionError(f"{error}; session {status}; worker log:\n{log}") from None
        assert _extraction_status(session) == "running"

        first.kill()
        assert Memory.objects.for_owner(user=user, mode=mode).count() == 0
        assert broker.hlen("unacked") == 1  # Never acknowledged: the broker still owns it.

        second = start_worker("second", fake.url)
        wait_for(lambda: _extraction_status(session) == "done", "the redelivered extraction")
        wait_for(lambda: broker.hlen("unacked") == 0, "the second worker to acknowledge it")

        # A duplicate delivery (a producer retry, say) must change nothing either.
        duplicate = producer.send_task("memoryhub.extract_session", args=[str(session.pk)])
        wait_for(lambda: second.has_finished(duplicate.id), "the duplicate task")
        assert len(fake.requests) == 2

    runs = ExtractionRun.objects.filter(session=session)
    assert [(run.status, run.items_written) for run in runs] == [("done", 2)]
    memories = Memory.objects.for_owner(user=user, mode=mode)
    assert sorted(memories.values_list("kind", flat=True)) == ["fact", "session_summary"]
    assert memories.get(kind="fact").evidence_count == 1
