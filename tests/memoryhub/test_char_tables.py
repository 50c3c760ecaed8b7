"""Per-character rewrites through str.translate: what the rule says, with a bounded memory."""

from __future__ import annotations

import unicodedata

from memoryhub import char_tables
from memoryhub.char_tables import CharTable, without_combining, without_invisible


def test_invisible_characters_go_and_tabs_and_line_feeds_stay():
    text = "a\u200bb\u202ec\x00d\x7fe\x85f\ufeffg\U000e0041h\ud800i\tj\nk é 東"
    assert without_invisible(text) == "abcdefghi\tj\nk é 東"


def test_combining_marks_go_once_decomposed():
    decomposed = unicodedata.normalize("NFKD", "Mélanie naïve Ørsted")
    assert without_combining(decomposed) == "Melanie naive Ørsted"


def test_every_character_is_rewritten_as_the_rule_says_also_past_the_bound():
    calls: list[str] = []

    def rule(char: str) -> str:
        calls.append(char)
        return "" if char.isdigit() else char.upper()

    table = CharTable(rule)
    text = "".join(chr(code) for code in range(0x20, 0x20 + char_tables.MAX_REMEMBERED + 500))
    expected = "".join(rule(char) for char in text)
    calls.clear()
    assert text.translate(table) == expected
    assert len(table) == char_tables.MAX_REMEMBERED  # Bounded: the rest ran through the rule.
    calls.clear()
    assert ("a1b" * 3).translate(table) == "AB" * 3
    assert calls == []  # Remembered: the rule did not run again.
