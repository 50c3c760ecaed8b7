"""Feedback next to the card, counts that follow, Undo (client side), and Delete without JS."""

from __future__ import annotations

import re

import pytest

from memoryhub.actors import Actor
from memoryhub.models import ActorType, Channel
from memoryhub.services.memories import NewMemory, remember
from tests import factories


def url(memory, action=""):
    base = f"/dashboard/modes/{memory.mode.slug}/memories/{memory.pk}/"
    return f"{base}{action}/" if action else base


def htmx_post(client, path, *, target, page="/dashboard/?mode=personal", data=None):
    return client.post(
        path,
        data or {},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET=target,
        HTTP_HX_CURRENT_URL=f"http://testserver{page}",
    )


def oob_count(body, element_id):
    found = re.search(rf'<span class="count" id="{element_id}" hx-swap-oob="true">\((\d+)\)', body)
    return int(found.group(1)) if found else None


@pytest.fixture
def items(remember):
    return {
        "lyon": remember("Lives in Lyon."),
        "cello": remember("Plays the cello.", kind="preference"),
        "climbing": remember("Might take up climbing.", source="extracted", status="candidate"),
    }


def test_a_card_offers_delete_as_a_link_with_undo_not_a_dialog(signed_in, items):
    page = signed_in.get("/dashboard/").content.decode()
    lyon = items["lyon"]
    assert f'href="{url(lyon, "delete")}" hx-post="{url(lyon, "delete")}"' in page
    assert 'hx-trigger="mh-undo-expired"' in page and f'data-undo-card="memory-{lyon.pk}"' in page
    assert "hx-confirm" not in page


def test_without_javascript_delete_asks_first_on_a_page(signed_in, user, items):
    response = signed_in.get(url(items["lyon"], "delete"))
    page = response.content.decode()
    assert response.status_code == 200
    assert "Delete this item for good?" in page and "Lives in Lyon." in page
    assert f'action="{url(items["lyon"], "delete")}"' in page and "No, keep it" in page
    # Only the POST deletes.
    assert "Lives in Lyon." in signed_in.get("/dashboard/").content.decode()
    assert signed_in.post(url(items["lyon"], "delete")).status_code == 302
    assert "Lives in Lyon." not in signed_in.get("/dashboard/").content.decode()


def test_the_delete_confirmation_of_another_users_or_modes_item_is_404(
    signed_in, other_user, work, remember
):
    theirs = remember("Bob's secret.", owner=other_user)
    assert signed_in.get(url(theirs, "delete")).status_code == 404
    at_work = remember("Works at Hexa.", mode=work)
    path = f"/dashboard/modes/personal/memories/{at_work.id}/delete/"
    assert signed_in.get(path).status_code == 404


def test_a_delete_on_the_list_updates_the_section_count(signed_in, items):
    body = htmx_post(
        signed_in, url(items["lyon"], "delete"), target=f"memory-{items['lyon'].pk}"
    ).content.decode()
    assert "Deleted." in body and oob_count(body, "section-count") == 2
    assert oob_count(body, "candidate-count") is None  # This list did not say it shows any.


def test_the_count_is_of_the_section_on_screen(signed_in, items):
    body = htmx_post(
        signed_in,
        url(items["lyon"], "delete"),
        target=f"memory-{items['lyon'].pk}",
        page="/dashboard/?mode=personal&section=profile",
    ).content.decode()
    assert oob_count(body, "section-count") == 1  # The candidate fact is left in Profile.


def test_answering_is_this_right_updates_both_counts(signed_in, items):
    climbing = items["climbing"]
    body = htmx_post(
        signed_in,
        url(climbing, "confirm"),
        target=f"candidate-{climbing.pk}",
        data={"has_candidates": "1"},
    ).content.decode()
    assert f'<li id="candidate-{climbing.pk}-done" class="feedback">' in body
    assert oob_count(body, "candidate-count") == 0 and oob_count(body, "section-count") == 3


