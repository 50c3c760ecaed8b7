"""Notices to reviewers that work waits: the daily digest (the header's count: accounts/roles.py).

Counts only: neither the header nor the email ever holds a question, an answer or a memory,
so a digest in an inbox discloses nothing but how much waits.
"""

from __future__ import annotations

import logging
import smtplib
from dataclasses import dataclass
from datetime import date

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Count, Q
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import ngettext

from accounts.roles import REVIEWERS_GROUP
from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.models import LearningCandidate, User, Workspace
from memoryhub.notices import language_of

logger = logging.getLogger(__name__)

Kind = LearningCandidate.Kind


@dataclass(frozen=True)
class WaitingCounts:
    """What waits for a decision in one workspace."""

    answers: int
    facts: int

    @property
    def total(self) -> int:
        return self.answers + self.facts


def waiting_counts(*, workspace: Workspace) -> WaitingCounts:
    """How many low-confidence answers and proposed facts wait: one count on the queue index."""
    counts = (
        LearningCandidate.objects.filter(workspace=workspace)
        .pending()
        .aggregate(
            answers=Count("id", filter=Q(kind=Kind.ANSWER)),
            facts=Count("id", filter=Q(kind=Kind.FACT)),
        )
    )
    return WaitingCounts(answers=counts["answers"], facts=counts["facts"])


def _digest_reviewers() -> list[User]:
    # Reviewers are the group's members and superusers (accounts/roles.py), with an address.
    reviewers = User.objects.filter(
        Q(groups__name=REVIEWERS_GROUP) | Q(is_superuser=True),
        is_active=True,
        has_review_digest=True,
        email__isnull=False,
    ).exclude(email="")
    return list(reviewers.select_related("workspace").distinct().order_by("pk"))


def _send_digest(reviewer: User, counts: WaitingCounts) -> bool:
    queue_url = settings.MEMORYHUB_SITE_URL + reverse("review:queue")
    # Sent by a task, with no request: in the reviewer's own language.
    with translation.override(language_of(reviewer)):
        body = render_to_string(
            "email/review_digest.txt",
            {
                "counts": counts,
                "workspace_name": reviewer.workspace.display_name,
                "queue_url": queue_url,
                "answers_url": f"{queue_url}?kind={Kind.ANSWER}",
                "facts_url": f"{queue_url}?kind={Kind.FACT}",
                "settings_url": settings.MEMORYHUB_SITE_URL + reverse("review:settings"),
            },
        )
        subject = ngettext(
            "{count} waiting for review in {workspace}",
            "{count} waiting for review in {workspace}",
            counts.total,
        ).format(count=counts.total, workspace=reviewer.workspace.display_name)
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [str(reviewer.email)])
    except (smtplib.SMTPException, OSError):
        # Never log the address; tomorrow's run tries again (the day is not marked sent).
        logger.warning("a review digest could not be sent", exc_info=True)
        return False
    return True


def send_review_digests(*, today: date | None = None) -> int:
    """Email each opted-in reviewer what waits in their workspace, once a day; return how many.

    Idempotent: a reviewer already sent today's digest is skipped, so the task may run twice.
    Nothing waiting, no email.
    """
    today = today or timezone.localdate()
    sent = 0
    counts_of: dict[int, WaitingCounts] = {}
    for reviewer in _digest_reviewers():
        if reviewer.review_digest_sent_on == today:
            continue
        if reviewer.workspace_id not in counts_of:
            counts_of[reviewer.workspace_id] = waiting_counts(workspace=reviewer.workspace)
        counts = counts_of[reviewer.workspace_id]
        if counts.total == 0:
            continue
        # Marked before sending: a run that dies after the mail went out never sends it twice.
        marked = User.objects.filter(pk=reviewer.pk).exclude(review_digest_sent_on=today)
        if not marked.update(review_digest_sent_on=today):
            continue  # Another run took this reviewer.
        if _send_digest(reviewer, counts):
            sent += 1
        else:
            User.objects.filter(pk=reviewer.pk).update(review_digest_sent_on=None)
    return sent


def set_review_digest(*, reviewer: User, is_on: bool, actor: Actor) -> User:
    """Turn the reviewer's daily digest on or off (audited: what is sent to them changes)."""
    with transaction.atomic():
        reviewer.has_review_digest = is_on
        reviewer.save(update_fields=["has_review_digest"])
        record_access(
            actor=actor,
            subject_user_id=reviewer.pk,
            action=AuditAction.SETTINGS_REVIEW_DIGEST,
            object_ids=["on" if is_on else "off"],
        )
    return reviewer
