"""Every text marked for translation has its French: in our catalogue parts or in allauth's.

The marked texts are found as `makemessages` finds them: templates through Django's own
`templatize`, then Babel's Python extractor over them and over our Python modules.
"""

from __future__ import annotations

import io
from pathlib import Path

from babel.messages.extract import extract_python
from django.conf import settings
from django.utils import translation
from django.utils.translation.template import templatize

from memoryhub.management.commands.compile_catalogue import merged_catalogue

ROOT = Path(settings.BASE_DIR)
PYTHON_PACKAGES = ("memoryhub", "dashboard", "review", "accounts", "admin_tools")
KEYWORDS = {
    "gettext": None,
    "gettext_lazy": None,
    "gettext_noop": None,  # Domain error messages: English in the API, translated on pages.
    "_": None,
    "ngettext": (1, 2),
    "ngettext_lazy": (1, 2),
    "pgettext": ((1, "c"), 2),
    "pgettext_lazy": ((1, "c"), 2),
    "npgettext": ((1, "c"), 2, 3),
    "npgettext_lazy": ((1, "c"), 2, 3),
}


def _marked(code: str, origin: str) -> list[tuple[str, str | None, str]]:
    """(text, context, where) for each marked text of some Python(-like) source."""
    found = []
    for line, function, messages, _ in extract_python(io.BytesIO(code.encode()), KEYWORDS, [], {}):
        parts = (messages,) if isinstance(messages, str) else tuple(messages or ())
        if function.startswith(("pgettext", "npgettext")):
            context, texts = parts[0], parts[1:]
        else:
            context, texts = None, parts
        if texts and texts[0]:
            found.append((texts[0], context, f"{origin}:{line}"))
    return found


def marked_texts() -> list[tuple[str, str | None, str]]:
    found = []
    for folder in settings.TEMPLATES[0]["DIRS"]:
        for path in sorted(Path(folder).rglob("*")):
            if path.suffix in {".html", ".txt"}:
                # templatize keeps the template's indentation, which Python's tokenizer refuses.
                code = templatize(path.read_text(encoding="utf-8"), origin=str(path))
                flat = "\n".join(line.lstrip() for line in code.splitlines())
                found += _marked(flat, str(path.relative_to(ROOT)))
    for package in PYTHON_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            if "migrations" not in path.parts and "gettext" in source:
                found += _marked(source, str(path.relative_to(ROOT)))
    return found


def _has_french(text: str, context: str | None, ours: object) -> bool:
    if ours.get(text, context=context) is not None:  # type: ignore[attr-defined]
        return True
    with translation.override("fr"):  # allauth's own catalogue, for its templates we override.
        said = translation.pgettext(context, text) if context else translation.gettext(text)
    return said != text


def test_the_extractor_finds_marked_texts_in_templates_and_python():
    texts = {text for text, _, _ in marked_texts()}
    assert {"Log out", "Who accessed my memory", "Embedding models"} <= texts


def test_every_marked_text_has_its_french():
    ours = merged_catalogue(ROOT / "locale" / "fr")
    missing = [
        f"{where}: {text!r}"
        for text, context, where in marked_texts()
        if not _has_french(text, context, ours)
    ]
    assert missing == []
