"""Every pattern that reads text from agents or people runs in time linear in the text (issue 26).

The patterns live behind `memoryhub/text_patterns.py`, which records each one it compiles. This
test imports every module of `memoryhub/` that uses it, collects the record, and runs each
pattern over hostile text at the largest accepted content size: long runs of spaces, tabs,
newlines, backslashes, punctuation, digits, letters, combining marks and mixtures, alone and
after a plausible sentence. Its time must stay within a multiple of a linear scan of the same
text, measured here too: a ratio, not a clock. A quadratic pattern on 32 kB is thousands of
times slower than the scan; the linear ones stay within a few dozen.

Reading the source with `ast`, it also checks that no module imports `re` itself, and that
patterns are compiled only where the record sees them.
"""

from __future__ import annotations

import ast
import importlib
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import settings

from memoryhub import text_patterns

ROOT = Path(__file__).resolve().parent.parent.parent
WRAPPER = ROOT / "memoryhub" / "text_patterns.py"
# Functions that compile a pattern but run only while their module is imported.
IMPORT_TIME_BUILDERS = {
    ("memoryhub.extraction.rules", "_rule"),
    ("memoryhub.personal_data", "_detector"),
    ("memoryhub.personal_data", "_keywords"),
}
# Slower than the linear scan by more than this is not linear. Measured on 32 kB: the linear
# patterns stay below ~150 (many alternatives tried at every position, on a shared machine);
# the quadratic ones this test caught measured 3,000 to 16,000.
MAX_RATIO = 400
# A ratio that grows more than this from a quarter of the text to all of it is quadratic.
GROWTH = 2.5
# Hostile runs, for the property test of the whole path (tests/security/
# test_hostile_text_reaches_context.py) and, most of them, for the timing below.
FILLERS = (
    " ",
    "\t",
    "\n",
    "\r\n",
    " \t\n",
    "\\",
    "\\u00",
    "%25",
    "&amp;",
    ".",
    ",",
    ", ",
    "!?",
    "-",
    "'",
    "\u2019",
    ":",
    "#",
    "1",
    "1 ",
    "12 ",
    "1-",
    "+1 ",
    "(1)",
    "a",
    "A",
    "a ",
    "A ",
    "Ab ",
    "é",
    "e\u0301",
    "\u0301",
    "A1 ",
    "and ",
    "and i ",
    "and i\n",
    "i work at ",
    "i am allergic to ",
    "I ",
    "my ",
    "not ",
    "rue ",
    "\u2028",
)
# A plausible sentence that patterns reading "I live in …" start on.
PREFIXES = ("", "I live in Paris")
# What the timing runs: all patterns over one of these at the size limit take 0.5 to 1.5 s
# (with the machine's load), so this is a sample of FILLERS chosen to cover every class a repeat in our patterns eats.
TIMED = (
    *(
        ("", filler)
        for filler in (
            *(" ", "\t", "\n", "\r\n", "\\", "%25", "&amp;", ".", ", ", "-", "\u2019", ":"),
            *("1", "1 ", "12 ", "+1 ", "a", "A", "A ", "Ab ", "e\u0301", "\u0301"),
            *("!?", "and i ", "and i\n", "i work at ", "i am allergic to "),
        )
    ),
    ("I am allergic to a", " "),
    ("my favourite", " "),
    ("mon", " "),
    *(("I live in Paris", filler) for filler in (" ", " \t\n", "\n", "\\", "1 ", "A ")),
)
# Values and names that the patterns built from data are made of.
BUILT_FROM_DATA = (
    lambda: text_patterns.whole_phrase("paris"),
    lambda: text_patterns.whole_phrase("a" * 200),
    lambda: text_patterns.whole_phrase("1 2"),
    lambda: text_patterns.any_phrase(["alice martin", "alice", "martin"], apostrophes="'\u2019"),
    lambda: text_patterns.any_phrase(["a a a", "a a", "a"], apostrophes="'\u2019"),
)


def _modules_using_the_wrapper() -> dict[str, ast.Module]:
    found = {}
    for path in (ROOT / "memoryhub").rglob("*.py"):
        if "migrations" in path.parts or path == WRAPPER:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = tree
    return found


MODULES = _modules_using_the_wrapper()


