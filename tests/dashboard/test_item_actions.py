"""Actions on one item: edit with history, delete, confirm, reject, done, copy, resolve, why."""

from __future__ import annotations

import pytest
from django.test import Client

from memoryhub.actors import Actor
from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import decrypt_memory
from memoryhub.models import Confidence, Memory, MemoryStatus
from memoryhub.queries.memories import list_versions
from memoryhub.services.memories import NewMemory
from memoryhub.services.memories import remember as remember_item
from memoryhub.services.sessions import add_message, start_session
from tests.factories import make_agent


def url(memory, action=""):
    base = f"/dashboard/modes/{memory.mode.slug}/memories/{memory.pk}/"
    return f"{base}{action}/" if action else base


def current(user, memory):
    row = Memory.objects.for_owner(user=user, mode=memory.mode).filter(pk=memory.pk).first()
    return None if row is None else decrypt_memory(row, cipher_for(user))


def test_editing_keeps_the_previous_version_in_the_history(signed_in, user, remember):
    memory = remember("Lives in Lyon.")
    response = signed_in.post(
        url(memory, "edit"), {"content": "Lives in Paris.", "importance": "high"}
    )
    assert response.status_code == 302
    item = current(user, memory)
    assert item.content == "Lives in Paris." and item.importance == "high"
    versions = list_versions(user=user, mode=memory.mode, memory_id=memory.id, actor=Actor.system())
    assert [v.content for v in versions] == ["Lives in Lyon."]
    detail = signed_in.get(url(memory)).content.decode()
    assert "Lives in Paris." in detail and "Lives in Lyon." in detail and "History" in detail


