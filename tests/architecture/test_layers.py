"""No import from a lower layer to a higher one, and no import circle, in src/baseagent.

Every import is read with `ast`: at module level and inside functions and methods (a lazy
import is still a dependency). Imports under `if TYPE_CHECKING:` are exempt from both rules:
they are annotations only, never run. The layer table is tests/architecture/layers.py.
"""
from __future__ import annotations

import ast
from pathlib import Path

from architecture.layers import LAYERS

SRC = Path(__file__).resolve().parents[2] / "src" / "baseagent"


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = ["baseagent", *path.relative_to(SRC).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports_in(node: ast.AST, exempt: bool = False):
    """(import node, under TYPE_CHECKING) for every import below `node`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            for each in child.body:
                yield from _one(each, True)
            for each in child.orelse:
                yield from _one(each, exempt)
        else:
            yield from _one(child, exempt)


def _one(node: ast.AST, exempt: bool):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node, exempt
    else:
        yield from _imports_in(node, exempt)


def _targets(name: str, node: ast.Import | ast.ImportFrom, is_package: bool,
             known: dict[str, Path]) -> list[str]:
    """The baseagent modules one import statement depends on."""
    if isinstance(node, ast.Import):
        wanted = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = name.split(".") if is_package else name.split(".")[:-1]
            package = package[:len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        # `from pkg import mod` depends on pkg.mod when it is a module, else on pkg
        wanted = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                  for alias in node.names]
    found = []
    for each in wanted:
        while each and each not in known:
            each = each.rpartition(".")[0]
        if each.startswith("baseagent"):
            found.append(each)
    return found


def import_graph() -> dict[str, dict[str, int]]:
    """importer -> {imported: line of the first import}, TYPE_CHECKING imports left out."""
    known = modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        edges = graph.setdefault(name, {})
        for node, exempt in _imports_in(tree):
            if exempt:
                continue
            for target in _targets(name, node, path.name == "__init__.py", known):
                if target != name:
                    edges.setdefault(target, node.lineno)
    return graph


def layer_of(module: str) -> tuple[int, str]:
    """(rank, layer name) of a module: 0 is the top layer."""
    best: tuple[int, int, str] | None = None
    relative = module.removeprefix("baseagent").removeprefix(".")
    for rank, (layer, entries) in enumerate(LAYERS):
        for entry in entries:
            if entry == "" and relative == "" or entry and (
                    relative == entry or relative.startswith(entry + ".")):
                if best is None or len(entry) > best[1]:
                    best = (rank, len(entry), layer)
    if best is None:
        raise AssertionError(f"{module} is in no layer of tests/architecture/layers.py")
    return best[0], best[2]


def test_every_module_has_a_layer():
    for module in modules():
        layer_of(module)


def test_no_import_reaches_up_a_layer():
    crossings = []
    for importer, edges in sorted(import_graph().items()):
        rank, layer = layer_of(importer)
        for imported, line in sorted(edges.items()):
            their_rank, their_layer = layer_of(imported)
            if their_rank < rank:
                crossings.append(f"{importer} (layer {layer}) imports {imported} (layer "
                                 f"{their_layer}, above it), line {line}")
    assert not crossings, "imports from a lower layer to a higher one:\n" + "\n".join(crossings)


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The import circles: each strongly connected set of two or more modules, as one
    path around it (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.append(member)
                        if member == node:
                            break
                    if len(members) > 1:
                        found.append(_path(graph, sorted(members)))
    return found


def _path(graph: dict[str, dict[str, int]], members: list[str]) -> list[str]:
    """One circle through the first member, within `members` (breadth first)."""
    inside = set(members)
    start = members[0]
    came: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph.get(node, {})):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return [*reversed(path), start]
            if child in inside and child not in came:
                came[child] = node
                queue.append(child)
    return members


def test_no_import_circle():
    graph = import_graph()
    found = cycles(graph)
    lines = [" -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:]))
             + f" -> {cycle[-1]}" for cycle in found]
    assert not found, "import circles:\n" + "\n".join(lines)


def test_the_checks_find_what_they_look_for():
    """The two rules on a made-up graph: an upward import and a circle are reported."""
    graph = {"baseagent.errors": {"baseagent.core.loop": 3}, "baseagent.core.loop":
             {"baseagent.errors": 1}}
    assert cycles(graph) == [["baseagent.core.loop", "baseagent.errors", "baseagent.core.loop"]]
    assert layer_of("baseagent.errors")[0] > layer_of("baseagent.core.loop")[0]
    assert layer_of("baseagent.core.context.tokens")[1] == "engine"
    assert layer_of("baseagent")[1] == "foundation"
