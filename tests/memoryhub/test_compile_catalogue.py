"""manage.py compile_catalogue: the catalogue parts of a language merged into its django.mo."""

from __future__ import annotations

import gettext

import pytest
from django.core.management.base import CommandError

from memoryhub.management.commands.compile_catalogue import compile_catalogues

HEADER = 'msgid ""\nmsgstr ""\n"Language: fr\\n"\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
# The header of a part that says how French counts, as parts/base.po does.
PLURALS = HEADER.removesuffix("\n") + '"Plural-Forms: nplurals=2; plural=(n > 1);\\n"\n\n'


def _part(root, name, body, header=HEADER):
    folder = root / "fr" / "LC_MESSAGES" / "parts"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(header + body, encoding="utf-8")


def test_the_parts_of_a_language_are_merged_into_one_catalogue(tmp_path):
    _part(tmp_path, "base.po", 'msgid "Log out"\nmsgstr "Se déconnecter"\n')
    _part(
        tmp_path,
        "dashboard.po",
        'msgid "Log out"\nmsgstr "Se déconnecter"\n\n'
        'msgid "Forget"\nmsgstr "Oublier"\n\n'
        '#, fuzzy\nmsgid "Export"\nmsgstr "Exporter peut-être"\n\n'
        'msgid "Delete all"\nmsgstr ""\n',
    )

    assert compile_catalogues(tmp_path) == [("fr", 2)]

    with (tmp_path / "fr" / "LC_MESSAGES" / "django.mo").open("rb") as compiled:
        french = gettext.GNUTranslations(compiled)
    assert french.gettext("Log out") == "Se déconnecter"
    assert french.gettext("Forget") == "Oublier"
    # Fuzzy and empty translations are not used: the English text shows instead.
    assert french.gettext("Export") == "Export"
    assert french.gettext("Delete all") == "Delete all"


def test_one_text_translated_two_ways_is_refused(tmp_path):
    _part(tmp_path, "base.po", 'msgid "Forget"\nmsgstr "Oublier"\n')
    _part(tmp_path, "review.po", 'msgid "Forget"\nmsgstr "Effacer"\n')

    with pytest.raises(CommandError, match=r"review\.po translates 'Forget'"):
        compile_catalogues(tmp_path)



def test_plurals_are_counted_as_the_parts_declare(tmp_path):
    # Babel's own French data has a third form (for millions); the parts say two, as French
    # dashboards need: 0 and 1 singular, 2 and more plural.
    _part(
        tmp_path,
        "dashboard.po",
        'msgid "%(n)s item"\nmsgid_plural "%(n)s items"\n'
        'msgstr[0] "%(n)s souvenir"\nmsgstr[1] "%(n)s souvenirs"\n',
        header=PLURALS,
    )

    compile_catalogues(tmp_path)

    with (tmp_path / "fr" / "LC_MESSAGES" / "django.mo").open("rb") as compiled:
        french = gettext.GNUTranslations(compiled)
    assert [french.ngettext("%(n)s item", "%(n)s items", n) for n in (0, 1, 6, 2_000_000)] == [
        "%(n)s souvenir", "%(n)s souvenir", "%(n)s souvenirs", "%(n)s souvenirs"
    ]  # fmt: skip


def test_parts_that_count_plurals_differently_are_refused(tmp_path):
    _part(tmp_path, "base.po", 'msgid "Forget"\nmsgstr "Oublier"\n', header=PLURALS)
    _part(tmp_path, "review.po", 'msgid "Review"\nmsgstr "Relecture"\n')  # Babel's 3 forms.

    with pytest.raises(CommandError, match=r"review\.po counts plurals as"):
        compile_catalogues(tmp_path)