def test_an_htmx_edit_returns_the_updated_card_and_the_message(signed_in, remember):
    memory = remember("Lives in Lyon.")
    response = signed_in.post(
        url(memory, "edit"),
        {"content": "Lives in Nantes.", "importance": "normal"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET=f"memory-{memory.id}",
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith(f'<li id="memory-{memory.id}"')
    assert "Lives in Nantes." in body
    assert 'hx-swap-oob="true"' in body and "previous version is kept" in body


def test_the_htmx_edit_form_is_a_fragment_with_the_current_text(signed_in, remember):
    memory = remember("Lives in Lyon.")
    body = signed_in.get(url(memory, "edit"), HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in body and "Lives in Lyon.</textarea>" in body


def test_an_empty_edit_is_refused_with_422_and_changes_nothing(signed_in, user, remember):
    memory = remember("Lives in Lyon.")
    response = signed_in.post(url(memory, "edit"), {"content": "   ", "importance": "normal"})
    assert response.status_code == 422
    assert 'aria-invalid="true"' in response.content.decode()
    assert current(user, memory).content == "Lives in Lyon."


def test_saving_the_same_text_adds_no_version(signed_in, user, remember):
    memory = remember("Lives in Lyon.")
    signed_in.post(url(memory, "edit"), {"content": "Lives in Lyon.", "importance": "high"})
    assert (
        list_versions(user=user, mode=memory.mode, memory_id=memory.id, actor=Actor.system()) == []
    )


def test_deleting_an_item_removes_it(signed_in, user, remember):
    memory = remember("Lives in Lyon.")
    response = signed_in.post(url(memory, "delete"))
    assert response.status_code == 302
    assert current(user, memory) is None
    assert "Lives in Lyon." not in signed_in.get("/dashboard/").content.decode()


def test_an_htmx_delete_says_so_in_the_cards_place(signed_in, remember):
    memory = remember("Lives in Lyon.")
    response = signed_in.post(
        url(memory, "delete"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"memory-{memory.id}"
    )
    body = response.content.decode()
    assert body.lstrip().startswith(f'<li id="memory-{memory.id}-done" class="feedback">Deleted.')
    assert '<div id="messages"' in body


def test_confirming_a_candidate_makes_it_confirmed(signed_in, user, remember):
    memory = remember("Might take up climbing.", source="extracted", status="candidate")
    signed_in.post(url(memory, "confirm"))
    item = current(user, memory)
    assert item.confidence == Confidence.HIGH and item.status == MemoryStatus.ACTIVE


def test_confirming_from_is_this_right_removes_the_question(signed_in, remember):
    memory = remember("Might take up climbing.", source="extracted", status="candidate")
    response = signed_in.post(
        url(memory, "confirm"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"candidate-{memory.id}"
    )
    body = response.content.decode()
    assert (
        f'<li id="candidate-{memory.id}-done" class="feedback">Thanks: marked as confirmed' in body
    )
    assert f'id="candidate-{memory.id}"' not in body


def test_rejecting_a_candidate_deletes_it(signed_in, user, remember):
    memory = remember("Might take up climbing.", source="extracted", status="candidate")
    signed_in.post(url(memory, "reject"))
    assert current(user, memory) is None


def test_rejecting_a_settled_item_is_refused_and_keeps_it(signed_in, user, remember):
    memory = remember("Lives in Lyon.", confidence="high")
    response = signed_in.post(url(memory, "reject"), follow=True)
    assert "only an item waiting for confirmation" in response.content.decode()
    assert current(user, memory) is not None


def test_a_refused_htmx_action_swaps_nothing_and_says_why(signed_in, remember):
    memory = remember("Lives in Lyon.", confidence="high")
    response = signed_in.post(url(memory, "reject"), HTTP_HX_REQUEST="true")
    assert response.status_code == 422
    assert response["HX-Reswap"] == "none"
    assert "only an item waiting for confirmation" in response.content.decode()


def test_marking_an_open_item_done_closes_it_and_keeps_it_in_history(signed_in, user, remember):
    memory = remember("Pick a hotel.", kind="open_item", payload={"status": "open"})
    signed_in.post(url(memory, "done"))
    item = current(user, memory)
    assert item.status == MemoryStatus.SUPERSEDED and item.payload["status"] == "done"
    open_items = signed_in.get("/dashboard/?section=open-items").content.decode()
    assert "Pick a hotel." not in open_items


def test_marking_a_fact_done_is_refused(signed_in, user, remember):
    memory = remember("Lives in Lyon.")
    signed_in.post(url(memory, "done"))
    assert current(user, memory).status == MemoryStatus.ACTIVE


def test_copying_puts_the_item_in_the_other_mode_only_when_asked(signed_in, user, remember, work):
    memory = remember("Speaks French.")
    assert "Speaks French." not in signed_in.get("/dashboard/?mode=work").content.decode()
    signed_in.post(url(memory, "copy"), {"target": work.pk})
    assert "Speaks French." in signed_in.get("/dashboard/?mode=work").content.decode()
    assert current(user, memory) is not None


def test_copying_into_another_users_mode_is_refused(signed_in, other_user, remember):
    memory = remember("Speaks French.")
    theirs = other_user.modes.get(slug="work")
    signed_in.post(url(memory, "copy"), {"target": theirs.pk})
    assert not Memory.objects.for_owner(user=other_user, mode=theirs).exists()


def test_keeping_the_new_side_of_a_contradiction_supersedes_the_old(signed_in, user, remember):
    old = remember("Lives in Lyon.", slot="location", confidence="high")
    new = remember("Lives in Paris.", slot="location", source="extracted", status="candidate")
    signed_in.post(
        "/dashboard/modes/personal/contradictions/resolve/", {"keep": new.id, "drop": old.id}
    )
    assert current(user, old).status == MemoryStatus.SUPERSEDED
    assert current(user, new).confidence == Confidence.HIGH
    assert "These disagree" not in signed_in.get("/dashboard/").content.decode()


def test_keeping_the_old_side_of_a_contradiction_deletes_the_guess(signed_in, user, remember):
    old = remember("Lives in Lyon.", slot="location", confidence="high")
    new = remember("Lives in Paris.", slot="location", source="extracted", status="candidate")
    signed_in.post(
        "/dashboard/modes/personal/contradictions/resolve/", {"keep": old.id, "drop": new.id}
    )
    assert current(user, new) is None
    assert current(user, old).status == MemoryStatus.ACTIVE


def test_resolving_two_unrelated_items_is_refused(signed_in, user, remember):
    one = remember("Lives in Lyon.", slot="location")
    two = remember("Works at Hexa.", slot="employer")
    signed_in.post(
        "/dashboard/modes/personal/contradictions/resolve/", {"keep": one.id, "drop": two.id}
    )
    assert current(user, two).status == MemoryStatus.ACTIVE


def test_why_quotes_the_source_message_and_session(signed_in, user, personal, embedder):
    actor = Actor.system("tests")
    session = start_session(user=user, mode=personal, actor=actor)
    added = add_message(
        session=session,
        role="user",
        content="We moved to a flat near the Croix-Rousse.",
        actor=actor,
        embedder=embedder,
    )
    memory = remember_item(
        user=user,
        mode=personal,
        item=NewMemory(kind="fact", content="Lives near the Croix-Rousse.", source="extracted"),
        actor=actor,
        embedder=embedder,
        session_id=session.pk,
        source_message_ids=[added.message.pk],
    )
    memory = Memory.all_owners.get(pk=memory.id)
    body = signed_in.get(url(memory, "why"), HTTP_HX_REQUEST="true").content.decode()
    assert "We moved to a flat near the Croix-Rousse." in body
    assert "from a conversation" in body and "the session of" in body
    assert "not sure yet" in body and "never given to an agent yet" in body


def test_why_names_the_agent_that_stated_it(signed_in, user, workspace, personal, embedder):

    agent, _ = make_agent(workspace, "travel-bot")
    memory = remember_item(
        user=user,
        mode=personal,
        item=NewMemory(kind="fact", content="Has a rail card."),
        actor=Actor.system("tests"),
        embedder=embedder,
        agent_id=agent.pk,
    )
    memory = Memory.all_owners.get(pk=memory.id)
    body = signed_in.get(url(memory)).content.decode()
    assert "the agent “travel-bot”" in body and "likely" in body


@pytest.mark.parametrize(
    ("method", "action"),
    [
        ("get", ""),
        ("get", "why"),
        ("get", "edit"),
        ("post", "edit"),
        ("post", "delete"),
        ("post", "confirm"),
        ("post", "reject"),
        ("post", "done"),
        ("post", "copy"),
    ],
)
def test_another_users_item_is_not_found(signed_in, other_user, remember, work, method, action):
    theirs = remember("Bob's secret.", owner=other_user, source="extracted", status="candidate")
    data = {"content": "hijacked", "importance": "normal", "target": work.pk}
    headers = {"HTTP_HX_REQUEST": "true"} if action == "why" else {}
    response = getattr(signed_in, method)(
        url(theirs, action), data if method == "post" else None, **headers
    )
    assert response.status_code == 404
    assert current(other_user, theirs).content == "Bob's secret."


def test_an_item_of_another_mode_is_not_found_under_this_mode(signed_in, remember, work):
    memory = remember("Works at Hexa.", mode=work)
    response = signed_in.post(f"/dashboard/modes/personal/memories/{memory.id}/delete/")
    assert response.status_code == 404


def test_resolving_with_another_users_ids_is_not_found(signed_in, other_user, remember):
    mine = remember("Lives in Lyon.", slot="location")
    theirs = remember("Lives in Oslo.", owner=other_user, slot="location")
    response = signed_in.post(
        "/dashboard/modes/personal/contradictions/resolve/", {"keep": mine.id, "drop": theirs.id}
    )
    assert response.status_code == 404
    assert current(other_user, theirs) is not None


@pytest.mark.parametrize("action", ["edit", "delete", "confirm", "reject", "done", "copy"])
def test_item_actions_refuse_a_post_without_the_csrf_token(user, remember, action):
    memory = remember("Might take up climbing.", source="extracted", status="candidate")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post(url(memory, action), {"content": "changed", "importance": "normal"})
    assert response.status_code == 403
    assert current(user, memory).content == "Might take up climbing."


def test_get_on_a_destructive_url_is_refused(signed_in, user, remember):
    memory = remember("Might take up climbing.", source="extracted", status="candidate")
    for action in ("confirm", "reject", "done", "copy"):
        assert signed_in.get(url(memory, action)).status_code == 405
    assert current(user, memory).confidence == Confidence.CANDIDATE


def test_why_without_javascript_leads_to_the_item_page(signed_in, remember):
    memory = remember("Lives in Lyon.")
    response = signed_in.get(url(memory, "why"))
    assert response.status_code == 302 and response["Location"] == url(memory)
