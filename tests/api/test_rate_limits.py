"""Rate limits: invalid keys cost no database write per request; past windows are swept."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryhub.celery import app
from memoryhub.models import RateLimitWindow
from memoryhub.services import ratelimit
from memoryhub.services.agents import key_owner

TABLE = RateLimitWindow._meta.db_table
BAD_KEY = "mh_not-a-real-key"


def _window_writes(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if TABLE in q["sql"]]


@pytest.fixture
def frozen_at_second_15():
    with time_machine.travel(timezone.now().replace(second=15), tick=False) as traveller:
        yield traveller


def test_a_burst_of_invalid_keys_below_a_fifth_of_the_limit_touches_no_window_row(
    caller, user, settings, frozen_at_second_15
):
    settings.MEMORYHUB_INVALID_KEY_LIMIT_PER_MINUTE = 30
    with CaptureQueriesContext(connection) as captured:
        statuses = [caller(BAD_KEY).get("/profile", user="alice").status_code for _ in range(5)]
    assert statuses == [401] * 5
    assert _window_writes(captured) == []
    assert not RateLimitWindow.objects.exists()


def test_invalid_keys_get_429_with_retry_after_past_the_limit_after_one_write_per_fifth(
    caller, user, settings, frozen_at_second_15
):
    settings.MEMORYHUB_INVALID_KEY_LIMIT_PER_MINUTE = 30
    with CaptureQueriesContext(connection) as captured:
        responses = [caller(BAD_KEY).get("/profile", user="alice") for _ in range(45)]
    assert [r.status_code for r in responses] == [401] * 30 + [429] * 15
    assert responses[-1].json()["code"] == "rate_limited"
    assert responses[-1]["Retry-After"] == "45"
    # 45 bad keys, 5 writes: one per 6 requests up to the limit, none for the refused ones.
    assert len(_window_writes(captured)) == 5
    assert RateLimitWindow.objects.get(bucket="invalid-key:127.0.0.1").count == 30


def test_invalid_keys_counted_by_other_workers_use_up_the_same_budget(
    caller, user, settings, frozen_at_second_15
):
    settings.MEMORYHUB_INVALID_KEY_LIMIT_PER_MINUTE = 30
    # Another worker already added 24 bad keys from this IP to the shared row.
    RateLimitWindow.objects.create(
        bucket="invalid-key:127.0.0.1",
        window_start=timezone.now().replace(second=0, microsecond=0),
        count=24,
    )
    statuses = [caller(BAD_KEY).get("/profile", user="alice").status_code for _ in range(8)]
    # This worker learns of them at its first write (the 6th request), then refuses.
    assert statuses == [401] * 6 + [429] * 2


def test_the_invalid_key_budget_starts_again_next_minute(caller, user, settings):
    settings.MEMORYHUB_INVALID_KEY_LIMIT_PER_MINUTE = 2
    start = timezone.now().replace(second=30)
    with time_machine.travel(start, tick=False):
        statuses = [caller(BAD_KEY).get("/profile", user="alice").status_code for _ in range(3)]
    with time_machine.travel(start + timedelta(minutes=1), tick=False):
        assert caller(BAD_KEY).get("/profile", user="alice").status_code == 401
    assert statuses == [401, 401, 429]


def test_a_valid_keys_budget_counts_what_other_workers_counted(
    api, agent_and_key, user, settings, frozen_at_second_15
):
    settings.MEMORYHUB_RATE_LIMIT_PER_MINUTE = 10
    owner = key_owner(agent_and_key[0].keys.get())
    RateLimitWindow.objects.create(
        bucket=owner, window_start=timezone.now().replace(second=0, microsecond=0), count=9
    )
    assert api.get("/profile", user="alice").status_code == 200
    response = api.get("/profile", user="alice")
    assert (response.status_code, response["Retry-After"]) == (429, "45")
    assert RateLimitWindow.objects.get(bucket=owner).count == 11


def _window(bucket, minutes_ago, now):
    start = now.replace(second=0, microsecond=0) - timedelta(minutes=minutes_ago)
    return RateLimitWindow.objects.create(bucket=bucket, window_start=start, count=1)


def test_the_sweep_deletes_past_windows_and_keeps_the_current_and_previous_ones(db, monkeypatch):
    monkeypatch.setattr(ratelimit, "SWEEP_BATCH", 2)
    now = timezone.now()
    for number in range(5):
        _window(f"invalid-key:10.0.0.{number}", 2 + number, now)  # IPs that never came back.
    _window("agent:gone", 60 * 24, now)
    kept = {_window("agent:1", 1, now).pk, _window("agent:1", 0, now).pk}
    assert ratelimit.sweep_rate_limit_windows(now=now) == 6
    assert set(RateLimitWindow.objects.values_list("pk", flat=True)) == kept
    assert ratelimit.sweep_rate_limit_windows(now=now) == 0


def test_the_sweep_finds_past_windows_through_the_window_start_index(db):
    with CaptureQueriesContext(connection) as captured:
        ratelimit.sweep_rate_limit_windows()
    (statement,) = [sql for sql in _window_writes(captured) if sql.startswith("DELETE")]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # As with many rows: prefer an index.
        cursor.execute(f"EXPLAIN {statement}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "rate_limit_window_start_idx" in plan, plan


def test_the_window_sweep_is_scheduled_every_five_minutes_as_a_registered_task(settings):
    app.loader.import_default_modules()
    entry = settings.CELERY_BEAT_SCHEDULE["sweep-rate-limit-windows"]
    assert (entry["task"], entry["schedule"]) == ("memoryhub.sweep_rate_limit_windows", 300.0)
    assert entry["task"] in app.tasks
