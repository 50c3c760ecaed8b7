"""Issue 29 on the server side: provenance after an edit, search of candidates, counts."""

from __future__ import annotations

from django.test import Client

from memoryhub.keyring import cipher_for
from memoryhub.memory_rows import decrypt_memory
from memoryhub.models import Memory
from tests.api.conftest import Caller
from tests.factories import make_agent

LIST = "/dashboard/"


def url(memory, action=""):
    base = f"/dashboard/modes/{memory.mode.slug}/memories/{memory.pk}/"
    return f"{base}{action}/" if action else base


def current(user, memory):
    row = Memory.objects.for_owner(user=user, mode=memory.mode).get(pk=memory.pk)
    return decrypt_memory(row, cipher_for(user))


def test_new_words_make_the_item_the_users_own_and_confirmed(signed_in, user, remember):
    memory = remember("Might take up climbing.", source="extracted", status="candidate")
    signed_in.post(url(memory, "edit"), {"content": "Took up climbing.", "importance": "normal"})
    item = current(user, memory)
    assert (item.source, item.confidence, item.status) == ("user", "high", "active")
    card = signed_in.get(LIST).content.decode()
    assert "From you · remembered" in card and "Is this right?" not in card


def test_changing_only_the_importance_keeps_the_agents_word(signed_in, user, remember):
    memory = remember("Lives in Lyon.", source="agent")
    signed_in.post(url(memory, "edit"), {"content": "Lives in Lyon.", "importance": "high"})
    item = current(user, memory)
    assert (item.source, item.confidence, item.importance) == ("agent", "medium", "high")


def test_an_htmx_edit_of_a_question_tells_the_page_it_is_answered(signed_in, remember):
    memory = remember("Might take up climbing.", source="extracted", status="candidate")
    response = signed_in.post(
        url(memory, "edit"),
        {"content": "Took up climbing.", "importance": "normal", "has_candidates": "1"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL=f"http://testserver{LIST}?mode=personal",
    )
    assert f'"id": "candidate-{memory.pk}"' in response["HX-Trigger"]
    assert '<span class="count" id="candidate-count" hx-swap-oob="true">(0)</span>' in (
        response.content.decode()
    )


def test_the_owners_search_finds_candidates_an_agents_does_not(
    signed_in, user, workspace, remember
):
    remember("Might take up climbing.", source="extracted", status="candidate")
    page = signed_in.get("/dashboard/modes/personal/search/", {"q": "climbing"}).content.decode()
    assert "Might take up climbing." in page and "not sure yet" in page
    _, key = make_agent(workspace, "travel bot")
    response = Caller(Client(), key).post("/search", {"user": "alice", "query": "climbing"})
    assert response.status_code == 200 and "Might take up climbing." not in response.text


def test_another_users_candidates_stay_out_of_the_search(signed_in, other_user, remember):
    remember("Might take up climbing.", owner=other_user, source="extracted", status="candidate")
    page = signed_in.get("/dashboard/modes/personal/search/", {"q": "climbing"}).content.decode()
    assert "Might take up climbing." not in page and "No close match" in page


def test_mark_done_in_open_items_takes_the_card_away_with_the_count(signed_in, remember):
    memory = remember("Call the plumber.", kind="open_item", payload={"status": "open"})
    response = signed_in.post(
        url(memory, "done"),
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET=f"memory-{memory.pk}",
        HTTP_HX_CURRENT_URL=f"http://testserver{LIST}?mode=personal&section=open-items",
    )
    body = response.content.decode()
    assert f'id="memory-{memory.pk}-done"' in body and "Marked as done." in body
    assert f'<li id="memory-{memory.pk}"' not in body
    assert 'id="section-count" hx-swap-oob="true">(0)' in body
    assert 'hx-swap-oob="delete"' not in body  # No box of a question to remove: none shown.


def test_an_empty_mode_offers_no_forget_or_delete_all(signed_in, remember):
    page = signed_in.get(LIST).content.decode()
    assert "Forget the last hour" not in page and "Delete all…" not in page
    assert "Export as JSON" in page
    remember("Lives in Lyon.")
    page = signed_in.get(LIST).content.decode()
    assert "Forget the last hour" in page and "Delete all…" in page
