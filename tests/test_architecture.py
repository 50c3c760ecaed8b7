"""The import structure of docs/architecture.md, checked: a layer that reaches up fails here.

Reads the source with `ast` (imports inside functions count too) and runs none of it. Every
check is a function of the tree's root, and each rule is shown to catch a violation planted
in a temporary copy of the tree, so a check that silently stopped working would fail too.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Every top-level package of the repository, and every module or package directly under
# memoryhub/, is in exactly one layer; a new one fails `test_every_package_is_in_a_layer`
# until it is placed, so it cannot slip in beside the rules. Layers run from top to bottom.
OUTSIDE = ("tests", "bench")  # They use the code; the code never imports them.
WIRING = ("memoryhub.urls", "memoryhub.asgi", "memoryhub.wsgi")
APPS = ("review", "dashboard", "accounts", "admin_tools")
ADAPTERS = (
    "memoryhub.api",
    "memoryhub.mcp",
    "memoryhub.tasks",
    "memoryhub.admin",
    "memoryhub.management",
    "memoryhub.web_server",
)
SERVICES = ("memoryhub.services",)
QUERIES = ("memoryhub.queries",)
CAPABILITIES = (
    "memoryhub.knowledge",
    "memoryhub.graph",
    "memoryhub.extraction",
    "memoryhub.webhooks",
    "memoryhub.imports",
)
DOMAIN = SERVICES + QUERIES + CAPABILITIES
FOUNDATIONS = tuple(
    f"memoryhub.{name}"
    for name in (
        *("models", "audit", "memory_rows", "message_rows", "model_rows", "usage", "actors"),
        *("errors",),
        *("keyring", "crypto"),
        *("sealed_tables", "embeddings", "onnx_model", "tokens", "personal_data", "injection"),
        *("fencing", "text_patterns", "json_stream", "http", "paging", "replicas", "notices"),
        *("task_queue", "sweeping", "unavailable", "body_limit", "process_model"),
        *("embedded_db", "settings", "apps", "celery", "char_tables", "formats"),
        # Operations (docs/operations.md): they read the models and the foundations only.
        *("telemetry", "metrics", "health", "probes", "backup"),
        *("vector_search",),
    )
)
# The client talks HTTP only, like any outside user: it imports none of our modules.
CLIENTS = ("memoryhub.client",)
LAYERS: dict[str, tuple[str, ...]] = {
    "wiring": WIRING,
    "apps": APPS,
    "adapters": ADAPTERS,
    "domain": DOMAIN,
    "foundations": FOUNDATIONS,
}
# The benchmarks run through management commands (make bench): only those may import them.
BENCH_ENTRY = ("memoryhub.management.commands",)
# Calls that hide an import from the reader (and from this test).
HIDDEN_IMPORTS = {"import_module", "find_spec", "get_model", "__import__", "import_string"}


def _is_in(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(f"{prefix}.") for prefix in prefixes)


def _packages(root: Path) -> list[str]:
    return sorted(path.parent.name for path in root.glob("*/__init__.py"))


def _modules(root: Path) -> dict[str, Path]:
    """Our code's modules (not the tests' or benchmarks', which only use it)."""
    found = {}
    for package in _packages(root):
        if package in OUTSIDE:
            continue
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if "migrations" in parts:  # History, not code: they may name models by string.
                continue
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


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


