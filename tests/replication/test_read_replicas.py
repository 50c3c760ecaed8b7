"""Reads scale out to a real streaming replica; users still read their own writes at once.

The standby's WAL replay is paused with pg_wal_replay_pause() to make its lag deterministic:
whatever is written meanwhile is on the primary only. Which database served a read is read in
the standby's own statement log. The server is one uvicorn process (tests/replication/conftest.py).
"""

from __future__ import annotations

import pytest

from tests.replication.conftest import MAX_LAG_SECONDS, Replicated, wait_for

pytestmark = pytest.mark.replica


def _contents(replicated: Replicated, user: str) -> list[str]:
    return [memory.content for memory in replicated.hub.list_memories(user).items]


def _user_id(replicated: Replicated, external_id: str) -> str:
    return str(replicated.hub.create_user(external_id)["id"])


def _count_on(cluster, sql: str, params: tuple[object, ...]) -> int:
    return int(cluster.value(sql, params))


def test_a_user_reads_their_own_write_at_once_while_the_standby_lags(replicated):
    hub = replicated.hub
    ann = _user_id(replicated, "ann")
    hub.remember("ann", "Ann keeps bees behind the house")
    replicated.wait_until_standby_has_caught_up()

    with replicated.replay_paused():
        hub.remember("ann", "Ann's new beehive stands in the orchard")
        with replicated.standby_statements() as statements:
            contents = _contents(replicated, "ann")
            found = [r.content for r in hub.search("ann", "where is the beehive?", k=3)]
            facts = [m.content for m in hub.profile("ann")["facts"]]
            context = hub.context("ann", "Where is my beehive?")
        standby_rows = _count_on(
            replicated.standby, "SELECT count(*) FROM memoryhub_memory WHERE user_id = %s", (ann,)
        )

    new = "Ann's new beehive stands in the orchard"
    assert contents == [new, "Ann keeps bees behind the house"]
    assert found[0] == new
    assert new in facts
    assert new in context.text
    # The standby had not replayed the write: every read above came from the primary.
    assert standby_rows == 1
    assert statements.has_checked_replay
    assert not statements.has_read_memories


def test_a_user_without_a_recent_write_is_read_from_the_standby(replicated):
    hub = replicated.hub
    _user_id(replicated, "ben")
    hub.remember("ben", "Ben plays chess on Sunday mornings")
    replicated.wait_until_standby_has_caught_up()

    with replicated.replay_paused():
        # Another user's write while the standby lags does not hold Ben's reads back.
        _user_id(replicated, "cleo")
        hub.remember("cleo", "Cleo rows on the lake")
        with replicated.standby_statements() as statements:
            contents = _contents(replicated, "ben")
            found = [r.content for r in hub.search("ben", "which game does he play?")]
            facts = [m.content for m in hub.profile("ben")["facts"]]
            context = hub.context("ben", "Shall we play a game?")

    assert contents == ["Ben plays chess on Sunday mornings"]
    assert found == ["Ben plays chess on Sunday mornings"]
    assert facts == ["Ben plays chess on Sunday mornings"]
    assert "Ben plays chess on Sunday mornings" in context.text
    assert statements.has_read_memories


def test_audit_rows_of_reads_served_by_the_standby_are_written_on_the_primary(replicated):
    hub = replicated.hub
    _user_id(replicated, "dora")
    hub.remember("dora", "Dora speaks Portuguese at home")
    replicated.wait_until_standby_has_caught_up()
    count_sql = "SELECT count(*) FROM memoryhub_auditentry WHERE action = %s"

    with replicated.replay_paused():
        before = _count_on(replicated.primary, count_sql, ("memory.search",))
        with replicated.standby_statements() as statements:
            found = hub.search("dora", "which language at home?")
        after = _count_on(replicated.primary, count_sql, ("memory.search",))
        on_standby = _count_on(replicated.standby, count_sql, ("memory.search",))

    assert [r.content for r in found] == ["Dora speaks Portuguese at home"]
    assert statements.has_read_memories
    assert after == before + 1
    # The paused standby cannot have the new row: it was written on the primary, never there.
    assert on_standby == before


def test_nobody_reads_from_a_standby_further_behind_than_the_bound(replicated):
    hub = replicated.hub
    _user_id(replicated, "finn")
    hub.remember("finn", "Finn bakes sourdough bread")
    replicated.wait_until_standby_has_caught_up()

    with replicated.replay_paused():
        # Finn does not write again; the primary moves on without the standby.
        _user_id(replicated, "gwen")
        hub.remember("gwen", "Gwen climbs in the Alps")
        wait_for(
            lambda: replicated.standby_lag_seconds() > MAX_LAG_SECONDS,
            "the paused standby to fall further behind than the bound",
            timeout=MAX_LAG_SECONDS + 30,
        )
        with replicated.standby_statements() as statements:
            contents = _contents(replicated, "finn")

    assert contents == ["Finn bakes sourdough bread"]
    assert statements.has_checked_replay
    assert not statements.has_read_memories


def test_reads_fall_back_to_the_primary_when_the_standby_is_down(replicated):
    # Last in this module: the standby stays stopped.
    hub = replicated.hub
    _user_id(replicated, "emil")
    hub.remember("emil", "Emil cycles to work")
    replicated.wait_until_standby_has_caught_up()

    replicated.standby.stop()
    hub.remember("emil", "Emil's bicycle is a green tandem")
    contents = _contents(replicated, "emil")
    found = [r.content for r in hub.search("emil", "what bicycle does he ride?", k=1)]
    facts = {m.content for m in hub.profile("emil")["facts"]}
    context = hub.context("emil", "How do I get to work?")
    ben = _contents(replicated, "ben")

    assert contents == ["Emil's bicycle is a green tandem", "Emil cycles to work"]
    assert found == ["Emil's bicycle is a green tandem"]
    assert facts == {"Emil cycles to work", "Emil's bicycle is a green tandem"}
    assert "Emil cycles to work" in context.text
    assert ben == ["Ben plays chess on Sunday mornings"]
    assert "read replica replica_0 set aside" in replicated.server_log.read_text()
