"""The first hour, again (issue 29): what a person hits in a real browser, point by point."""

from __future__ import annotations

import time

import pytest

from memoryhub.models import Memory
from tests import factories

pytestmark = pytest.mark.browser


@pytest.fixture
def peanuts(user, personal, embedder):
    return factories.make_memory(user, personal, "Allergic to peanuts.", embedder=embedder)


@pytest.fixture
def lyon(user, personal, embedder):
    return factories.make_memory(user, personal, "Lives in Lyon.", embedder=embedder)


def test_back_after_a_delete_never_brings_the_memory_back(page, log_in, peanuts, lyon, artifacts):
    page.clock.install()
    page.clock.resume()
    log_in(page)
    sections = page.locator("nav.sections a")
    first_section = sections.first.inner_text()
    # Section tabs are htmx navigations that push a URL: htmx used to keep a snapshot of each
    # page in the browser, and Back brought the snapshot of /dashboard/ back, deleted item and all.
    sections.nth(1).click()
    page.wait_for_url("**section=**")
    page.locator("nav.sections a", has_text=first_section).click()
    page.locator(f"#memory-{peanuts.pk}").get_by_role("link", name="Delete").click()
    page.clock.fast_forward(6000)  # Past the few seconds Undo is offered: the delete is sent.
    page.locator(f"#memory-{peanuts.pk}").wait_for(state="detached")
    page.evaluate("window.stillTheSamePage = true")
    page.evaluate("history.go(-2)")  # Back twice, to /dashboard/ as first shown.
    # Either htmx restores its old snapshot (the deleted item with it), or the page is loaded
    # again from the server (the marker is gone with the old document).
    page.wait_for_function(
        f"() => !window.stillTheSamePage || document.getElementById('memory-{peanuts.pk}')"
    )
    page.wait_for_url("**/dashboard/")
    page.locator(f"#memory-{lyon.pk}").wait_for()
    page.screenshot(path=str(artifacts / "back-after-delete.png"), full_page=True)
    assert "Allergic to peanuts." not in page.content()
    assert page.locator(".undo-notice").count() == 0


def _wait_until_deleted(memory, *, user, mode) -> None:
    # The held delete leaves as a beacon when the page goes: give the server a moment, as the
    # person reading the next page would.
    for _ in range(50):
        if not Memory.objects.for_owner(user=user, mode=mode).filter(pk=memory.pk).exists():
            return
        time.sleep(0.1)
    raise AssertionError("the held delete never reached the server")


def test_back_while_undo_is_offered_shows_the_delete_done(
    page, log_in, user, personal, peanuts, lyon
):
    log_in(page)
    page.locator(f"#memory-{peanuts.pk}").get_by_role("link", name="Delete").click()
    page.locator(".undo-notice").wait_for()
    # Leaving the page sends the held delete; coming back must not show a dead Undo.
    page.get_by_role("link", name="Settings").click()
    page.wait_for_url("**/settings/")
    _wait_until_deleted(peanuts, user=user, mode=personal)
    page.go_back()
    page.wait_for_url("**/dashboard/")
    page.locator(f"#memory-{lyon.pk}").wait_for()
    assert page.locator(".undo-notice").count() == 0
    assert "Allergic to peanuts." not in page.content()


def test_search_as_you_type_keeps_one_history_entry(page, log_in, live_server, peanuts):
    log_in(page)
    page.goto(f"{live_server.url}/dashboard/modes/personal/search/")
    before = page.evaluate("history.length")
    box = page.get_by_label("What are you looking for?")
    for word in ("pea", "peanut", "peanuts"):
        with page.expect_response(lambda response, w=word: response.url.endswith(f"q={w}")):
            box.fill(word)  # Each pause sends one search.
        page.wait_for_url(f"**q={word}")  # The address still says what is shown ...
    assert page.evaluate("history.length") == before  # ... without an entry per pause.
    assert "Allergic to peanuts." in page.locator("#search-results").inner_text()
