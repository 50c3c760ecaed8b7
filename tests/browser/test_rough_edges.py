"""Issue 17 in a real browser, one test per point, each leaving screenshots in test-artifacts/."""

from __future__ import annotations

import re

import pytest

from tests import factories

pytestmark = pytest.mark.browser


@pytest.fixture
def items(user, personal, embedder):
    def make(content, **fields):
        return factories.make_memory(user, personal, content, embedder=embedder, **fields)

    return {
        "lyon": make("Lives in Lyon.", confidence="high"),
        "cello": make("Plays the cello on Sundays.", kind="preference"),
        "climbing": make("Might take up climbing.", source="extracted", status="candidate"),
    }


def test_feedback_next_to_the_card_counts_undo_and_delete_without_javascript(
    browser, page, log_in, live_server, items, artifacts
):
    page.clock.install()
    page.clock.resume()  # Time flows; fast_forward jumps over the Undo delay.
    log_in(page)
    count = page.locator("#section-count")
    assert count.inner_text() == "(3)"
    lyon = page.locator(f"#memory-{items['lyon'].pk}")

    lyon.get_by_role("link", name="Delete").click()
    notice = page.locator(".undo-notice")
    assert "Deleted: “Lives in Lyon.”" in notice.inner_text() and lyon.is_hidden()
    page.screenshot(path=str(artifacts / "undo-offered.png"), full_page=True)
    notice.get_by_role("button", name="Undo").click()
    assert lyon.is_visible() and notice.count() == 0
    assert "Undone" in page.locator("#messages").inner_text()

    lyon.get_by_role("link", name="Delete").click()
    page.clock.fast_forward(6000)
    done = page.locator(f"#memory-{items['lyon'].pk}-done")
    done.wait_for()
    assert "Deleted. It will not be used again." in done.inner_text()
    assert count.inner_text() == "(2)"

    climbing = page.locator(f"#candidate-{items['climbing'].pk}")
    climbing.get_by_role("button", name="Yes, it’s right").click()
    page.locator(f"#candidate-{items['climbing'].pk}-done").wait_for()
    assert page.locator("#candidate-count").inner_text() == "(0)"
    # The same item in the list below follows: no longer a question.
    assert "confirmed" in page.locator(f"#memory-{items['climbing'].pk} .confidence").inner_text()
    page.screenshot(path=str(artifacts / "feedback-next-to-the-card.png"), full_page=True)
    page.reload()
    assert "Lives in Lyon." not in page.locator("#memory-page").inner_text()

    # Without JavaScript, Delete opens a page that asks first.
    context = browser.new_context(java_script_enabled=False)
    plain = context.new_page()
    plain.goto(f"{live_server.url}/accounts/login/")
    plain.get_by_label("Email").fill("alice@example.com")
    plain.get_by_label("Password").fill("correct horse battery staple")
    plain.get_by_role("button", name="Sign In").click()
    plain.locator(f"#memory-{items['cello'].pk}").get_by_role("link", name="Delete").click()
    assert plain.get_by_role("heading", name="Delete this item for good?").is_visible()
    plain.screenshot(path=str(artifacts / "delete-without-javascript.png"), full_page=True)
    plain.get_by_role("button", name="Yes, delete it for good").click()
    plain.wait_for_url(re.compile(r"/dashboard/\?mode=personal"))
    assert "Plays the cello" not in plain.locator("#memory-page").inner_text()
    context.close()
