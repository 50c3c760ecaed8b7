"""Template filters that put an import's receipt into words; they format, never query.

The receipt is stored as the API sends it, in English (memoryhub/imports): the skipped items'
names and reasons are put into the reader's language here, when shown.
"""

from __future__ import annotations

from django import template
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django_stubs_ext import StrPromise

from memoryhub.imports.words import item_in_words
from memoryhub.models import mode_name_in_words

register = template.Library()

# Why an item was skipped, as memoryhub/imports writes it.
SKIP_REASONS: dict[str, StrPromise] = {
    "already imported": _("already imported"),
    "empty memory": _("empty memory"),
    "empty message": _("empty message"),
    "no text messages": _("no text messages"),
    "unknown status": _("unknown status"),
    "archived in OpenMemory": _("archived in OpenMemory"),
    "deleted in OpenMemory": _("deleted in OpenMemory"),
    "its mode is out of this key's reach": _("its mode is out of this key's reach"),
    # The memory checks' refusals (services/write_checks.py), of the field "content".
    "content must not be empty": _("the text is empty"),
    "content must not contain NUL characters": _("the text holds a NUL character"),
    "content is not valid UTF-8 text": _("the text is not valid UTF-8"),
}
MEMORY_OFF_PREFIX = "memory is off in mode "
TOO_LARGE_PREFIX = "content is "


@register.filter
def skip_reason(reason: str) -> str:
    """Why an item was skipped, in the reader's language; a reason we do not know, as it is."""
    if reason in SKIP_REASONS:
        return str(SKIP_REASONS[reason])
    if reason.startswith(MEMORY_OFF_PREFIX):
        mode = reason.removeprefix(MEMORY_OFF_PREFIX)
        return gettext("memory is off in the {mode} mode").format(
            mode=mode_name_in_words(mode, mode)
        )
    if reason.startswith(TOO_LARGE_PREFIX) and reason.endswith(" bytes"):
        return gettext("the text is over the size limit")
    return reason


@register.filter
def skipped_item(name: str) -> str:
    """ "mode work, memory 3" in the reader's language: each part's first word translated."""
    return item_in_words(name)


@register.filter
def failure_detail(detail: str) -> str:
    """Why an import failed (stored in English), in the reader's language where the message is
    one of the fixed ones marked in memoryhub/imports; one naming a line or an item, as it is."""
    return gettext(detail) if detail else ""
