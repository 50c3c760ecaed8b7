"""The rest of the first hour (issue 29), walked in a real browser point by point.

The visual points are walked twice, at a desktop width and at a phone's 390 x 844; every test
leaves its screenshots in test-artifacts/ (named after the point and the width).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core import mail
from django.utils import timezone

from memoryhub.actors import Actor
from tests import factories

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery staple"
DESKTOP = {"width": 1200, "height": 900}
PHONE = {"width": 390, "height": 844}
# The visual points: walked at both widths.
WIDTHS = pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])


def shot(page, artifacts, name):
    width = page.viewport_size["width"]
    page.screenshot(path=str(artifacts / f"first-hour-{name}-{width}.png"), full_page=True)


def sign_in(page, live_server, email):
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign In").click()
    page.wait_for_url(f"{live_server.url}/dashboard/")


@pytest.fixture
def console_errors(page):
    """What the page wrote to the console as errors (htmx reports failed swaps there)."""
    errors: list[str] = []
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


@pytest.fixture
def make(user, personal, embedder):
    def remember(content, mode=personal, **fields):
        return factories.make_memory(user, mode, content, embedder=embedder, **fields)

    return remember


# 1. Two-factor right after logging in: no second password, and the reason on the QR page.


@WIDTHS
def test_a_reviewer_sets_up_two_factor_right_after_login_and_is_told_why(
    page, live_server, workspace, artifacts, viewport
):
    from allauth.mfa.totp.internal.auth import (
        format_hotp_value,
        hotp_value,
        yield_hotp_counters_from_time,
    )
    from django.contrib.auth.models import Group

    from accounts.roles import REVIEWERS_GROUP
    from review.models import ThresholdChange

    page.set_viewport_size(viewport)
    reviewer = factories.make_user(workspace=workspace, email="rita@example.com")
    reviewer.groups.add(Group.objects.get_or_create(name=REVIEWERS_GROUP)[0])
    ThresholdChange.objects.create(
        workspace=workspace,
        previous_threshold=0.6,
        threshold=0.55,
        window_size=10,
        approvals=8,
        rejections=2,
        approval_rate=0.8,
        queue_size=3,
    )
    sign_in(page, live_server, "rita@example.com")
    page.goto(f"{live_server.url}/review/")
    # Straight to the QR code: the password typed seconds ago is not asked for again.
    page.get_by_role("heading", name="Activate Authenticator App").wait_for()
    assert "reauthenticate" not in page.url
    why = page.locator(".why-two-factor").inner_text()
    assert "As a reviewer you see what other people asked" in why
    assert "required before the review queue opens" in why
    shot(page, artifacts, "two-factor-why")
    secret = page.locator("#authenticator_secret").input_value()
    code = format_hotp_value(hotp_value(secret, next(yield_hotp_counters_from_time())))
    page.get_by_label("Authenticator code").fill(code)
    page.get_by_role("button", name="Activate").click()
    page.get_by_role("link", name="Continue to the review queue").click()
    page.wait_for_url(f"{live_server.url}/review/")
    # The threshold chart with one closed window: its figures in words, not two lone dots.
    chart = page.locator("#threshold-chart")
    assert "One window of decisions has closed" in chart.inner_text()
    assert "threshold 0.55" in chart.inner_text() and "approval rate 80%" in chart.inner_text()
    assert chart.locator("circle").count() == 0
    shot(page, artifacts, "threshold-one-window")


# 2. The topic preview of forget is a GET: reload and Back show it again, no resubmission.


@WIDTHS
def test_the_topic_preview_survives_reload_and_back_without_resubmitting(
    page, log_in, live_server, make, artifacts, viewport
):
    page.set_viewport_size(viewport)
    make("Training for the Lyon marathon.")
    make("Prefers vegetarian food.")
    log_in(page)
    page.goto(f"{live_server.url}/dashboard/modes/personal/forget/")
    page.get_by_label("Topic (every word must appear)").fill("marathon")
    page.get_by_role("button", name="Show what mentions it").click()
    page.wait_for_url("**shown=**")
    assert "marathon" not in page.url  # The topic never travels in the address.
    preview = page.locator("#forget-preview-topic")
    assert "Training for the Lyon marathon." in preview.inner_text()
    assert "vegetarian" not in preview.inner_text()
    assert page.reload().request.method == "GET"
    assert "Training for the Lyon marathon." in preview.inner_text()
    page.get_by_role("link", name="← Back to the Personal mode").click()
    page.wait_for_url(f"{live_server.url}/dashboard/?mode=personal")
    assert page.go_back().request.method == "GET"
    assert "Training for the Lyon marathon." in preview.inner_text()
    shot(page, artifacts, "topic-preview")
    page.get_by_role("button", name="Yes, forget this topic").click()
    page.wait_for_url(f"{live_server.url}/dashboard/receipt/")
    assert "Training for the Lyon marathon." in page.locator(".receipt").inner_text()


# 3. An item the user rewrote is theirs; a question left to the user reads as one.


@WIDTHS
def test_an_edited_item_reads_as_the_users_and_a_left_question_as_a_question(
    page, log_in, make, artifacts, viewport, console_errors
):
    page.set_viewport_size(viewport)
    lyon = make("Lives in Lyon.", source="agent")
    climbing = make("Might take up climbing.", source="extracted", status="candidate")
    make(
        "An agent could not answer “When is my dentist appointment?”: only you know.",
        kind="open_item",
        source="reviewer",
        payload={
            "status": "open",
            "question": "When is my dentist appointment?",
            "from_review": True,
        },
    )
    log_in(page)
    card = page.locator(f"#memory-{lyon.pk}")
    assert "From an agent" in card.inner_text() and "likely" in card.inner_text()
    card.get_by_role("link", name="Edit").click()
    card.get_by_label("What MemoryHub remembers").fill("Lives in Paris.")
    card.get_by_role("button", name="Save").click()
    card.get_by_text("Lives in Paris.").wait_for()
    assert "From you ·" in card.inner_text()
    assert card.locator(".confidence").inner_text() == "confirmed"
    # Rewriting an item that waits in "Is this right?" answers it: the box and its count follow.
    question = page.locator(f"#candidate-{climbing.pk}")
    assert question.is_visible() and page.locator("#candidate-count").inner_text() == "(1)"
    guess = page.locator(f"#memory-{climbing.pk}")
    guess.get_by_role("link", name="Edit").click()
    guess.get_by_label("What MemoryHub remembers").fill("Took up climbing in May.")
    guess.get_by_role("button", name="Save").click()
    question.wait_for(state="detached")
    assert page.locator("#candidate-count").inner_text() == "(0)"
    assert guess.locator(".confidence").inner_text() == "confirmed"
    assert console_errors == []
    left = page.locator(".memory.kind-open_item .from-review").inner_text()
    assert left.startswith("A reviewer could not answer your question")
    assert "A reviewer’s answer" not in page.content()
    shot(page, artifacts, "edited-and-left-to-you")


# 4. Keyboard focus follows a tab switch, Save and Cancel.


def test_focus_goes_to_the_section_the_saved_item_and_the_edit_button(page, log_in, make):
    lyon = make("Lives in Lyon.")
    log_in(page)

    def focused_id():
        return page.evaluate("document.activeElement && document.activeElement.id")

    page.locator("nav.sections a", has_text="Profile").focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**section=profile**")
    page.wait_for_function("document.activeElement.id === 'section-title'")
    assert focused_id() == "section-title"
    card = page.locator(f"#memory-{lyon.pk}")
    card.get_by_role("link", name="Edit").focus()
    page.keyboard.press("Enter")
    card.get_by_label("What MemoryHub remembers").fill("Lives in Paris.")
    card.get_by_role("button", name="Save").focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"document.activeElement.id === 'memory-{lyon.pk}'")
    assert "Lives in Paris." in page.evaluate("document.activeElement.innerText")
    card.get_by_role("link", name="Edit").focus()
    page.keyboard.press("Enter")
    card.get_by_role("link", name="Cancel").focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"document.activeElement.id === 'edit-{lyon.pk}'")
    assert page.evaluate("document.activeElement.innerText") == "Edit"


# 5. "Forget a period" says it counts the day an item was saved, and shows both dates.


@WIDTHS
def test_forget_a_period_says_it_counts_the_day_saved(
    page, log_in, live_server, make, artifacts, viewport
):
    page.set_viewport_size(viewport)
    make(
        "Went to Lisbon for a week.",
        kind="episode",
        occurred_at=datetime(2019, 6, 3, 12, tzinfo=UTC),
        payload={"type": "trip"},
    )
    log_in(page)
    today = timezone.now().date().isoformat()
    page.goto(
        f"{live_server.url}/dashboard/modes/personal/forget/?what=period&since={today}&until={today}"
    )
    rule = page.locator(".period-rule").inner_text()
    assert "was told" in rule and "not the days it happened" in rule
    assert page.get_by_label("First day it was saved").is_visible()
    item = page.locator("#forget-preview-period .preview-items li").inner_text()
    assert "Went to Lisbon for a week." in item
    assert "saved just now" in item and "happened 3 Jun 2019" in item
    shot(page, artifacts, "forget-period")


# 6. Dashboard search finds the user's own "not sure yet" items.


@WIDTHS
def test_search_finds_the_users_own_not_sure_yet_items(
    page, log_in, live_server, make, artifacts, viewport
):
    page.set_viewport_size(viewport)
    climbing = make("Might take up climbing.", source="extracted", status="candidate")
    log_in(page)
    assert page.locator(f"#candidate-{climbing.pk}").is_visible()  # On screen ...
    page.get_by_label("Search the Personal mode").fill("climbing")
    page.get_by_role("button", name="Search").click()
    found = page.locator(f"#search-results #memory-{climbing.pk}")
    assert "not sure yet" in found.inner_text()  # ... and found, marked as such.
    shot(page, artifacts, "search-not-sure-yet")


# 8. Counts agree with what is on screen and what was done.


def test_counts_agree_with_the_screen(
    page, log_in, live_server, user, personal, make, embedder, artifacts
):
    from memoryhub.services.memories import edit_memory

    page.clock.install()
    page.clock.resume()
    jazz = make("Likes jazz.")
    festivals = make("Likes jazz festivals.")
    edit_memory(  # An earlier version: a record that goes with the item, not an item.
        user=user,
        mode=personal,
        memory_id=festivals.pk,
        actor=Actor.for_user(user.pk),
        embedder=embedder,
        content="Likes jazz festivals in summer.",
    )
    call = make("Call the plumber.", kind="open_item", payload={"status": "open"})
    log_in(page)

    # "Mark done" in Open items: the item leaves the list as its count drops.
    page.locator("nav.sections a", has_text="Open items").click()
    page.wait_for_url("**section=open-items**")
    page.locator(f"#memory-{call.pk}").get_by_role("button", name="Mark done").click()
    page.locator(f"#memory-{call.pk}-done").wait_for()
    assert page.locator("#section-count").inner_text() == "(0)"
    assert page.locator("#memory-list .memory").count() == 0

    # Search: "2 close matches" follows a delete.
    page.goto(f"{live_server.url}/dashboard/modes/personal/search/?q=jazz")
    count = page.locator("#search-count")
    assert count.inner_text().startswith("2 close matches")
    page.locator(f"#memory-{jazz.pk}").get_by_role("link", name="Delete").click()
    page.clock.fast_forward(6000)
    page.locator(f"#memory-{jazz.pk}-done").wait_for()
    assert count.inner_text().startswith("1 close match for")
    shot(page, artifacts, "search-count-after-delete")

    # Forget: the receipt counts the items the preview counted, the rest apart.
    page.goto(f"{live_server.url}/dashboard/modes/personal/forget/?what=last-hour")
    preview = page.locator("#forget-preview-last-hour").inner_text()
    # The festivals and the open item (done), with an earlier version of each (edit, done).
    assert "2 items will go" in preview and "2 earlier versions of items" in preview
    page.get_by_role("button", name="Yes, forget the last hour").click()
    page.wait_for_url(f"{live_server.url}/dashboard/receipt/")
    receipt = page.locator(".receipt").inner_text()
    assert "In all: 2 items, and 2 records that went with them." in receipt
    message = page.locator("#messages").inner_text()
    assert "Forgotten: 2 items gone for good, and 2 records that went with them." in message
    shot(page, artifacts, "receipt-counts")


# 9. Polish: no console errors, an empty dashboard without red buttons, 44 px targets, email.


def test_mark_done_and_copy_leave_no_console_errors(page, log_in, make, work, console_errors):
    call = make("Call the plumber.", kind="open_item", payload={"status": "open"})
    lyon = make("Lives in Lyon.")
    log_in(page)
    page.locator(f"#memory-{call.pk}").get_by_role("button", name="Mark done").click()
    page.locator(f"#memory-{call.pk} .feedback-note").wait_for()
    card = page.locator(f"#memory-{lyon.pk}")
    card.get_by_label("Copy to").select_option(label="Work")
    card.get_by_role("button", name="Copy").click()
    card.locator(".feedback-note").wait_for()
    assert "Copied to the “Work” mode." in card.inner_text()
    assert console_errors == []


@WIDTHS
def test_an_empty_dashboard_has_no_red_buttons_and_every_target_is_44px(
    page, live_server, workspace, artifacts, viewport
):
    page.set_viewport_size(viewport)
    factories.make_user(workspace=workspace, email="newcomer@example.com")
    sign_in(page, live_server, "newcomer@example.com")
    assert "Nothing is remembered" in page.locator("#memory-page").inner_text()
    assert page.locator(".toolbar .danger").count() == 0
    assert page.get_by_role("link", name="Delete all…").count() == 0
    assert page.get_by_role("link", name="Export as JSON").is_visible()
    targets = page.locator(
        ".site-header nav a, .site-header nav button, .sections a, .modes a, .toolbar .button"
    )
    for index in range(targets.count()):
        box = targets.nth(index).bounding_box()
        assert box["height"] >= 44, targets.nth(index).inner_text()
    # The header fits the width: nothing sticks out sideways on a phone.
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    shot(page, artifacts, "empty-dashboard")


def test_the_verification_email_says_memoryhub(page, live_server, workspace, artifacts):
    mail.outbox.clear()
    page.goto(f"{live_server.url}/accounts/signup/")
    page.get_by_label("Email").fill("sam@example.com")
    page.locator("#id_password1").fill(PASSWORD)
    page.locator("#id_password2").fill(PASSWORD)
    page.get_by_role("button", name="Sign Up").click()
    page.wait_for_url(f"{live_server.url}/dashboard/")
    [message] = mail.outbox
    assert message.subject.startswith("[MemoryHub] ")
    assert "127.0.0.1" not in message.subject and "localhost" not in message.subject
    assert message.body.startswith("Hello from MemoryHub!")
    shot(page, artifacts, "after-sign-up")
