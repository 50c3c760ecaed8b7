"""Email notices to a person about their login, sent through Django's email backend.

A notice goes out only once the change it reports is committed, holds no memory, and a mail
server that fails never undoes that change: the failure is logged, the audit row stays.
"""

from __future__ import annotations

import logging
import smtplib
from collections.abc import Mapping
from functools import partial

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)


def _send(to: str, subject: str, template: str, context: Mapping[str, object]) -> None:
    body = render_to_string(template, dict(context))
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [to])
    except (smtplib.SMTPException, OSError):
        # Never log the address: the notice's kind is enough to find the failure.
        logger.warning("notice %s could not be sent", template, exc_info=True)


def send_notice_on_commit(
    *, to: str, subject: str, template: str, context: Mapping[str, object]
) -> None:
    """Email `to` the rendered text `template` once the current transaction commits."""
    transaction.on_commit(partial(_send, to, subject, template, context))
