"""The module-level names a function shown to the model uses (a table, a constant), shown
beside it.

The repository probe (helps/repo_probe.py) shows the functions an issue leads to, not their
modules. At 1a80f63 on inflect the model was shown `engine.ordinal` and the line that picks
the suffix, `post = nth[abs(n) % 10]`, and asked for a rewrite of it six times; the fix
(`% 100`) reads the table `nth`, whose keys 11, 12 and 13 it never saw, and every rewrite
guessed. Here each function's loads of a name the module assigns at its top level (and the
function does not assign itself) lead to that assignment's source, when it is short.

Bounds: MAX_NAMES a function, MAX_LINES and MAX_CHARS an assignment, TOTAL_CHARS in all;
a file that does not parse gives none.
"""
from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

MAX_NAMES = 3
MAX_LINES = 20
MAX_CHARS = 800
TOTAL_CHARS = 1_600


@dataclass(frozen=True)
class ModuleName:
    """A top-level assignment of a module: the name, its lines (1-based) and its source."""

    name: str
    start: int
    end: int
    text: str


def names_used(text: str, start: int, end: int) -> list[ModuleName]:
    """The top-level assignments of the module `text` that the function defined within
    lines `start`-`end` reads, in the order the module has them (MAX_NAMES at most, each
    within MAX_LINES and MAX_CHARS)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    assigned: dict[str, ast.stmt] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
        for target in targets:
            if isinstance(target, ast.Name):
                assigned.setdefault(target.id, node)
    function = next((node for node in ast.walk(tree)
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and start <= node.lineno <= end and (node.end_lineno or 0) <= end), None)
    if function is None:
        return []
    reads = _Reads()
    for part in [*function.body, *function.args.defaults,
                 *(d for d in function.args.kw_defaults if d is not None)]:
        reads.visit(part)
    loads = reads.loads
    stores = reads.stores | {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    lines = text.splitlines()
    out: list[ModuleName] = []
    for name in sorted((loads - stores) & assigned.keys(), key=lambda n: assigned[n].lineno):
        node = assigned[name]
        first, last = node.lineno, node.end_lineno or node.lineno
        source = "\n".join(lines[first - 1:last])
        if last - first + 1 <= MAX_LINES and len(source) <= MAX_CHARS:
            out.append(ModuleName(name, first, last, source))
        if len(out) == MAX_NAMES:
            break
    return out


class _Reads(ast.NodeVisitor):
    """The names a function's body and defaults read and assign, its annotations aside (a
    type alias is no value the code computes with)."""

    def __init__(self) -> None:
        self.loads: set[str] = set()
        self.stores: set[str] = set()

    def visit_Name(self, node: ast.Name) -> None:
        (self.loads if isinstance(node.ctx, ast.Load) else self.stores).add(node.id)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_arg(self, node: ast.arg) -> None:
        self.stores.add(node.arg)  # a nested function's or lambda's: its annotation aside

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.stores.add(node.name)
        for part in [*node.body, *node.args.defaults, *node.decorator_list]:
            self.visit(part)
        for arg in ast.walk(node.args):
            if isinstance(arg, ast.arg):
                self.stores.add(arg.arg)

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function


def shown_names(places: Sequence[tuple[str, int, int]], texts: dict[str, str]
                ) -> list[list[ModuleName]]:
    """For each function shown (path, first line, last line; `texts`: path -> the file),
    the module-level names it reads that no function before it led to, TOTAL_CHARS in
    all."""
    seen: set[tuple[str, str]] = set()
    room = TOTAL_CHARS
    out: list[list[ModuleName]] = []
    for path, start, end in places:
        found = []
        for name in names_used(texts.get(path, ""), start, end):
            if (path, name.name) in seen or len(name.text) > room:
                continue
            seen.add((path, name.name))
            room -= len(name.text)
            found.append(name)
        out.append(found)
    return out
