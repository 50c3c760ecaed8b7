"""Reviewers hear that work waits: the header's count and the opt-in daily digest (review/notices.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import subject_pseudonym
from memoryhub.models import AuditEntry, User
from review.notices import send_review_digests, waiting_counts
from review.tasks import send_review_digests_task
from tests import factories

from .conftest import make_reviewer

QUESTION = "Can you send the Lyon store hours to alice@example.com?"


@pytest.fixture
def waiting(report):
    report(QUESTION, "I could not find them.")
    report("Which courier delivers to Corsica?", "No idea.")


def opt_in(reviewer):
    reviewer.has_review_digest = True
    reviewer.save(update_fields=["has_review_digest"])


def test_the_header_shows_reviewers_how_many_wait(reviewer_client, waiting, client, user):
    page = reviewer_client.get(reverse("dashboard:memory_list")).content.decode()
    assert 'id="review-waiting"' in page and ">2</span>" in page


def test_end_users_see_no_count_and_cost_no_query_for_it(client, user, waiting):
    client.force_login(user)
    page = client.get(reverse("dashboard:memory_list")).content.decode()
    assert "review-waiting" not in page


def test_the_header_count_is_one_query(reviewer, waiting, django_assert_num_queries):
    from accounts.roles import Roles

    roles = Roles(reviewer)
    assert roles.is_reviewer
    with django_assert_num_queries(1):
        assert roles.waiting_for_review == 2


def test_an_opted_in_reviewer_gets_one_digest_a_day_with_counts_and_links_only(
    reviewer, waiting, workspace
):
    opt_in(reviewer)
    mail.outbox.clear()
    assert send_review_digests_task() == 1  # What beat calls.
    [email] = mail.outbox
    assert email.to == [reviewer.email]
    assert email.subject == f"2 waiting for review in {workspace.name}"
    assert "2 low-confidence answers" in email.body and "0 proposed facts" in email.body
    queue = django_settings.MEMORYHUB_SITE_URL + reverse("review:queue")
    assert f"{queue}?kind=answer" in email.body
    # Counts and links only: no question, answer or address of the user.
    for text in ("Lyon", "alice@example.com", "Corsica", "could not find"):
        assert text not in email.body and text not in email.subject
    # The task may run again the same day (hourly beat, a retry): nothing twice.
    assert send_review_digests() == 0 and len(mail.outbox) == 1
    tomorrow = timezone.localdate() + timedelta(days=1)
    assert send_review_digests(today=tomorrow) == 1 and len(mail.outbox) == 2


def test_no_digest_without_opting_in_or_with_nothing_waiting(reviewer, workspace, report):
    mail.outbox.clear()
    assert send_review_digests() == 0  # Not opted in (and nothing waits).
    opt_in(reviewer)
    assert send_review_digests() == 0  # Nothing waits.
    assert mail.outbox == []
    assert User.objects.get(pk=reviewer.pk).review_digest_sent_on is None


def test_a_digest_counts_only_its_own_workspace_and_skips_end_users(reviewer, waiting, user):
    opt_in(reviewer)
    user.has_review_digest = True  # Not a reviewer: the flag alone sends nothing.
    user.save(update_fields=["has_review_digest"])
    elsewhere = make_reviewer(factories.make_workspace())
    opt_in(elsewhere)
    mail.outbox.clear()
    assert send_review_digests() == 1
    assert [email.to for email in mail.outbox] == [[reviewer.email]]
    assert waiting_counts(workspace=elsewhere.workspace).total == 0


def test_a_reviewer_turns_the_digest_on_and_off_in_their_settings(reviewer_client, reviewer):
    url = reverse("review:digest")
    assert reviewer_client.post(url, {"is_on": "1"}).status_code == 302
    assert User.objects.get(pk=reviewer.pk).has_review_digest is True
    assert reviewer_client.post(url, {"is_on": ""}).status_code == 302
    assert User.objects.get(pk=reviewer.pk).has_review_digest is False
    # Each switch is audited: what is sent to the reviewer changed, and who changed it.
    rows = AuditEntry.objects.filter(
        subject=subject_pseudonym(reviewer.pk), action=AuditAction.SETTINGS_REVIEW_DIGEST
    ).order_by("id")
    assert [(row.object_ids, row.actor_type) for row in rows] == [
        (["on"], "reviewer"),
        (["off"], "reviewer"),
    ]


def test_the_digest_is_scheduled_as_a_registered_task(settings):
    from memoryhub.celery import app

    entry = settings.CELERY_BEAT_SCHEDULE["send-review-digests"]
    assert entry["task"] == "review.send_review_digests"
    assert entry["task"] in app.tasks
