"""Agents named the same way everywhere: the heading, the agent filter, search results, "just now"."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.models import ActorType, Channel
from memoryhub.services.memories import NewMemory, remember
from tests import factories


def card_ids(body):
    return re.findall(r'<li id="memory-([0-9a-f-]{36})"', body)


@pytest.fixture
def by_agent(user, personal, embedder):
    """Remember an item as an agent of alice's workspace would (through the real service)."""

    def make(agent, content, *, mode=personal, owner=user, **fields):
        actor = Actor(ActorType.AGENT, str(agent.pk), Channel.API, label=agent.name)
        return remember(
            user=owner,
            mode=mode,
            item=NewMemory(kind="fact", content=content, **fields),
            actor=actor,
            embedder=embedder,
            agent_id=agent.pk,
        ).id

    return make


@pytest.fixture
def agents(workspace):
    return factories.make_agent(workspace, "travel bot")[0], factories.make_agent(
        workspace, "coach"
    )[0]


def test_the_dashboard_says_what_agents_remember_about_you(signed_in, remember):
    remember("Lives in Lyon.")
    body = signed_in.get("/dashboard/").content.decode()
    assert "<h1>What agents remember about you</h1>" in body
    assert "What agents remember about you · Personal" in body


def test_a_card_names_the_agent_that_remembered_it(signed_in, by_agent, agents):
    memory = by_agent(agents[0], "Prefers aisle seats.")
    body = signed_in.get("/dashboard/").content.decode()
    card = body[body.index(f'id="memory-{memory}"') :]
    assert "From agent “travel bot”" in card[:2000]


def test_the_list_filters_by_agent(signed_in, by_agent, agents, remember):
    travel = by_agent(agents[0], "Prefers aisle seats.")
    coach = by_agent(agents[1], "Runs on Tuesdays.")
    mine = remember("Lives in Lyon.")
    body = signed_in.get("/dashboard/").content.decode()
    assert set(card_ids(body)) == {str(travel), str(coach), str(mine.id)}
    assert "agent “travel bot”</option>" in body and "agent “coach”</option>" in body
    body = signed_in.get(f"/dashboard/?mode=personal&agent={agents[0].pk}").content.decode()
    assert card_ids(body) == [str(travel)]
    assert "from agent “travel bot”" in body
    # The section links keep the filter.
    assert f"section=profile&amp;agent={agents[0].pk}" in body


def test_a_malformed_agent_filter_shows_everything(signed_in, by_agent, agents, remember):
    by_agent(agents[0], "Prefers aisle seats.")
    remember("Lives in Lyon.")
    response = signed_in.get("/dashboard/?agent=not-a-uuid")
    assert response.status_code == 200 and len(card_ids(response.content.decode())) == 2


def test_the_agent_filter_lists_only_agents_of_this_users_mode(
    signed_in, by_agent, agents, other_user, work
):
    by_agent(agents[0], "Works on the routing team.", mode=work)
    by_agent(
        agents[1], "Bob runs on Tuesdays.", owner=other_user, mode=factories.mode_of(other_user)
    )
    body = signed_in.get("/dashboard/?mode=personal").content.decode()
    assert "agent-filter" not in body and "Bob" not in body
    # Another user's agent id filters alice's list to nothing; it reveals nothing either.
    body = signed_in.get(f"/dashboard/?mode=personal&agent={agents[1].pk}").content.decode()
    assert card_ids(body) == [] and "Bob" not in body


def test_search_results_keep_the_agent_name(signed_in, by_agent, agents):
    by_agent(agents[0], "Allergic to peanuts.")
    body = signed_in.get("/dashboard/modes/personal/search/?q=peanuts").content.decode()
    assert "Allergic to peanuts." in body and "From agent “travel bot”" in body


def test_search_leaves_out_what_is_not_a_close_match(signed_in, remember):
    remember("Allergic to peanuts.")
    remember("Plays the cello on Sundays.")
    body = signed_in.get("/dashboard/modes/personal/search/?q=peanut allergy").content.decode()
    assert "Allergic to peanuts." in body and "cello" not in body
    assert "1 close match for" in body


def test_a_search_without_a_close_match_says_so(signed_in, remember):
    remember("Allergic to peanuts.")
    body = signed_in.get("/dashboard/modes/personal/search/?q=quantum zebra").content.decode()
    assert card_ids(body) == []
    assert "No close match" in body and "peanuts" not in body


def test_just_now_minutes_hours_then_the_date(signed_in, remember):
    memory = remember("Lives in Lyon.")
    body = signed_in.get("/dashboard/").content.decode()
    assert "remembered <time" in body
    assert re.search(r">just now</time>", body)
    assert "last used by an agent never" in body
    with time_machine.travel(memory.created_at + timedelta(minutes=5, seconds=3)):
        assert ">5\xa0minutes ago</time>" in signed_in.get("/dashboard/").content.decode()
    with time_machine.travel(memory.created_at + timedelta(days=3)):
        local = timezone.localtime(memory.created_at)
        assert f">{local:%-d %b %Y, %H:%M}</time>" in signed_in.get("/dashboard/").content.decode()
