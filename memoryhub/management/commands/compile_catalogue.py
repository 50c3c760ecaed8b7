"""Compile the translation catalogues: every locale/<lang>/LC_MESSAGES/parts/*.po into django.mo.

The catalogue is kept in parts, one per area of the interface (base pages, dashboard, review,
admin tools…), so that the strings of an area and their translations live side by side. This
command merges each language's parts and writes the django.mo Django reads (LOCALE_PATHS). It
is pure Python (Babel), so a machine without GNU gettext compiles them too; `make setup` runs
it, and the compiled files are not kept in git.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


def merged_catalogue(language_dir: Path) -> Catalog:
    """The parts of one language as one catalogue; a msgid translated two ways is an error."""
    language = language_dir.name
    merged = Catalog(locale=language, domain="django")
    origin: dict[object, str] = {}
    plural_forms: tuple[str, str] | None = None  # (the part that declared them first, the forms)
    for part in sorted((language_dir / "LC_MESSAGES" / "parts").glob("*.po")):
        with part.open("rb") as handle:
            catalogue = read_po(handle, locale=language)
        # The parts' own Plural-Forms, not Babel's from CLDR (French there has three forms,
        # "many" included, while the parts translate two: msgstr[1] would never be used).
        if plural_forms is None:
            plural_forms = (part.name, catalogue.plural_forms)
            merged.mime_headers = [("Plural-Forms", catalogue.plural_forms)]
        elif catalogue.plural_forms != plural_forms[1]:
            raise CommandError(
                f"{part.name} declares other plural forms than {plural_forms[0]}: "
                f"{catalogue.plural_forms!r}"
            )
        for message in catalogue:
            if not message.id or message.fuzzy or not message.string:
                continue
            key = (message.id, message.context)
            known = merged.get(message.id, context=message.context)
            if known is not None and known.string != message.string:
                raise CommandError(
                    f"{part.name} translates {message.id!r} otherwise than {origin[key]}"
                )
            merged.add(message.id, message.string, context=message.context)
            origin.setdefault(key, part.name)
    return merged


def compile_catalogues(locale_root: Path) -> list[tuple[str, int]]:
    """Write django.mo for every language with parts; return (language, messages) pairs."""
    written = []
    for language_dir in sorted(path for path in locale_root.iterdir() if path.is_dir()):
        if not (language_dir / "LC_MESSAGES" / "parts").is_dir():
            continue
        catalogue = merged_catalogue(language_dir)
        with (language_dir / "LC_MESSAGES" / "django.mo").open("wb") as handle:
            write_mo(handle, catalogue)
        written.append((language_dir.name, len(catalogue)))
    return written


class Command(BaseCommand):
    help = "Merge each language's catalogue parts and compile them (locale/<lang>/LC_MESSAGES)."

    def handle(self, *args: Any, **options: Any) -> None:
        for locale_root in map(Path, settings.LOCALE_PATHS):
            for language, count in compile_catalogues(locale_root):
                self.stdout.write(f"{locale_root / language}: {count} messages compiled")
