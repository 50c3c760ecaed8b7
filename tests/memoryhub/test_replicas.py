"""Without DATABASE_REPLICA_URLS nothing changes; the replica settings are parsed strictly.

The behaviour with a real streaming replica is in tests/replication/ (marked `replica`).
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memoryhub.actors import Actor
from memoryhub.queries.memories import list_memories
from memoryhub.replicas import note_write, read_alias_for, replica_aliases
from memoryhub.settings import REPLICA_CONNECT_TIMEOUT_SECONDS, replica_databases
from tests import factories

FENCE_WORDS = ("userwritemark", "pg_last_wal_replay_lsn", "pg_current_wal_")


def _fence_queries(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries if any(word in q["sql"] for word in FENCE_WORDS)]


def test_without_replicas_every_read_goes_to_the_primary_at_no_cost(
    user, django_assert_num_queries, django_capture_on_commit_callbacks
):
    assert replica_aliases() == []
    with django_assert_num_queries(0), django_capture_on_commit_callbacks() as callbacks:
        assert read_alias_for(user.pk) == "default"
        note_write(user.pk)
    assert callbacks == []


def test_without_replicas_writes_and_reads_run_no_fence_query(
    user, personal, embedder, django_capture_on_commit_callbacks
):
    with (
        CaptureQueriesContext(connection) as queries,
        django_capture_on_commit_callbacks(execute=True),
    ):
        factories.make_memory(user, personal, "Grows tomatoes on the balcony", embedder=embedder)
        items = list_memories(user=user, mode=personal, actor=Actor.system("tests"))
    assert [item.content for item in items] == ["Grows tomatoes on the balcony"]
    assert _fence_queries(queries) == []


def test_replica_urls_become_numbered_databases_that_mirror_default_in_tests():
    replicas = replica_databases(
        "postgresql://ro:pw@replica-a.internal:6543/memoryhub, "
        "postgresql://ro@/memoryhub?host=/run/replica-b"
    )
    assert list(replicas) == ["replica_0", "replica_1"]
    first, second = replicas["replica_0"], replicas["replica_1"]
    assert (first["HOST"], first["PORT"], first["USER"]) == ("replica-a.internal", "6543", "ro")
    assert second["HOST"] == "/run/replica-b"
    assert first["TEST"] == {"MIRROR": "default"}
    options = first["OPTIONS"]
    assert isinstance(options, dict)
    assert options["connect_timeout"] == REPLICA_CONNECT_TIMEOUT_SECONDS
    # A replica that cannot hand out a connection soon is passed over, not waited for.
    if "pool" in options:
        assert options["pool"]["timeout"] <= REPLICA_CONNECT_TIMEOUT_SECONDS


@pytest.mark.parametrize("urls", [None, "", " , "])
def test_no_replica_urls_means_no_replica_databases(urls):
    assert replica_databases(urls) == {}


def test_a_replica_url_that_is_not_postgresql_is_refused():
    with pytest.raises(ImproperlyConfigured, match="DATABASE_REPLICA_URLS"):
        replica_databases("postgresql://ro@replica-a/memoryhub,mysql://ro@replica-b/memoryhub")
