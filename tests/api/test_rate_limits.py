"""Rate limits: invalid keys cost no database write per request; past windows are swept."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryhub.celery import app
from memoryhub.models import RateLimitWindow
from memoryhub.services import ratelimit
from memoryhub.services.agents import key_owner
from memoryhub.settings import cache_settings

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


@pytest.fixture
def database_cache(db, settings):
    settings.CACHES = {"default": cache_settings("db://", debug=False)}
    cache.clear()
    yield cache
    cache.clear()


def test_the_cache_sweep_deletes_expired_entries_of_the_database_cache_only(database_cache):
    now = timezone.now()
    with time_machine.travel(now - timedelta(minutes=10), tick=False):
        database_cache.set("allauth:rl:stale", [1.0], timeout=60)
    database_cache.set("allauth.mfa.totp.used?user=1&code=123456", "y", timeout=90)
    assert ratelimit.sweep_expired_cache_entries(now=now) == 1
    assert database_cache.get("allauth.mfa.totp.used?user=1&code=123456") == "y"
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memoryhub_cache")
        assert cursor.fetchone()[0] == 1


def test_the_cache_sweep_leaves_any_other_cache_alone(db, settings):
    settings.CACHES = {"default": cache_settings("locmem://", debug=False)}
    with CaptureQueriesContext(connection) as captured:
        assert ratelimit.sweep_expired_cache_entries() == 0
    assert captured.captured_queries == []


def test_the_cache_sweep_finds_expired_entries_through_the_expires_index(database_cache):
    with CaptureQueriesContext(connection) as captured:
        ratelimit.sweep_expired_cache_entries()
    (statement,) = [q["sql"] for q in captured.captured_queries]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # As with many rows: prefer an index.
        cursor.execute(f"EXPLAIN {statement}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "memoryhub_cache_expires" in plan, plan


def test_the_cache_sweep_is_scheduled_every_five_minutes_as_a_registered_task(settings):
    app.loader.import_default_modules()
    entry = settings.CELERY_BEAT_SCHEDULE["sweep-expired-cache-entries"]
    assert (entry["task"], entry["schedule"]) == ("memoryhub.sweep_expired_cache_entries", 300.0)
    assert entry["task"] in app.tasks


def _budget(response) -> tuple[str, str, str]:
    return (
        response["X-RateLimit-Limit"],
        response["X-RateLimit-Remaining"],
        response["X-RateLimit-Reset"],
    )


def test_every_answer_to_a_valid_key_carries_its_budget_up_to_the_429(
    api, user, settings, frozen_at_second_15
):
    settings.MEMORYHUB_RATE_LIMIT_PER_MINUTE = 3
    ok = api.get("/profile", user="alice")
    invalid = api.get("/memories", user="alice", limit="many")  # A 422 counts too.
    missing = api.get("/profile", user="nobody")  # A 404.
    refused = api.get("/profile", user="alice")
    assert [r.status_code for r in (ok, invalid, missing, refused)] == [200, 422, 404, 429]
    assert [_budget(r) for r in (ok, invalid, missing, refused)] == [
        ("3", "2", "45"),
        ("3", "1", "45"),
        ("3", "0", "45"),
        ("3", "0", "45"),
    ]
    assert refused["Retry-After"] == "45"


def test_an_invalid_or_missing_key_is_told_its_ips_budget(
    caller, user, settings, frozen_at_second_15
):
    settings.MEMORYHUB_INVALID_KEY_LIMIT_PER_MINUTE = 2
    first = caller(BAD_KEY).get("/profile", user="alice")
    second = caller(BAD_KEY).get("/profile", user="alice")
    no_key = caller(None).get("/profile", user="alice")  # Not counted: the budget as it is.
    refused = caller(BAD_KEY).get("/profile", user="alice")
    assert [r.status_code for r in (first, second, no_key, refused)] == [401, 401, 401, 429]
    assert [_budget(r) for r in (first, second, no_key, refused)] == [
        ("2", "1", "45"),
        ("2", "0", "45"),
        ("2", "0", "45"),
        ("2", "0", "45"),
    ]


def test_a_limit_turned_off_sends_no_budget_and_pages_outside_the_api_none(
    api, client, user, settings
):
    settings.MEMORYHUB_RATE_LIMIT_PER_MINUTE = 0
    response = api.get("/profile", user="alice")
    assert response.status_code == 200 and "X-RateLimit-Limit" not in response
    settings.MEMORYHUB_RATE_LIMIT_PER_MINUTE = 600
    assert api.get("/profile", user="alice")["X-RateLimit-Limit"] == "600"
    assert "X-RateLimit-Limit" not in client.get("/")


def test_the_openapi_schema_documents_the_budget_headers_on_every_response(client):
    schema = client.get("/api/v1/openapi.json").json()
    assert set(schema["components"]["headers"]) == {
        "X-RateLimit-Limit",
        "X-RateLimit-Remaining",
        "X-RateLimit-Reset",
    }
    responses = [
        response
        for operations in schema["paths"].values()
        for operation in operations.values()
        for response in operation["responses"].values()
    ]
    assert len(responses) > 50
    assert all(set(r["headers"]) == set(schema["components"]["headers"]) for r in responses)
