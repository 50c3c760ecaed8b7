"""The main page with 10,000 memories in a mode: paginated, and a fixed number of queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryhub.keyring import cipher_for
from memoryhub.models import Memory
from memoryhub.services.memories import NewMemory, build_memory

MEMORIES = 10_000
KINDS = ("fact", "preference", "procedure", "episode", "session_summary", "open_item")
# Session, user, mode, data key (2), section count + page, candidates (+ their count),
# contradictions (2), audit row (savepoint, lock, last hash, insert, release), modes, the
# agents of the mode (filter), temporary sessions, the header's reviewer role.
MAX_QUERIES = 19


@pytest.fixture
def ten_thousand(user, personal):
    """10,000 memories written through build_memory (encrypted, blind-indexed), no embeddings."""
    cipher = cipher_for(user)
    start = timezone.now() - timedelta(days=400)
    rows = [
        build_memory(
            NewMemory(
                kind=KINDS[n % len(KINDS)],
                content=f"Memory number {n} about topic {n % 97}.",
                payload={"type": "decision", "topics": [f"topic {n % 97}"]} if n % 6 == 3 else None,
                source="extracted" if n % 50 == 0 else "agent",
                created_at=start + timedelta(minutes=n),
            ),
            user=user,
            mode=personal,
            cipher=cipher,
            embedding=None,
        )
        for n in range(MEMORIES)
    ]
    Memory.all_owners.bulk_create(rows, batch_size=2000)
    return rows


def count_queries(client, url):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return len(queries), response.content.decode()


def test_the_main_page_pages_10000_memories_with_a_fixed_number_of_queries(signed_in, ten_thousand):
    # One test on one data set: writing 10,000 rows is the slow part, so it is done once.
    first_count, first = count_queries(signed_in, "/dashboard/?mode=personal")
    last_count, last = count_queries(signed_in, "/dashboard/?mode=personal&page=400")
    assert first_count <= MAX_QUERIES and last_count == first_count
    assert "Memory number 9999 about" in first and "Page 1 of 400" in first
    assert "Memory number 0 about" in last and "Page 400 of 400" in last
    assert first.count('<li id="memory-') == 25

    for section in ("profile", "preferences", "sessions", "episodes", "open-items"):
        section_count, body = count_queries(
            signed_in, f"/dashboard/?mode=personal&section={section}"
        )
        assert section_count <= MAX_QUERIES, section
        assert body.count('<li id="memory-') == 25, section

    # Topic and type live in the encrypted payload: the filter decrypts, but in fixed queries.
    topic_count, body = count_queries(
        signed_in, "/dashboard/?mode=personal&section=episodes&topic=topic%2042"
    )
    assert topic_count <= MAX_QUERIES
    assert "about topic 42." in body and "about topic 41." not in body
