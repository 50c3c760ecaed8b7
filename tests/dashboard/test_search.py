"""Search in the dashboard: the API's ranking, one mode only, the owner's data only."""

from __future__ import annotations

import re

from memoryhub.actors import Actor
from memoryhub.models import Memory
from memoryhub.queries.recall import DEFAULT_MIN_SCORE, search_memories


def result_ids(body):
    return re.findall(r'<li id="memory-([0-9a-f-]{36})"', body)


def test_search_ranks_like_the_api(signed_in, user, personal, remember, embedder):
    remember("Allergic to peanuts.", importance="critical")
    remember("Prefers window seats on trains.", kind="preference")
    remember("Plays the cello on Sundays.")
    body = signed_in.get("/dashboard/modes/personal/search/?q=food allergy").content.decode()
    expected = search_memories(
        user=user,
        mode=personal,
        query="food allergy",
        actor=Actor.system("tests"),
        embedder=embedder,
        k=20,
        record_access=False,
        min_score=DEFAULT_MIN_SCORE,
    )
    assert result_ids(body) == [str(item.id) for item in expected]
    assert result_ids(body)[0] == str(expected[0].id)
    assert "Allergic to peanuts." in body


def test_search_stays_in_the_mode_and_with_the_owner(signed_in, other_user, remember, work):
    remember("Works with Marc on routing.", mode=work)
    remember("Marc is Bob's brother.", owner=other_user)
    body = signed_in.get("/dashboard/modes/personal/search/?q=Marc").content.decode()
    assert result_ids(body) == [] and "No close match" in body
    work_body = signed_in.get("/dashboard/modes/work/search/?q=Marc").content.decode()
    assert "Works with Marc on routing." in work_body and "Bob" not in work_body


def test_searching_does_not_count_as_the_agent_using_the_memory(
    signed_in, user, personal, remember
):
    memory = remember("Allergic to peanuts.")
    signed_in.get("/dashboard/modes/personal/search/?q=peanuts")
    row = Memory.objects.for_owner(user=user, mode=personal).get(pk=memory.pk)
    assert row.last_accessed_at is None and row.access_count == 0


def test_htmx_search_returns_only_the_results(signed_in, remember):
    remember("Allergic to peanuts.")
    body = signed_in.get(
        "/dashboard/modes/personal/search/?q=peanuts", HTTP_HX_REQUEST="true"
    ).content.decode()
    assert body.lstrip().startswith('<section id="search-results"') and "<html" not in body


def test_an_empty_search_shows_the_form_only(signed_in, remember):
    remember("Allergic to peanuts.")
    body = signed_in.get("/dashboard/modes/personal/search/?q=").content.decode()
    assert "What are you looking for?" in body and "Allergic" not in body


def test_a_search_with_no_match_says_so(signed_in, db):
    body = signed_in.get("/dashboard/modes/personal/search/?q=zeppelin").content.decode()
    assert "No close match" in body
