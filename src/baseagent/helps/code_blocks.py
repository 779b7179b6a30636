"""Code a model put in its answer instead of in a file.

Small models often answer "Here is the updated file:" with the whole solution in a fenced
block and no tool call: nothing reaches the disk, and a loop that takes any answer without
tool calls as final ends the run with the work undone. This module finds, in such an answer,
the blocks that are the whole new content of one file (Aider's whole-file edit format): the
prose-code help (helps/prose_code.py) then writes them with write_file (and says so), or
tells the model to.

A block belongs to a file when the file is named just before it (a line such as
`hamming.py`, `**hamming.py**`, "Here is hamming.py:"), in the fence's info string
(```` ```python hamming.py ````) or on its first line (`# hamming.py`), and the file exists or
the task names it. Without a name, a block counts only when the task names exactly one file
that exists, in the block's language. Either way a block that leaves out a function or class
(in Python, any module-level name) the file defines today is a fragment, not the file, and
is never written; nor is a test file when the task says not to change the tests, nor a
block that imports the module it would be written as (the tests, echoed).
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from collections.abc import Iterator
from pathlib import Path

from baseagent.core.verification.evidence import forbids_test_changes, is_test_file, runs_tests
from baseagent.helps.edit_form import has_edit_blocks
from baseagent.helps.named_files import could_be_new_file, inside, named_in
from baseagent.llm.types import ToolCall

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})(?P<info>[^\n`]*)\n"
                    r"(?P<code>.*?)^(?P=indent)(?P=ticks)[ \t]*$", re.DOTALL | re.MULTILINE)
_TOP_LEVEL = re.compile(r"^(?:async\s+)?(?:def|class)\s+(\w+)", re.MULTILINE)
# Languages a fence names, by file extension (only to match an unnamed block to a file).
_LANGUAGES = {".py": {"python", "py", "python3"}, ".js": {"javascript", "js"},
              ".ts": {"typescript", "ts"}, ".go": {"go"}, ".rs": {"rust", "rs"},
              ".java": {"java"}, ".rb": {"ruby", "rb"}, ".c": {"c"}, ".cpp": {"cpp", "c++"},
              ".sh": {"bash", "sh", "shell"}}


@dataclass(frozen=True)
class FileBlock:
    path: str  # as the answer or the task names it, relative to the workspace
    content: str
    span: tuple[int, int]  # where the fenced block is in the answer


def file_blocks(answer: str, cwd: Path, task: str) -> list[FileBlock]:
    """The whole-file blocks in `answer`, one per file (the last block for a file wins)."""
    found: dict[str, FileBlock] = {}
    for block in _labelled_blocks(answer, cwd, task):
        if _is_whole(block.content, cwd / block.path):
            found[block.path] = block
    return list(found.values())


@dataclass(frozen=True)
class Fragment:
    """A block labelled with an existing file that defines top-level names of its own but
    leaves out some the file defines now: `missing`, in the file's order."""
    path: str
    missing: tuple[str, ...]


