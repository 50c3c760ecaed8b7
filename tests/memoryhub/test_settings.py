"""Environment helpers fail loudly on malformed values; DATABASE_URL is parsed strictly."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from memoryhub.settings import database_settings, env_bool, env_int


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
