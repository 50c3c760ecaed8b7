"""An import file's errors and item names, stored and sent in English, said in the reader's
language when a page shows them (docs/i18n.md)."""

from __future__ import annotations

from collections.abc import Mapping

from django.utils.translation import gettext, pgettext_lazy
from django_stubs_ext import StrPromise

from memoryhub.models import mode_name_in_words

# The nouns that name an item of the file ("mode work, memory 3", "conversation 2, message 5").
ITEM_NOUNS: dict[str, StrPromise] = {
    "memory": pgettext_lazy("import item", "memory"),
    "session": pgettext_lazy("import item", "session"),
    "conversation": pgettext_lazy("import item", "conversation"),
    "message": pgettext_lazy("import item", "message"),
    "version": pgettext_lazy("import item", "version"),
    "mode": pgettext_lazy("import item", "mode"),
    "item": pgettext_lazy("import item", "item"),
}


def item_in_words(name: str) -> str:
    """ "mode work, memory 3" in the reader's language: each part's first word translated, and a
    default mode by its name (« mode Travail, souvenir 3 »)."""
    parts = []
    for part in name.split(", "):
        noun, space, rest = part.partition(" ")
        if noun == "mode":
            rest = mode_name_in_words(rest, rest)
        parts.append(f"{ITEM_NOUNS[noun]}{space}{rest}" if noun in ITEM_NOUNS else part)
    return ", ".join(parts)


def file_error_in_words(message: str, words: Mapping[str, object]) -> str:
    """An ImportFileError's message (marked with gettext_noop) in the reader's language, the
    item it names (`where`) too; a message nobody marked, as raised."""
    if not message:
        return ""  # gettext("") would give the catalogue's header.
    said = gettext(message)
    if not words:
        return said
    named = {
        key: item_in_words(value) if key == "where" and isinstance(value, str) else value
        for key, value in words.items()
    }
    return said.format(**named)
