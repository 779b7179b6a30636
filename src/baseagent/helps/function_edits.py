"""Function-level edits: whole functions or methods sent in plain code blocks, for the code a
model was shown, merged by name into the files that hold them.

Asked for SEARCH/REPLACE blocks on a repository task, the 1.5B model sent the method it was
shown (`TTLCache.__getitem__`), correctly fixed, as an ordinary fenced block indented as in
its class, with the file and the method named in the prose before it; nothing applied it and
the right fix was lost. Aider offers the same two forms (search/replace, and whole
functions) for files too long to send back whole. Here a block's top-level definitions are
matched to the symbols the model was shown (helps/localise.py candidates): a method
(`Class.name`) is wrapped in its class, and each file's pieces are merged by
`edit_form.merge_by_name`, which replaces definitions by name, refuses what it cannot place
(a new name, an elided body, a file that would no longer parse) and writes nothing.
"""
from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

from baseagent.helps.code_blocks import fences
from baseagent.helps.edit_form import EditCheck, Merge, merge_by_name
from baseagent.helps.localise import Candidate

_PYTHON = {"", "python", "py", "python3"}
# Bounds on what one reply may hold for this form (it is the model's text).
MAX_BLOCKS = 8
MAX_BLOCK_CHARS = 60_000
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def function_edits(reply: str, shown: Sequence[Candidate], root: Path,
                   may_write: Callable[[str], bool] | None = None) -> EditCheck:
    """The files `reply`'s whole definitions would make, for the symbols in `shown`; a
    block's definition that matches no shown symbol, or more than one, is left out. Writes
    nothing; `refused` holds one note per file the pieces could not be merged into."""
    check = EditCheck()
    pieces: dict[str, list[str]] = {}
    for match in list(fences(reply))[:MAX_BLOCKS]:
        lang, body = (match.group("info").split() or [""])[0], match.group("code")
        before = reply[:match.start()]
        if lang.lower() not in _PYTHON or len(body) > MAX_BLOCK_CHARS:
            continue
        code = textwrap.dedent(body)
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        lines = code.splitlines(keepends=True)
        for node in tree.body:
            if not isinstance(node, _DEFS):
                continue
            target = _target(node, shown, before)
            if target is None:
                continue
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            text = "".join(lines[first - 1:node.end_lineno])
            owner = target.symbol.rpartition(".")[0]
            if owner and not isinstance(node, ast.ClassDef):
                text = f"class {owner}:\n" + textwrap.indent(text, "    ")
            pieces.setdefault(target.path, []).append(text)
    for path, texts in pieces.items():
        if may_write is not None and not may_write(path):
            check.refused.append(f"{path}: not a file this edit may change.")
            continue
        try:
            current = (root / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        merged = merge_by_name(current, "\n\n".join(texts))
        if isinstance(merged, Merge):
            if merged.text != current:
                check.new_texts[path] = merged.text
        else:
            check.refused.append(f"the code for {path} was not merged: {merged}.")
    return check


def _target(node: ast.stmt, shown: Sequence[Candidate], before: str) -> Candidate | None:
    """The shown symbol this definition stands for: a class by its name, a function or
    method by its own name (the last part of `Class.method`). Of several (two modules with a
    `round_half`), the one whose file the reply named last before the block, else none."""
    name = getattr(node, "name", "")
    if isinstance(node, ast.ClassDef):
        matches = [c for c in shown if c.symbol == name]
    else:
        matches = [c for c in shown if c.symbol.rpartition(".")[2] == name and c.kind != "class"]
    if len({(c.path, c.symbol) for c in matches}) == 1:
        return matches[0]
    named = [(before.rfind(c.path), c) for c in matches if c.path in before]
    if not named:
        return None
    last = max(at for at, _ in named)
    chosen = {(c.path, c.symbol): c for at, c in named if at == last}
    return next(iter(chosen.values())) if len(chosen) == 1 else None
