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
