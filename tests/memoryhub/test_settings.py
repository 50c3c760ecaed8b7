"""Environment helpers fail loudly; DATABASE_URL is parsed strictly; the deployment checks pass."""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import connection
from django.test import override_settings

from memoryhub.settings import (
    PER_PROCESS_CACHE,
    cache_settings,
    database_settings,
    env_bool,
    env_int,
)

REPO = Path(__file__).resolve().parents[2]


def test_env_bool_rejects_a_malformed_value(monkeypatch):
    monkeypatch.setenv("MEMORYHUB_TEST_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="MEMORYHUB_TEST_FLAG"):
        env_bool("MEMORYHUB_TEST_FLAG", default=False)


def test_env_bool_and_int_parse_good_values(monkeypatch):
    monkeypatch.setenv("MEMORYHUB_TEST_FLAG", "Yes")
    monkeypatch.setenv("MEMORYHUB_TEST_INT", "42")
    assert env_bool("MEMORYHUB_TEST_FLAG", default=False) is True
    assert env_int("MEMORYHUB_TEST_INT", 1) == 42


def test_env_int_rejects_a_malformed_value(monkeypatch):
    monkeypatch.setenv("MEMORYHUB_TEST_INT", "4x2")
    with pytest.raises(ImproperlyConfigured, match="integer"):
        env_int("MEMORYHUB_TEST_INT", 1)


def test_env_int_refuses_a_number_below_its_minimum(monkeypatch):
    monkeypatch.setenv("MEMORYHUB_TEST_INT", "-24")
    with pytest.raises(ImproperlyConfigured, match="MEMORYHUB_TEST_INT must be at least 0"):
        env_int("MEMORYHUB_TEST_INT", 1)
    monkeypatch.setenv("MEMORYHUB_TEST_INT", "0")
    assert env_int("MEMORYHUB_TEST_INT", 1) == 0
    with pytest.raises(ImproperlyConfigured, match="at least 1, got 0"):
        env_int("MEMORYHUB_TEST_INT", 1, minimum=1)


def test_database_url_is_parsed_into_django_settings():
    parsed = database_settings("postgresql://mh:s%40cret@db.internal:6543/memoryhub")
    assert parsed["HOST"] == "db.internal"
    assert parsed["PORT"] == "6543"
    assert parsed["USER"] == "mh"
    assert parsed["PASSWORD"] == "s@cret"
    assert parsed["NAME"] == "memoryhub"


def test_a_socket_database_url_uses_the_host_parameter():
    parsed = database_settings("postgresql://postgres:@/postgres?host=/tmp/pg")
    assert parsed["HOST"] == "/tmp/pg"


def test_a_non_postgres_database_url_is_refused():
    with pytest.raises(ImproperlyConfigured, match="postgresql"):
        database_settings("mysql://root@localhost/db")


def test_the_default_database_takes_connections_from_a_bounded_pool():
    parsed = database_settings("postgresql://mh@db.internal/memoryhub")
    assert parsed["CONN_MAX_AGE"] == 0  # Django's pool refuses persistent connections.
    pool = parsed["OPTIONS"]["pool"]
    assert pool["max_size"] == 10
    assert pool["timeout"] == 5.0
    assert pool["min_size"] <= pool["max_size"]
    assert parsed["OPTIONS"]["connect_timeout"] == 5


def _production_env(**extra: str) -> dict[str, str]:
    keys = f"k1:{base64.b64encode(secrets.token_bytes(32)).decode()}"
    # The browser tests set DJANGO_ALLOW_ASYNC_UNSAFE for this process; no deployment does.
    inherited = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    return {
        **inherited,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "MEMORYHUB_MASTER_KEYS": keys,
        "MEMORYHUB_AUDIT_KEY": secrets.token_urlsafe(32),
        "ALLOWED_HOSTS": "memory.example.com",
        **extra,
    }


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603  # Our own interpreter and arguments.
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_deploy_is_clean_with_debug_off_and_the_documented_defaults():
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=_production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_warns_when_https_hardening_is_turned_off():
    env = _production_env(SECURE_HSTS_SECONDS="0", SESSION_COOKIE_SECURE="false")
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode != 0
    assert "security.W004" in result.stderr
    assert "security.W012" in result.stderr


def test_debug_off_without_secrets_fails_loudly():
    env = {k: v for k, v in _production_env().items() if k != "MEMORYHUB_MASTER_KEYS"}
    result = _manage("check", env=env)
    assert result.returncode != 0
    assert "MEMORYHUB_MASTER_KEYS must be set" in result.stderr


def test_a_negative_retention_or_a_zero_half_life_stops_the_start():
    # A typo in the environment fails at start, naming the variable, before any sweep runs.
    for name, value, message in (
        ("MEMORYHUB_IDEMPOTENCY_KEEP_HOURS", "-1", "at least 0"),
        ("MEMORYHUB_DECAY_HALF_LIFE_DAYS", "0", "at least 1"),
    ):
        result = _manage("check", env={**os.environ, name: value})
        assert result.returncode != 0
        assert f"{name} must be {message}" in result.stderr


def test_runstack_production_refuses_debug_and_the_folder_broker():
    env = _production_env(DEBUG="true", CELERY_BROKER_URL="filesystem://")
    result = _manage("runstack", "--production", env=env)
    assert result.returncode != 0
    assert "DEBUG must be off" in result.stderr
    assert "CELERY_BROKER_URL must name a Redis or RabbitMQ broker" in result.stderr


def test_cache_url_names_redis_the_database_or_this_process():
    redis_cache = cache_settings("redis://127.0.0.1:6379/3", debug=False)
    assert redis_cache["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert redis_cache["LOCATION"] == "redis://127.0.0.1:6379/3"
    database_cache = cache_settings("db://", debug=True)
    assert database_cache["BACKEND"] == "django.core.cache.backends.db.DatabaseCache"
    assert database_cache["LOCATION"] == "memoryhub_cache"
    assert cache_settings("locmem://", debug=False)["BACKEND"] == PER_PROCESS_CACHE
    with pytest.raises(ImproperlyConfigured, match="CACHE_URL"):
        cache_settings("memcached://127.0.0.1:11211", debug=False)


def test_without_cache_url_production_shares_the_database_cache_and_development_its_memory():
    assert cache_settings(None, debug=False) == cache_settings("db://", debug=False)
    assert cache_settings(None, debug=True)["BACKEND"] == PER_PROCESS_CACHE


def test_migrate_creates_the_database_caches_table_as_createcachetable_would(db):
    assert "memoryhub_cache" in connection.introspection.table_names()
    out = StringIO()
    with override_settings(CACHES={"default": cache_settings("db://", debug=False)}):
        call_command("createcachetable", dry_run=True, verbosity=2, stdout=out)
    assert out.getvalue() == "Cache table 'memoryhub_cache' already exists.\n"


def test_runstack_production_refuses_a_per_process_cache_with_several_workers():
    env = _production_env(CACHE_URL="locmem://", WEB_CONCURRENCY="2", DEBUG="true")
    result = _manage("runstack", "--production", env=env)
    assert result.returncode != 0
    assert "CACHE_URL must name a cache all 2 web workers share" in result.stderr
    # One worker has nothing to share with; DEBUG on still stops this one.
    env = _production_env(CACHE_URL="locmem://", WEB_CONCURRENCY="1", DEBUG="true")
    result = _manage("runstack", "--production", env=env)
    assert "DEBUG must be off" in result.stderr
    assert "CACHE_URL" not in result.stderr


def test_debug_is_off_unless_the_environment_turns_it_on():
    env = {k: v for k, v in _production_env().items() if k != "DEBUG"}
    result = _manage(
        "shell", "-c", "from django.conf import settings; print(settings.DEBUG)", env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False"


def test_debug_off_without_an_audit_key_fails_loudly():
    env = {k: v for k, v in _production_env().items() if k != "MEMORYHUB_AUDIT_KEY"}
    result = _manage("check", env=env)
    assert result.returncode != 0
    assert "MEMORYHUB_AUDIT_KEY must be set when DEBUG is off" in result.stderr


def test_debug_off_with_the_audit_key_equal_to_the_secret_key_fails_loudly():
    env = _production_env()
    env["MEMORYHUB_AUDIT_KEY"] = env["SECRET_KEY"]
    result = _manage("check", env=env)
    assert result.returncode != 0
    assert (
        "MEMORYHUB_AUDIT_KEY must be set when DEBUG is off, to a value other than SECRET_KEY"
        in (result.stderr)
    )


def test_runstack_production_refuses_the_console_email_backend_and_the_embedded_database():
    env = {k: v for k, v in _production_env().items() if k not in ("EMAIL_BACKEND", "DATABASE_URL")}
    result = _manage("runstack", "--production", env=env)
    assert result.returncode != 0
    assert "EMAIL_BACKEND is the console backend" in result.stderr
    assert "--allow-console-email" in result.stderr
    assert "DATABASE_URL is unset" in result.stderr
    assert "--allow-embedded-db" in result.stderr


def test_runstack_production_accepts_the_console_email_and_embedded_database_when_told():
    # DEBUG stays on, so the command still stops before starting anything, on that alone.
    env = {k: v for k, v in _production_env(DEBUG="true").items() if k != "EMAIL_BACKEND"}
    env.pop("DATABASE_URL", None)
    result = _manage(
        "runstack", "--production", "--allow-console-email", "--allow-embedded-db", env=env
    )
    assert result.returncode != 0
    assert "DEBUG must be off" in result.stderr
    assert "EMAIL_BACKEND" not in result.stderr
    assert "DATABASE_URL" not in result.stderr


def test_a_web_worker_hands_the_gil_over_as_often_as_configured():
    code = "import sys, memoryhub.asgi; print(sys.getswitchinterval())"
    env = {**os.environ, "DEBUG": "true", "MEMORYHUB_WEB_GIL_SWITCH_MICROSECONDS": "700"}
    completed = subprocess.run(  # noqa: S603  # Our own interpreter and arguments.
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert float(completed.stdout.split()[-1]) == pytest.approx(0.0007)