class Tree:
    """The modules of one tree and what each imports (only our own modules)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules = _modules(root)
        ours = tuple(_packages(root))
        self.imports = {
            name: {target for target in _imported_names(name, path) if _is_in(target, ours)}
            for name, path in self.modules.items()
        }

    def reaching(self, sources: tuple[str, ...], targets: tuple[str, ...]) -> list[str]:
        """ "a imports b" for every module in `sources` that imports one in `targets`."""
        return sorted(
            f"{name} imports {target}"
            for name, imported in self.imports.items()
            if _is_in(name, sources)
            for target in imported
            if _is_in(target, targets)
        )


def _layer_of(module: str) -> str | None:
    for layer, prefixes in LAYERS.items():
        if _is_in(module, prefixes):
            return layer
    return None


def unplaced(tree: Tree) -> list[str]:
    """Top-level packages, and modules directly under memoryhub/, that are in no layer."""
    placed = (*OUTSIDE, *CLIENTS, *(p for ps in LAYERS.values() for p in ps))
    children = {".".join(name.split(".")[:2]) for name in tree.modules if name != "memoryhub"}
    candidates = sorted(children | set(_packages(tree.root)) - {"memoryhub"})
    return [name for name in candidates if not _is_in(name, placed)]


def upward_imports(tree: Tree) -> list[str]:
    """Imports that go up the layers (wiring may import anything; nothing imports outside)."""
    order = list(LAYERS)
    found = [
        line
        for line in tree.reaching(tuple(_packages(tree.root)), OUTSIDE)
        if not (_is_in(line.split()[0], BENCH_ENTRY) and _is_in(line.split()[-1], ("bench",)))
    ]
    for name, imported in tree.imports.items():
        layer = _layer_of(name)
        if layer is None or layer == "wiring":
            continue
        for target in imported:
            target_layer = _layer_of(target)
            if target_layer is not None and order.index(target_layer) < order.index(layer):
                found.append(f"{name} ({layer}) imports {target} ({target_layer})")
    return sorted(found)


def services_importing_queries(tree: Tree) -> list[str]:
    """Core memory has one direction: queries may call services (a read records access), a
    service never imports a query (it reads rows through memory_rows and the models)."""
    return tree.reaching(SERVICES, QUERIES)


def client_imports(tree: Tree) -> list[str]:
    return tree.reaching(CLIENTS, tuple(_packages(tree.root)))


def hidden_imports(tree: Tree) -> list[str]:
    hidden = []
    for name, path in tree.modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = (
                    [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                hidden += [f"{name} imports {m}" for m in modules if _is_in(m, ("importlib",))]
                if isinstance(node, ast.ImportFrom):
                    hidden += [
                        f"{name} imports {alias.name}"
                        for alias in node.names
                        if alias.name in HIDDEN_IMPORTS
                    ]
            elif isinstance(node, ast.Call):
                called = node.func
                called_name = called.attr if isinstance(called, ast.Attribute) else None
                if isinstance(called, ast.Name):
                    called_name = called.id
                if called_name in HIDDEN_IMPORTS:
                    hidden.append(f"{name}:{node.lineno} calls {called_name}")
    return hidden


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


def import_circles(tree: Tree) -> list[list[str]]:
    graph = {
        name: {target for target in targets if target in tree.modules and target != name}
        for name, targets in tree.imports.items()
    }
    return _cycles(graph)


TREE = Tree(ROOT)


def test_every_package_is_in_a_layer():
    assert unplaced(TREE) == []


def test_no_layer_imports_one_above_it():
    # Covers: memoryhub never imports the apps on top (only the root URLconf mounts them),
    # the domain never imports its adapters, nothing below the domain imports the domain.
    assert upward_imports(TREE) == []


def test_a_service_never_imports_a_query():
    assert services_importing_queries(TREE) == []


def test_the_client_imports_none_of_our_modules():
    assert client_imports(TREE) == []


def test_no_module_imports_by_string():
    assert hidden_imports(TREE) == []


def test_no_import_circle_among_our_modules():
    # The forgetting circle of issue 18 (queries importing services for table names, services
    # importing the tasks that import them) is one such cycle: it fails here if it comes back.
    assert import_circles(TREE) == []


def test_the_circle_check_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_the_checks_read_the_whole_tree():
    # A wrong root or pattern would read nothing, and every check above would pass vacuously.
    assert {"memoryhub.services.forget", "memoryhub.knowledge.answers", "review.views"} <= set(
        TREE.modules
    )
    assert "memoryhub.knowledge.forget" in TREE.imports["memoryhub.services.forget"]


# Each rule, shown to fail on a violation planted in a copy of the tree: (file, text to add).
PLANTED = {
    "a module below the domain importing a query": (
        "memoryhub/fencing.py",
        "from memoryhub.queries.recall import recall\n",
        upward_imports,
    ),
    "a service reaching the API through a new top-level package": (
        "memoryhub/services/agents.py",
        "from integrations.hooks import call_api\n",
        unplaced,
    ),
    "a hidden import through import_string": (
        "memoryhub/services/agents.py",
        "from django.utils.module_loading import import_string\n",
        hidden_imports,
    ),
    "a hidden import through importlib": (
        "memoryhub/queries/profile.py",
        "import importlib\n",
        hidden_imports,
    ),
    "memoryhub importing an app on top of it": (
        "memoryhub/queries/profile.py",
        "from dashboard.views import memories\n",
        upward_imports,
    ),
    "the domain importing an adapter": (
        "memoryhub/knowledge/answers.py",
        "from memoryhub.api.schemas import MemoryOut\n",
        upward_imports,
    ),
    "a service importing a query": (
        "memoryhub/services/agents.py",
        "from memoryhub.queries.profile import get_profile\n",
        services_importing_queries,
    ),
    "a module below the domain importing a service": (
        "memoryhub/memory_rows.py",
        "from memoryhub.services.quotas import lock_usage\n",
        upward_imports,
    ),
    "the code importing the tests": (
        "memoryhub/services/agents.py",
        "from tests.factories import make_user\n",
        upward_imports,
    ),
    "the client importing the domain": (
        "memoryhub/client.py",
        "from memoryhub.errors import NotFoundError\n",
        client_imports,
    ),
    "an import circle": (
        "memoryhub/errors.py",
        "from memoryhub.keyring import cipher_for\n",
        import_circles,
    ),
}


@pytest.fixture
def tree_copy(tmp_path):
    for package in _packages(ROOT):
        shutil.copytree(
            ROOT / package,
            tmp_path / package,
            ignore=shutil.ignore_patterns("__pycache__", "*.html", "*.css", "*.js"),
        )
    return tmp_path


@pytest.mark.parametrize("violation", PLANTED)
def test_each_rule_catches_a_planted_violation(tree_copy, violation):
    path, line, check = PLANTED[violation]
    assert check(Tree(tree_copy)) == []  # The copy is clean before the plant.
    target = tree_copy / path
    target.write_text(target.read_text() + f"\n{line}")
    if path.endswith("agents.py") and "integrations" in line:
        # The new package itself reaches the API.
        (tree_copy / "integrations").mkdir()
        (tree_copy / "integrations" / "__init__.py").write_text("")
        (tree_copy / "integrations" / "hooks.py").write_text(
            "from memoryhub.api.memories import remember_items as call_api\n"
        )
    assert check(Tree(tree_copy)) != [], violation
