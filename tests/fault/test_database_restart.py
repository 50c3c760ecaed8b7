"""PostgreSQL restarted under load: 503 with Retry-After meanwhile, then recovery on its own.

Client threads write and read memories through the API of the production web server (two
workers, each with its psycopg pool) while the test stops PostgreSQL for a few seconds and
starts it again. No request may get a 500 or an HTML error, and every write the service
acknowledged must still be there with its content.
"""

from __future__ import annotations

import secrets
import time

import pytest

from tests.fault.client import call, is_unavailable_reply
from tests.fault.conftest import Stack, wait_for
from tests.fault.load import Load, running

pytestmark = pytest.mark.fault

OUTAGE_SECONDS = 3
# Requests in a row that must succeed after the restart to call the service recovered; with a
# fresh connection each, they land on both workers.
RECOVERED_AFTER = 20


def _answers_in_a_row(stack: Stack, user: str, count: int) -> bool:
    for _ in range(count):
        try:
            reply = call(stack.port, "GET", f"/api/v1/memories?user={user}&limit=1", key=stack.key)
        except OSError:
            return False
        if reply.status != 200:
            return False
    return True


def test_postgresql_restarted_under_load_answers_503_then_recovers_losing_no_write(stack, report):
    user = stack.create_user("restart-writer")
    # Any session key makes the dashboard look its session up in PostgreSQL.
    page_cookie = f"sessionid={secrets.token_hex(16)}"
    load = Load(stack.port, stack.key, user, threads=4)
    try:
        with running(load):
            started = time.monotonic()
            wait_for(lambda: load.successes_since(started) >= 10, "writes before the outage")

            stack.cluster.stop(mode="fast")
            stopped_at = time.monotonic()
            page = call(stack.port, "GET", "/dashboard/", cookie=page_cookie)

            def outage_seen() -> bool:
                unavailable = [
                    o
                    for o in load.snapshot()
                    if o.started_at >= stopped_at and o.reply is not None and o.reply.status == 503
                ]
                return bool(unavailable) and time.monotonic() - stopped_at >= OUTAGE_SECONDS

            wait_for(outage_seen, "a 503 from the load during the outage")
            stack.cluster.start()
            restarted_at = time.monotonic()

            first_answer = wait_for(lambda: _answers_in_a_row(stack, user, 1), "a first 200")
            recovered = wait_for(
                lambda: _answers_in_a_row(stack, user, RECOVERED_AFTER), "steady 200s"
            )
            recovered_at = time.monotonic()
            wait_for(lambda: load.successes_since(recovered_at) >= 10, "writes after recovery")
    finally:
        if not stack.cluster.is_running():
            stack.cluster.start()  # The other fault tests share this cluster.
    outcomes = load.snapshot()
    report(
        f"PostgreSQL down {restarted_at - stopped_at:.1f} s; first 200 "
        f"{first_answer:.1f} s after the restart, {RECOVERED_AFTER} more in a row by "
        f"{first_answer + recovered:.1f} s; {len(outcomes)} requests, "
        f"{sum(not o.is_success for o in outcomes)} of them 503"
    )
    broken = [o for o in outcomes if o.reply is None]
    assert broken == [], f"requests broke off: {broken[:3]}"
    bad = [o.reply for o in outcomes if not o.is_success and not is_unavailable_reply(o.reply)]
    assert bad == [], f"not 2xx nor a proper 503: {bad[:3]}\n{stack.web.log_text()}"
    during = [o for o in outcomes if stopped_at <= o.started_at < restarted_at]
    assert any(o.reply.status == 503 for o in during)

    assert page.status == 503, page.body[:500]
    assert page.headers["content-type"].startswith("text/html")
    assert b"Back in a moment" in page.body
    assert int(page.headers["retry-after"]) >= 1

    acknowledged = load.acknowledged_writes()
    stored = stack.stored_memories(user)
    assert {memory_id: stored.get(memory_id) for memory_id in acknowledged} == acknowledged
