"""The dashboard in a real browser: log in, edit, delete, forget the last hour, modes, export."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tests import factories

pytestmark = pytest.mark.browser


@pytest.fixture
def memories(user, personal, work, embedder):
    """A few items in two modes, made through the real services."""
    now = timezone.now()

    def make(content, mode=personal, **fields):
        return factories.make_memory(user, mode, content, embedder=embedder, **fields)

    return {
        "lyon": make("Lives in Lyon.", confidence="high", created_at=now - timedelta(days=3)),
        "peanuts": make(
            "Allergic to peanuts.", importance="critical", created_at=now - timedelta(hours=2)
        ),
        "recent": make(
            "Is reading a novel by Annie Ernaux.", created_at=now - timedelta(minutes=10)
        ),
        "climbing": make("Might take up climbing.", source="extracted", status="candidate"),
        "hexa": make("Works at Hexa Logistics.", mode=work),
    }


def card(page, memory):
    return page.locator(f"#memory-{memory.pk}")


def test_log_in_and_edit_a_fact_inline_keeping_its_history(page, log_in, memories, artifacts):
    log_in(page)
    page.screenshot(path=str(artifacts / "dashboard.png"), full_page=True)
    lyon = card(page, memories["lyon"])
    # Keyboard only: focus the Edit link and press Enter.
    lyon.get_by_role("link", name="Edit").focus()
    page.keyboard.press("Enter")
    editor = lyon.get_by_label("What MemoryHub remembers")
    editor.fill("Lives in Paris.")
    lyon.get_by_role("button", name="Save").click()
    assert lyon.locator(".content").inner_text() == "Lives in Paris."
    assert "previous version is kept" in page.locator("#messages").inner_text()
    lyon.get_by_role("link", name="Why do you remember this?").click()
    why = page.locator(f"#why-{memories['lyon'].pk}")
    assert "Lives in Lyon." in why.locator(".history").inner_text()
    assert "confirmed" in why.inner_text()
    page.reload()
    assert "Lives in Paris." in card(page, memories["lyon"]).inner_text()


def test_delete_an_item(page, log_in, memories):
    page.clock.install()
    page.clock.resume()
    log_in(page)
    card(page, memories["peanuts"]).get_by_role("link", name="Delete").click()
    page.clock.fast_forward(6000)  # Past the few seconds Undo is offered.
    card(page, memories["peanuts"]).wait_for(state="detached")
    assert "Deleted." in page.locator("#messages").inner_text()
    page.reload()
    assert "Allergic to peanuts." not in page.content()


def test_answer_is_this_right(page, log_in, memories):
    log_in(page)
    box = page.locator(f"#candidate-{memories['climbing'].pk}")
    box.get_by_role("button", name="Yes, it’s right").click()
    box.wait_for(state="detached")
    assert "confirmed" in page.locator("#messages").inner_text()


def test_forget_the_last_hour_keeps_what_came_before(page, log_in, live_server, memories):
    log_in(page)
    page.get_by_role("link", name="Forget the last hour").click()
    page.get_by_role("button", name="Yes, forget the last hour").click()
    page.wait_for_url(f"{live_server.url}/dashboard/receipt/")
    receipt = page.locator(".receipt").inner_text()
    assert "Deletion receipt" in page.content()
    assert "2 facts" in receipt  # The recent fact and the candidate made just now.
    assert "Is reading a novel by Annie Ernaux." in receipt  # Named, once.
    page.get_by_role("link", name="Back to your memories").click()
    body = page.locator("#memory-page").inner_text()
    assert "Lives in Lyon." in body and "Allergic to peanuts." in body
    assert "Annie Ernaux" not in body and "climbing" not in body


def test_switch_modes(page, log_in, memories):
    log_in(page)
    assert "Lives in Lyon." in page.content() and "Hexa Logistics" not in page.content()
    page.get_by_role("navigation", name="Modes").get_by_role("link", name="Work").click()
    page.wait_for_url(re.compile(r"mode=work"))
    assert "Works at Hexa Logistics." in page.content() and "Lives in Lyon." not in page.content()


def test_export_downloads_the_users_data_as_json(page, log_in, memories, tmp_path):
    log_in(page)
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Export as JSON").click()
    target = tmp_path / "export.json"
    download_info.value.save_as(target)
    document = json.loads(target.read_text())
    contents = {m["content"] for mode in document["modes"] for m in mode["memories"]}
    assert {"Lives in Lyon.", "Works at Hexa Logistics."} <= contents


def test_the_dashboard_reads_at_phone_width(page, log_in, memories, artifacts):
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page)
    page.screenshot(path=str(artifacts / "dashboard-phone.png"), full_page=True)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    assert card(page, memories["lyon"]).get_by_role("link", name="Delete").is_visible()