def fragments(answer: str, cwd: Path, task: str) -> list[Fragment]:
    """The blocks in `answer` that look meant as a whole file but drop top-level names (a
    small model moves `modifier` into the class the tests import it from, leaves out a
    helper, or the constants a stub declares): never written, so the model has to be told why. A block with no
    top-level definition at all is an excerpt (a few changed lines), not one of these."""
    found: dict[str, Fragment] = {}
    for block in _labelled_blocks(answer, cwd, task):
        try:
            current = (cwd / block.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        defined, had = _top_level(block.content, current, block.path)
        missing = tuple(n for n in had if n not in defined)
        if defined and missing:
            found[block.path] = Fragment(block.path, missing)
        else:
            found.pop(block.path, None)  # a later whole block for the file wins
    return list(found.values())


def merged_blocks(answer: str, cwd: Path, task: str) -> list[tuple[FileBlock, Fragment]]:
    """The fragments in `answer` of existing Python files, each merged into its file
    (`merge_definitions`): the block's functions, classes and constants replace those of
    the same names, the rest of the file stays. For the whole-file probe, which keeps a
    write only if the tests then pass more: a block that moved `modifier` into a class, or
    sent only the function it changed, is still an attempt the tests can judge."""
    merged: dict[str, tuple[FileBlock, Fragment]] = {}
    wanted = {f.path: f for f in fragments(answer, cwd, task)}
    for block in _labelled_blocks(answer, cwd, task):
        fragment = wanted.get(block.path)
        if fragment is None or not block.path.endswith(".py"):
            continue
        try:
            current = (cwd / block.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        content = merge_definitions(current, block.content)
        if content is not None:
            merged[block.path] = (FileBlock(block.path, content, block.span), fragment)
    return list(merged.values())


def merge_definitions(current: str, code: str) -> str | None:
    """`current` (a Python module) with the top-level definitions in `code` put in: each
    function, class or assignment replaces the one binding the same name, new ones are
    added at the end, imports it lacks at the top; other statements of `code` (a demo
    call, prints) are left out. None when either does not parse or nothing would change."""
    try:
        old_tree, new_tree = ast.parse(current), ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    old_lines = current.splitlines(keepends=True)
    new_lines = code.splitlines(keepends=True)
    where: dict[str, tuple[int, int]] = {}
    for node in old_tree.body:
        for name in _node_names(node):
            where.setdefault(name, _node_span(node))
    replaced: dict[tuple[int, int], str] = {}
    added: list[str] = []
    imports: list[str] = []
    for node in new_tree.body:
        start, end = _node_span(node)
        text = "".join(new_lines[start:end])
        text = text if text.endswith("\n") else text + "\n"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if text.strip() not in current:
                imports.append(text)
            continue
        spans = {where[name] for name in _node_names(node) if name in where}
        if len(spans) > 1:
            return None  # one statement for several of the file's: no clear place
        if spans:
            replaced[spans.pop()] = text
        elif _node_names(node) and (not isinstance(node, (ast.Assign, ast.AnnAssign))
                                    or _is_literal(node.value)):
            added.append(text)  # a new definition (not `c = Character()`: a demo)
    if not replaced and not added:
        return None
    out: list[str] = []
    last = 0
    for start, end in sorted(replaced):
        out += old_lines[last:start]
        out.append(replaced[(start, end)])
        last = end
    out += old_lines[last:]
    result = "".join(out)
    if added:
        result = result.rstrip("\n") + "\n\n\n" + "\n\n".join(a.rstrip("\n") + "\n"
                                                             for a in added)
    if imports:
        head = _after_docstring(old_tree)
        lines = result.splitlines(keepends=True)
        result = "".join(lines[:head]) + "".join(imports) + "".join(lines[head:])
    return None if result == current else result


def _is_literal(value: ast.expr | None) -> bool:
    try:
        ast.literal_eval(value) if value is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return value is not None


def _node_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _node_span(node: ast.stmt) -> tuple[int, int]:
    """The statement's lines, 0-based and end-exclusive, decorators included."""
    decorators = getattr(node, "decorator_list", [])
    start = min([d.lineno for d in decorators] + [node.lineno])
    return start - 1, node.end_lineno or node.lineno


def _after_docstring(tree: ast.Module) -> int:
    """The line after a module docstring (0 when there is none)."""
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        return first.end_lineno or 0
    return 0


def fences(text: str) -> Iterator[re.Match[str]]:
    """Every fenced block of `text` as this module reads fences (groups `info`, `code`), for
    readers of other forms (helps/function_edits.py)."""
    return _FENCE.finditer(text)


def labelled_blocks(answer: str, cwd: Path, task: str) -> list[FileBlock]:
    """Every block in `answer` that belongs to a file, whole or not (prose_code.py merges
    a big Python file's by name: edit_form.merge_by_name)."""
    return _labelled_blocks(answer, cwd, task)


def _labelled_blocks(answer: str, cwd: Path, task: str) -> list[FileBlock]:
    """Each fenced block in `answer` that belongs to a file (by its label, or as the only
    candidate), in a language that fits, and not a test file the task keeps."""
    named_in_task = set(named_in(task))
    keep_tests = forbids_test_changes(task)
    blocks = []
    for match in _FENCE.finditer(answer):
        code, info = match.group("code"), match.group("info")
        path = _named(answer[:match.start()], info, code, cwd, named_in_task) \
            or _only_candidate(info, cwd, named_in_task)
        if path is None or not inside(cwd, path) or not _language_fits(info, path) \
                or (keep_tests and is_test_file(path)) or _imports_itself(code, path) \
                or has_edit_blocks(code):  # SEARCH/REPLACE edits (edit_form.py), not a file
            continue
        code = _without_name_line(code, path)
        blocks.append(FileBlock(path, code if code.endswith("\n") else code + "\n",
                                match.span()))
    return blocks


def _imports_itself(code: str, path: str) -> bool:
    """Whether a Python block imports the module it would be written as (`from anagram
    import find_anagrams` in a block taken for anagram.py): a model that echoes the test
    file after "now let's run the tests" shows code that uses the file, not the file."""
    if not path.endswith(".py"):
        return False
    module = re.escape(Path(path).stem)
    return re.search(rf"^\s*(?:from\s+{module}\s+import\b|import\s+{module}\b)", code,
                     re.MULTILINE) is not None


def _language_fits(info: str, path: str) -> bool:
    """A fence that names a language must name the file's (a ```bash block after "run
    hamming.py" is a command, not the file)."""
    language = info.strip().split()[0].lower() if info.strip() else ""
    accepted = _LANGUAGES.get(Path(path).suffix)
    return not language or accepted is None or language in accepted \
        or not any(language in names for names in _LANGUAGES.values())


def _named(before: str, info: str, code: str, cwd: Path, task_files: set[str]) -> str | None:
    """The file a block is labelled with, if that file exists or the task names it."""
    lines = [line for line in before.rstrip().splitlines()[-2:] if line.strip()]
    first = code.splitlines()[0] if code.strip() else ""
    sources = [info, *(reversed(lines)), first if first.lstrip().startswith(("#", "//")) else ""]
    for source in sources:
        for name in named_in(source or ""):
            # `path/to/hamming.py`: the prompt's example path kept in front of the name
            for candidate in dict.fromkeys((name, Path(name).name)):
                if (cwd / candidate).is_file() \
                        or (candidate in task_files and could_be_new_file(candidate)):
                    return candidate
    return None


def _only_candidate(info: str, cwd: Path, task_files: set[str]) -> str | None:
    """The one existing file the task names, when the block's language fits it."""
    existing = [name for name in task_files
                if (cwd / name).is_file() and not _looks_like_test(name)]
    if len(existing) != 1:
        return None
    name = existing[0]
    language = info.strip().split()[0].lower() if info.strip() else ""
    accepted = _LANGUAGES.get(Path(name).suffix)
    return name if accepted is not None and language in accepted else None


def _looks_like_test(name: str) -> bool:
    stem = Path(name).name
    return stem.startswith("test_") or Path(name).stem.endswith(("_test", ".test", ".spec"))


def _without_name_line(code: str, path: str) -> str:
    """A first line that only names the file (`# hamming.py`) is a label, not content."""
    lines = code.split("\n", 1)
    label = lines[0].strip().lstrip("#/ ").strip()
    if label in (path, Path(path).name) and len(lines) == 2:
        return lines[1]
    return code


def _is_whole(code: str, target: Path) -> bool:
    """Whether `code` is a whole file: not empty, and defining every top-level function
    and class (and in Python every module-level name) the file defines now (a block that
    leaves one out is an excerpt)."""
    if not code.strip():
        return False
    try:
        current = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True  # a new file: whatever the block holds is all of it
    defined, had = _top_level(code, current, target.name)
    return set(had) <= set(defined)


def _top_level(code: str, current: str, path: str) -> tuple[list[str], list[str]]:
    """The names `code` and the file's `current` text define at the top level, each in
    order: functions and classes; in a Python file where both parse, every module-level
    name they bind (`SUBLIST = None` too: tests import those as they import functions,
    `from sublist import sublist, SUBLIST`). Both are read the same way, so a block that
    does not parse is never short of names only the parser sees."""
    if path.endswith(".py"):
        try:
            return _bound_names(ast.parse(code)), _bound_names(ast.parse(current))
        except (SyntaxError, ValueError):
            pass
    return _TOP_LEVEL.findall(code), _TOP_LEVEL.findall(current)


def _bound_names(tree: ast.Module) -> list[str]:
    """The names a module's own statements bind, in order (not those inside `if` or
    `try`: a rewrite may move those, and the regex fallback never saw them either)."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return list(dict.fromkeys(names))


_SHELL_LANGUAGES = ("", "bash", "sh", "shell", "console", "zsh", "terminal")


def test_command_block(answer: str) -> FileBlock | None:
    """A fenced shell block in `answer` that only runs the tests (`python -m pytest -q x`,
    `npm test`): what a model shows when it says it ran them but did not. Returned as a
    block whose `content` is the command (its `path` is empty)."""
    for match in _FENCE.finditer(answer):
        info = match.group("info").strip().lower()
        if (info.split()[0] if info else "") not in _SHELL_LANGUAGES:
            continue
        lines = [line.strip().removeprefix("$ ").strip()
                 for line in match.group("code").splitlines() if line.strip()]
        if len(lines) == 1 and runs_tests(lines[0]) and not lines[0].startswith(("=", "#")):
            return FileBlock("", lines[0], match.span())
    return None


def without_blocks(answer: str, blocks: list[FileBlock]) -> str:
    """The answer's text with these blocks taken out (they became file writes)."""
    kept, last = [], 0
    for start, end in sorted(b.span for b in blocks):
        kept.append(answer[last:start])
        last = end
    kept.append(answer[last:])
    return re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip()


def differs(path: Path, content: str) -> bool:
    """Whether writing `content` would change the file (an answer that shows the file as
    it already is, as a summary, changes nothing)."""
    try:
        current = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True

    def norm(text: str) -> list[str]:
        return [line.rstrip() for line in text.strip().splitlines()]

    return norm(current) != norm(content)


def unchanged_blocks(answer: str, cwd: Path, task: str) -> list[str]:
    """The files that `answer` holds whole in a code block exactly as they already are."""
    return list(dict.fromkeys(b.path for b in file_blocks(answer, cwd, task)
                              if not differs(cwd / b.path, b.content)))


def written_path(call: ToolCall) -> str | None:
    """The file a write_file call writes (None for other calls, or unreadable arguments)."""
    if call.name != "write_file":
        return None
    try:
        path = json.loads(call.arguments or "{}").get("file_path")
    except (ValueError, AttributeError, RecursionError):
        return None
    return path if isinstance(path, str) else None