def test_confirming_in_the_list_shows_the_feedback_in_the_card(signed_in, items):
    climbing = items["climbing"]
    body = htmx_post(
        signed_in, url(climbing, "confirm"), target=f"memory-{climbing.pk}"
    ).content.decode()
    card = body[: body.index('<div id="messages"')]
    assert card.lstrip().startswith(f'<li id="memory-{climbing.pk}"')
    assert '<p class="feedback-note">Thanks: marked as confirmed.' in card
    assert "confirmed</span>" in card


def test_the_agent_filter_on_screen_is_counted(
    signed_in, user, personal, workspace, embedder, items
):
    agent, _ = factories.make_agent(workspace, "travel bot")
    actor = Actor(ActorType.AGENT, str(agent.pk), Channel.API, label=agent.name)
    by_agent = remember(
        user=user,
        mode=personal,
        item=NewMemory(kind="fact", content="Prefers aisle seats."),
        actor=actor,
        embedder=embedder,
        agent_id=agent.pk,
    )
    body = htmx_post(
        signed_in,
        url(items["lyon"], "delete"),
        target=f"memory-{items['lyon'].pk}",
        page=f"/dashboard/?mode=personal&agent={agent.pk}",
    ).content.decode()
    assert oob_count(body, "section-count") == 1
    assert by_agent.id


@pytest.mark.parametrize(
    "page",
    [
        "/dashboard/modes/personal/search/?q=Lyon",
        "/dashboard/?mode=personal&section=episodes&topic=trip",
        "/dashboard/modes/personal/memories/00000000-0000-0000-0000-000000000000/",
    ],
)
def test_pages_without_those_counts_get_none(signed_in, items, page):
    body = htmx_post(
        signed_in, url(items["lyon"], "delete"), target=f"memory-{items['lyon'].pk}", page=page
    ).content.decode()
    assert "Deleted." in body and "section-count" not in body


def test_the_page_shows_the_counts_the_actions_update(signed_in, items):
    page = signed_in.get("/dashboard/").content.decode()
    assert '<span class="count" id="section-count">(3)</span>' in page
    assert '<span class="count" id="candidate-count">(1)</span>' in page
    assert """<ul class="candidates" hx-vals='{"has_candidates": "1"}'>""" in page


def test_answering_in_the_box_updates_the_same_item_in_the_list(signed_in, items):
    climbing = items["climbing"]
    body = htmx_post(
        signed_in, url(climbing, "confirm"), target=f"candidate-{climbing.pk}"
    ).content.decode()
    twin = body[body.index(f'<li id="memory-{climbing.pk}"') :]
    assert twin.startswith(
        f'<li id="memory-{climbing.pk}" class="memory kind-fact" hx-swap-oob="true">'
    )
    assert "confirmed</span>" in twin[:600]


def test_rejecting_in_the_list_removes_the_question_from_the_box(signed_in, items):
    climbing = items["climbing"]
    body = htmx_post(
        signed_in, url(climbing, "reject"), target=f"memory-{climbing.pk}"
    ).content.decode()
    assert f'<li id="candidate-{climbing.pk}" hx-swap-oob="delete"></li>' in body


def test_deleting_a_settled_item_touches_no_other_box(signed_in, items):
    lyon = items["lyon"]
    body = htmx_post(signed_in, url(lyon, "delete"), target=f"memory-{lyon.pk}").content.decode()
    assert 'hx-swap-oob="delete"' not in body


def test_away_from_the_list_page_no_twin_is_sent(signed_in, items):
    climbing = items["climbing"]
    body = htmx_post(
        signed_in,
        url(climbing, "confirm"),
        target=f"memory-{climbing.pk}",
        page="/dashboard/modes/personal/search/?q=climbing",
    ).content.decode()
    assert "candidate-" not in body and 'hx-swap-oob="delete"' not in body
