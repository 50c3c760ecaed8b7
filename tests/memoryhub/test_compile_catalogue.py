"""manage.py compile_catalogue: the catalogue parts of a language merged into its django.mo."""

from __future__ import annotations

import gettext

import pytest
from django.core.management.base import CommandError

from memoryhub.management.commands.compile_catalogue import compile_catalogues

HEADER = 'msgid ""\nmsgstr ""\n"Language: fr\\n"\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'


def _part(root, name, body):
    folder = root / "fr" / "LC_MESSAGES" / "parts"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(HEADER + body, encoding="utf-8")


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


PLURAL_HEADER = HEADER.replace(
    '"Content-Type', '"Plural-Forms: nplurals=2; plural=(n > 1);\\n"\n"Content-Type'
)


def test_plurals_follow_the_plural_forms_of_the_parts(tmp_path):
    # Babel's own French (CLDR) has three forms; the parts translate two, as Django's French does.
    folder = tmp_path / "fr" / "LC_MESSAGES" / "parts"
    folder.mkdir(parents=True)
    (folder / "dashboard.po").write_text(
        PLURAL_HEADER + 'msgid "%(n)s fact"\nmsgid_plural "%(n)s facts"\n'
        'msgstr[0] "%(n)s fait"\nmsgstr[1] "%(n)s faits"\n',
        encoding="utf-8",
    )

    compile_catalogues(tmp_path)

    with (tmp_path / "fr" / "LC_MESSAGES" / "django.mo").open("rb") as compiled:
        french = gettext.GNUTranslations(compiled)
    forms = [french.ngettext("%(n)s fact", "%(n)s facts", n) for n in (0, 1, 2, 1000000)]
    assert forms == ["%(n)s fait", "%(n)s fait", "%(n)s faits", "%(n)s faits"]


def test_a_part_with_other_plural_forms_is_refused(tmp_path):
    _part(tmp_path, "base.po", 'msgid "Forget"\nmsgstr "Oublier"\n')  # No header: Babel's.
    folder = tmp_path / "fr" / "LC_MESSAGES" / "parts"
    (folder / "review.po").write_text(PLURAL_HEADER, encoding="utf-8")

    with pytest.raises(CommandError, match=r"review\.po declares other plural forms than base\.po"):
        compile_catalogues(tmp_path)