def _hostile_text(prefix: str, filler: str, limit: int | None = None) -> str:
    """`prefix`, then `filler` repeated up to the limit, then "x": many patterns backtrack over a
    run only when something they cannot take follows it (the spaces of issue 26 alone were
    fast; followed by "x", 36 s)."""
    limit = limit or settings.MEMORYHUB_MAX_CONTENT_BYTES
    size = len(filler.encode())
    return prefix + filler * ((limit - len(prefix.encode()) - 1) // size) + "x"


def _seconds(run: Callable[[], object], repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def _run_everywhere(pattern: re.Pattern[str], text: str) -> None:
    # finditer tries every start position, as search, sub, split and findall do.
    for _ in pattern.finditer(text):
        pass
    pattern.match(text)
    pattern.fullmatch(text)


_ONE_CHARACTER = re.compile(r".", re.DOTALL)


def _linear_scan(text: str) -> None:
    for _ in _ONE_CHARACTER.finditer(text):
        pass


def _all_patterns() -> list[re.Pattern[str]]:
    for name, tree in MODULES.items():
        if any(_wrapper_calls(tree)):
            importlib.import_module(name)
    return [*text_patterns.compiled_patterns(), *(build() for build in BUILT_FROM_DATA)]


def _wrapper_calls(tree: ast.AST) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "text_patterns"
    ]


def test_no_module_of_memoryhub_imports_a_regex_library_but_the_wrapper() -> None:
    offenders = []
    for name, tree in MODULES.items():
        for node in ast.walk(tree):
            imported = []
            if isinstance(node, ast.Import):
                imported = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                imported = [node.module or ""]
            offenders += [
                f"{name} imports {module}"
                for module in imported
                if module.split(".")[0] in {"re", "regex", "re2", "sre_compile"}
            ]
    assert offenders == []


def test_patterns_are_compiled_only_where_the_wrapper_records_them() -> None:
    # A function that compiles runs at call time, after the record was read, unless it is one
    # of the builders that modules call while they are imported. Patterns built from data at
    # call time go through whole_phrase and any_phrase, timed below with hostile data.
    unrecorded = [
        f"{name}.{function.name}"
        for name, tree in MODULES.items()
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
        and (name, function.name) not in IMPORT_TIME_BUILDERS
        and any(call.func.attr == "compile" for call in _wrapper_calls(function))  # type: ignore[attr-defined]
    ]
    assert unrecorded == []


def test_every_module_that_reads_text_compiles_through_the_wrapper() -> None:
    patterns = _all_patterns()
    # The extractor's rules alone compile dozens; a broken import would collect a handful.
    assert len(patterns) > 100
    sources = {pattern.pattern for pattern in patterns}
    assert any("u00" in source for source in sources), "the fence's escape pattern is missing"


@pytest.mark.parametrize(("prefix", "filler"), TIMED, ids=[repr(p + f) for p, f in TIMED])
def test_every_pattern_runs_in_linear_time_on_hostile_text(prefix: str, filler: str) -> None:
    text = _hostile_text(prefix, filler)
    quarter = _hostile_text(prefix, filler, settings.MEMORYHUB_MAX_CONTENT_BYTES // 4)
    scans = {text: _seconds(lambda: _linear_scan(text), repeat=3)}
    scans[quarter] = _seconds(lambda: _linear_scan(quarter), repeat=3)

    def ratio_on(sample: str, pattern: re.Pattern[str], repeat: int = 1) -> float:
        return _seconds(lambda: _run_everywhere(pattern, sample), repeat=repeat) / scans[sample]

    slow = []
    for pattern in _all_patterns():
        ratio = ratio_on(text, pattern)
        if ratio > MAX_RATIO:
            # Measure again before blaming it: the machine is shared.
            scans[text] = _seconds(lambda: _linear_scan(text), repeat=3)
            ratio = ratio_on(text, pattern, repeat=2)
        if ratio > MAX_RATIO:
            slow.append(f"{ratio:.0f}x {pattern.pattern[:120]!r}")
        elif ratio > MAX_RATIO / 8 and ratio > GROWTH * ratio_on(quarter, pattern, repeat=2):
            # A pattern that is quadratic but cheap per step can stay under the bound at 32 kB;
            # its ratio still grows with the text (x4 from a quarter of it), a linear one's not.
            again = ratio_on(text, pattern, repeat=2)
            if again > GROWTH * ratio_on(quarter, pattern, repeat=2):
                slow.append(f"{again:.0f}x and growing {pattern.pattern[:120]!r}")
    assert slow == []
