"""Email notices to a person about their login, sent through Django's email backend.

A notice goes out only once the change it reports is committed, holds no memory, and a mail
server that fails never undoes that change: the failure is logged, the audit row stays.

Its subject and body are in the person's language (`User.language`: chosen with the switch, or
their browser's at sign-in); for a person who has none yet, in the language active when it is
queued (the request's, from LocaleMiddleware).
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
from django.utils import translation
from django.utils.functional import Promise

from memoryhub.models import User

logger = logging.getLogger(__name__)


def _send(
    to: str, subject: str | Promise, template: str, context: Mapping[str, object], language: str
) -> None:
    with translation.override(language):
        body = render_to_string(template, dict(context))
        subject = str(subject)
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [to])
    except (smtplib.SMTPException, OSError):
        # Never log the address: the notice's kind is enough to find the failure.
        logger.warning("notice %s could not be sent", template, exc_info=True)


def language_of(person: User) -> str:
    """The language to write to this person in outside a request: theirs, else the hub's default."""
    if person.language in dict(settings.LANGUAGES):
        return person.language
    return settings.LANGUAGE_CODE


def send_notice_on_commit(
    *,
    to: str,
    subject: str | Promise,
    template: str,
    context: Mapping[str, object],
    language: str = "",
) -> None:
    """Email `to` the rendered text `template` once the current transaction commits.

    A lazy subject (gettext_lazy) is translated with the body, in `language` (the recipient's,
    when they have one), else in the language active now.
    """
    language = language or translation.get_language() or settings.LANGUAGE_CODE
    transaction.on_commit(partial(_send, to, subject, template, context, language))
