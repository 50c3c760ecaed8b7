"""The import structure of docs/architecture.md, checked: a layer that reaches up fails here.

Reads the source with `ast` (imports inside functions count too) and runs none of it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("memoryhub", "review", "dashboard", "accounts", "admin_tools")
# The apps on top of the domain: memoryhub never imports them.
APPS_ON_TOP = ("review", "dashboard", "accounts", "admin_tools")
# Project wiring: the root URLconf mounts every app's pages, so it may name them.
WIRING = ("memoryhub.urls",)
# The adapters inside memoryhub: they call the domain; the domain never calls them.
ADAPTERS = ("memoryhub.api", "memoryhub.mcp", "memoryhub.tasks", "memoryhub.admin")
ADAPTERS_TOO = ("memoryhub.management", "memoryhub.urls", "memoryhub.wsgi", "memoryhub.asgi")
# Calls that hide an import from the reader (and from this test).
HIDDEN_IMPORTS = {"import_module", "find_spec", "get_model", "__import__"}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _imported_names(name: str, path: Path) -> Iterator[str]:
    """Every module name this one imports, `from a import b` as both a and a.b."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


def _is_in(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(f"{prefix}.") for prefix in prefixes)


def _imports() -> dict[str, set[str]]:
    return {name: set(_imported_names(name, path)) for name, path in MODULES.items()}


IMPORTS = _imports()


def test_memoryhub_never_imports_the_apps_on_top_of_it():
    reaching_up = sorted(
        f"{name} imports {target}"
        for name, targets in IMPORTS.items()
        if _is_in(name, ("memoryhub",)) and name not in WIRING
        for target in targets
        if _is_in(target, APPS_ON_TOP)
    )
    assert reaching_up == []


def test_the_domain_never_imports_its_adapters():
    reaching_up = sorted(
        f"{name} imports {target}"
        for name, targets in IMPORTS.items()
        if _is_in(name, ("memoryhub",)) and not _is_in(name, ADAPTERS + ADAPTERS_TOO)
        for target in targets
        if _is_in(target, ADAPTERS + ADAPTERS_TOO)
    )
    assert reaching_up == []


def test_no_module_imports_by_string():
    hidden = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = (
                    [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                hidden += [f"{name} imports {m}" for m in modules if _is_in(m, ("importlib",))]
            elif isinstance(node, ast.Call):
                called = node.func
                called_name = called.attr if isinstance(called, ast.Attribute) else None
                if isinstance(called, ast.Name):
                    called_name = called.id
                if called_name in HIDDEN_IMPORTS:
                    hidden.append(f"{name}:{node.lineno} calls {called_name}")
    assert hidden == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_among_our_modules():
    # The forgetting circle of issue 18 (queries importing services for table names, services
    # importing the tasks that import them) is one such cycle: it fails here if it comes back.
    graph = {
        name: {target for target in targets if target in MODULES and target != name}
        for name, targets in IMPORTS.items()
    }
    assert _cycles(graph) == []


def test_the_circle_check_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_the_checks_read_the_whole_tree():
    # A wrong root or pattern would read nothing, and every check above would pass vacuously.
    assert {"memoryhub.services.forget", "memoryhub.knowledge.answers", "review.views"} <= set(
        MODULES
    )
    assert "memoryhub.knowledge.forget" in IMPORTS["memoryhub.services.forget"]
