"""The one module that wraps the regular-expression library, for text from agents or people.

Every pattern that reads stored, recalled or submitted text is compiled here, so that one test
(`tests/security/test_linear_patterns.py`) can run each of them on hostile input and check that
its time grows linearly with the text. CPython's `re` backtracks, holds the GIL while it does,
and a quadratic pattern on 32 kB of spaces or backslashes stalls a whole web worker for seconds.

The library is CPython's `re`, not RE2: the patterns need Unicode `\\w`, `\\b` and `\\s` (French
text: "é", "à", "’") and lookarounds, which RE2 does not give. Instead each pattern is written
so that it cannot backtrack more than a bounded amount per position. The rules for a new one:

- A pattern that may start inside a run of the characters its leading repeat eats (`\\s+…`,
  `\\\\+…`, `[^,]+…`) starts only at the start of that run: guard it with a lookbehind of the
  same class, `(?<!\\s)\\s+…`. Otherwise each position of the run rescans the rest of it.
- A repeat followed by something that its class cannot hold gives nothing back anyway; one
  followed by something it can hold is made possessive (`*+`, `++`) or atomic (`(?>…)`) when
  giving back could not help the match, and bounded (`{0,80}`) when it could.
- No repeat of a group that can match the same text in two ways (`(\\w+\\s?)*`).
- A pattern only ever matched at one position says so with `\\A`.
- Patterns built from data (names, values) go through `whole_phrase` or `any_phrase`, which
  escape every piece, so data never adds a quantifier.

`compiled_patterns()` returns every fixed pattern compiled through `compile` so far; the test
imports every module that uses this one first, and asserts that none imports `re` itself.
The rules, the test and the numbers in full: docs/hostile-input.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from re import ASCII, DOTALL, IGNORECASE, MULTILINE, UNICODE, VERBOSE, Match, Pattern

__all__ = [
    "ASCII",
    "DOTALL",
    "IGNORECASE",
    "MULTILINE",
    "UNICODE",
    "VERBOSE",
    "Match",
    "Pattern",
    "any_phrase",
    "compile",
    "compiled_patterns",
    "escape",
    "whole_phrase",
]

_COMPILED: dict[tuple[str, int], Pattern[str]] = {}


def compile(pattern: str, flags: int = 0) -> Pattern[str]:
    """Compile a fixed pattern (written in the source, not built from data) and record it."""
    compiled = re.compile(pattern, flags)
    _COMPILED.setdefault((pattern, flags), compiled)
    return compiled


def compiled_patterns() -> tuple[Pattern[str], ...]:
    """Every fixed pattern compiled through `compile`, for the linear-time test."""
    return tuple(_COMPILED.values())


def escape(text: str) -> str:
    """`text` as a pattern that matches only itself."""
    return re.escape(text)


# Bounded: each distinct value compiles once; the cache must not grow with the data.
@lru_cache(maxsize=1024)
def whole_phrase(phrase: str, flags: int = 0) -> Pattern[str]:
    """A pattern matching `phrase` literally, not inside a longer word ("Paris", not "Parisian")."""
    return re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)", flags)


def any_phrase(phrases: Iterable[str], flags: int = 0, *, apostrophes: str = "") -> Pattern[str]:
    """A pattern matching any of `phrases` as whole words, the first listed winning.

    The words of a phrase may be separated by any run of whitespace; an apostrophe in a phrase
    matches any character of `apostrophes` (when given). Not cached: callers build it once.
    """
    alternatives = "|".join(_phrase_pattern(phrase, apostrophes) for phrase in phrases)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", flags)


def _phrase_pattern(phrase: str, apostrophes: str) -> str:
    words = [re.escape(word) for word in phrase.split()]
    if apostrophes:
        # re.escape leaves "'" as it is; a class of the given apostrophes replaces it.
        apostrophe_class = "[" + "".join(re.escape(char) for char in apostrophes) + "]"
        words = [word.replace("'", apostrophe_class) for word in words]
    # After the first word the whitespace run is possessive: nothing after it is whitespace.
    return r"\s++".join(words)
