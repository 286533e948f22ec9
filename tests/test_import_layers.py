"""fxcore and fxls form layers: no module imports, at any depth, a module that imports it back.

Every import counts, at module level or inside a function: a deferred import only hides a
cycle until the function runs. Imports under ``if TYPE_CHECKING:`` do not count, since they
never run. A name a package's ``__init__`` resolves lazily from its ``_EXPORTS`` table
(``from fxcore import Graph``) counts as an import of the module that defines it. Each cycle
is reported once, as the modules that import one another, with one path through them
naming the import lines that close it.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("fxcore", "fxls")

#: importing module -> imported module -> the lines of the importing file that import it
ImportGraph = dict[str, dict[str, list[int]]]


def _module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, at any depth; ``if TYPE_CHECKING:`` bodies skipped."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
        return
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        children: list[ast.stmt] | Iterator[ast.AST] = node.orelse
    else:
        children = ast.iter_child_nodes(node)
    for child in children:
        yield from _imports(child)


def _lazy_exports(tree: ast.Module) -> dict[str, str]:
    """A package's ``_EXPORTS = {"Name": "pkg.module", ...}`` table, if it has one."""
    for statement in tree.body:
        target = statement.target if isinstance(statement, ast.AnnAssign) else None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
        if isinstance(target, ast.Name) and target.id == "_EXPORTS":
            return ast.literal_eval(statement.value)  # type: ignore[arg-type]
    return {}


class _Resolver:
    """Turns an import statement of one module into the known modules it loads."""

    def __init__(self, modules: set[str], lazy_exports: dict[str, dict[str, str]]) -> None:
        self.modules = modules
        self.lazy_exports = lazy_exports

    def targets(
        self, importer: str, is_package: bool, node: ast.Import | ast.ImportFrom
    ) -> set[str]:
        if isinstance(node, ast.Import):
            return {self._known(alias.name) for alias in node.names} - {""}
        base = self._base(importer, is_package, node)
        found = set()
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            lazy = self.lazy_exports.get(base, {}).get(alias.name)
            found.add(submodule if submodule in self.modules else lazy or self._known(base))
        return found - {""}

    @staticmethod
    def _base(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        package = importer.split(".") if is_package else importer.split(".")[:-1]
        anchor = package[: len(package) - node.level + 1]
        return ".".join([*anchor, *([node.module] if node.module else [])])

    def _known(self, name: str) -> str:
        """The longest known module ``name`` is or is inside (``torch.nn`` -> none: '')."""
        while name and name not in self.modules:
            name = name.rpartition(".")[0]
        return name


def import_graph(root: Path, packages: tuple[str, ...]) -> ImportGraph:
    files = {
        _module_name(root, path): path
        for package in packages
        for path in sorted((root / package).rglob("*.py"))
    }
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in files.items()}
    lazy = {name: _lazy_exports(tree) for name, tree in trees.items()}
    resolver = _Resolver(set(files), lazy)
    graph: ImportGraph = {}
    for name, tree in trees.items():
        edges: dict[str, list[int]] = graph.setdefault(name, {})
        is_package = files[name].name == "__init__.py"
        for node in _imports(tree):
            for target in resolver.targets(name, is_package, node) - {name}:
                edges.setdefault(target, []).append(node.lineno)
    return graph


def _reachable(graph: ImportGraph, start: str) -> set[str]:
    seen: set[str] = set()
    stack = list(graph.get(start, {}))
    while stack:
        module = stack.pop()
        if module not in seen:
            seen.add(module)
            stack.extend(graph.get(module, {}))
    return seen


def import_cycles(graph: ImportGraph) -> list[list[str]]:
    """The groups of modules that import one another (strongly connected), sorted."""
    reach = {module: _reachable(graph, module) for module in graph}
    groups = {
        frozenset(other for other in reach[module] if module in reach[other])
        for module in graph
        if module in reach[module]
    }
    return sorted(sorted(group) for group in groups)


def describe_cycle(graph: ImportGraph, group: list[str]) -> str:
    """One shortest path from the group's first module back to it, each import with its lines."""
    start = group[0]
    came_from: dict[str, str] = {}
    queue = deque([start])
    while start not in came_from:
        module = queue.popleft()
        for target in graph[module]:
            if target in group and target not in came_from:
                came_from[target] = module
                queue.append(target)
    path = [start]
    while len(path) == 1 or path[-1] != start:
        path.append(came_from[path[-1]])
    path.reverse()
    steps = [
        f"{importer} -> {imported} (line {', '.join(map(str, graph[importer][imported]))})"
        for importer, imported in pairwise(path)
    ]
    return f"{len(group)} modules {group}: " + "; ".join(steps)


@pytest.fixture(scope="module")
def project_graph() -> ImportGraph:
    return import_graph(REPO, PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_package_has_no_import_cycle(project_graph: ImportGraph, package: str) -> None:
    cycles = [
        describe_cycle(project_graph, group)
        for group in import_cycles(project_graph)
        if any(module.split(".")[0] == package for module in group)
    ]
    assert cycles == []


def _write_package(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_cycle_hidden_in_a_function_is_found_and_described(tmp_path: Path) -> None:
    _write_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/graph.py": "def trace():\n    from pkg import tracer\n",
        "pkg/tracer.py": "import os\n\nfrom pkg.graph import trace\n",
    })
    graph = import_graph(tmp_path, ("pkg",))
    assert import_cycles(graph) == [["pkg.graph", "pkg.tracer"]]
    assert describe_cycle(graph, ["pkg.graph", "pkg.tracer"]) == (
        "2 modules ['pkg.graph', 'pkg.tracer']: "
        "pkg.graph -> pkg.tracer (line 2); pkg.tracer -> pkg.graph (line 3)"
    )


def test_type_checking_imports_do_not_count_but_their_else_branch_does(tmp_path: Path) -> None:
    _write_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/node.py": (
            "import typing\n"
            "if typing.TYPE_CHECKING:\n    from .graph import Graph\n"
            "else:\n    from . import names\n"
        ),
        "pkg/graph.py": "from .node import Node\n",
        "pkg/names.py": "",
    })
    graph = import_graph(tmp_path, ("pkg",))
    assert import_cycles(graph) == []
    assert graph["pkg.node"] == {"pkg.names": [5]}


def test_a_lazy_export_of_the_package_counts_as_an_import_of_its_module(tmp_path: Path) -> None:
    _write_package(tmp_path, {
        "pkg/__init__.py": '_EXPORTS = {"Graph": "pkg.graph"}\n',
        "pkg/graph.py": "def lint():\n    from pkg.node import Node\n",
        "pkg/node.py": "from pkg import Graph\n",
    })
    graph = import_graph(tmp_path, ("pkg",))
    assert import_cycles(graph) == [["pkg.graph", "pkg.node"]]
