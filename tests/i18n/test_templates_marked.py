"""Every user-visible text in a template is marked for translation.

A template's text outside `{% translate %}` / `{% blocktranslate %}` (and outside comments,
`<script>`, `<style>`, `<code>` and `<pre>`) must hold no word, and neither may the visible
attributes (title, aria-label, placeholder, alt, and a button's or a submit input's value).
Words that are the same in every language (product and protocol names) are allowed.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.template.base import Lexer, TokenType

TEMPLATES = sorted(
    path
    for folder in settings.TEMPLATES[0]["DIRS"]
    for path in Path(folder).rglob("*")
    if path.suffix in {".html", ".txt"}
)
# Names that read the same in French and English.
SAME_IN_EVERY_LANGUAGE = frozenset(
    {
        "MemoryHub", "JSON", "API", "MCP", "OAuth", "TOTP", "ChatGPT", "Claude", "Mem0",
        "OpenMemory", "ID", "UUID", "URL", "HTTP", "HTTPS", "OK", "Email", "e-mail",
    }
)  # fmt: skip
VISIBLE_ATTRIBUTES = frozenset({"title", "aria-label", "placeholder", "alt"})
SKIPPED_ELEMENTS = frozenset({"script", "style", "code", "pre"})


def _outside_translation(source: str) -> str:
    """The template's text tokens, with tags, variables, comments and translated blocks left out."""
    pieces = []
    depth = {"blocktranslate": 0, "comment": 0}
    for token in Lexer(source).tokenize():
        if token.token_type == TokenType.BLOCK:
            name = token.contents.split()[0] if token.contents else ""
            for block in depth:
                if name in (block, "blocktrans" if block == "blocktranslate" else block):
                    depth[block] += 1
                if name in (f"end{block}", "endblocktrans" if block == "blocktranslate" else ""):
                    depth[block] -= 1
            pieces.append(" ")  # A tag separates words.
        elif token.token_type == TokenType.TEXT and not any(depth.values()):
            pieces.append(token.contents)
        else:
            pieces.append(" ")
    return "".join(pieces)


class _VisibleText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self._skipping: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED_ELEMENTS:
            self._skipping.append(tag)
        values = dict(attrs)
        for name, value in attrs:
            if value and name in VISIBLE_ATTRIBUTES:
                self.texts.append(value)
        if values.get("value") and (
            tag == "button" or values.get("type") in {"submit", "button", "reset"}
        ):
            self.texts.append(values["value"] or "")

    def handle_endtag(self, tag: str) -> None:
        if self._skipping and self._skipping[-1] == tag:
            self._skipping.pop()

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.texts.append(data)


def untranslated_words(source: str) -> list[str]:
    """Words a reader would see that no translation covers."""
    parser = _VisibleText()
    parser.feed(_outside_translation(source))
    words = []
    for text in parser.texts:
        for word in text.split():
            word = word.strip(".,;:!?()[]{}«»“”\"'’·—–-…/|*#%0123456789")
            if sum(char.isalpha() for char in word) >= 2 and word not in SAME_IN_EVERY_LANGUAGE:
                words.append(word)
    return words


def test_the_checker_sees_words_outside_translation_and_not_inside():
    source = (
        "{% load i18n %}<h1>{% translate 'Your memory' %}</h1>"
        "<p>{% blocktranslate with n=count %}{{ n }} items{% endblocktranslate %}</p>"
        "<button title='Delete it'>{{ label }}</button><p>Forget all</p>"
        "{# a comment #}{% comment %}Not shown{% endcomment %}<code>conversations.json</code>"
    )
    assert untranslated_words(source) == ["Delete", "it", "Forget", "all"]


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda path: str(path.name))
def test_every_visible_text_of_a_template_is_marked_for_translation(path):
    assert untranslated_words(path.read_text(encoding="utf-8")) == []
