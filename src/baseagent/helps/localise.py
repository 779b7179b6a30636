"""Where an issue's names lead in a Python repository: candidate files and symbols, ranked.

An issue says what goes wrong ("`partition` drops the last chunk", a reproduction that runs
`from funcy import lpartition`), not where. A small model handed that and a shell never
opens the code; shown the few functions the names lead to, it can. This module finds them
without a model, from two things:

- the issue's names (`names_in`): identifiers in backticks and code blocks, the functions,
  classes and methods its reproduction calls (and the dunder methods its operations reach:
  `p[0]` on a `Path` is `Path.__getitem__`), the modules it imports (`from pkg import x`),
  traceback frames, message strings, and the words of its prose;
- the repository's structure (`RepoMap`): every def and class of its Python source with its
  line range (Python's `ast`; tests, virtual environments, `.git` and build directories
  skipped), the imports of each module, and the functions each function calls.

`localise` scores each definition: named by the issue (a call or a method on an object the
reproduction built weighs more than a word in the prose; a name defined in many places
weighs less), reached through the package's imports (`from funcy import partition` follows
`funcy/__init__.py`'s `from .seqs import *` to the `partition` of `funcy/seqs.py`), holding a
message string of the issue, or called by a candidate in its module (the bug is often one
helper below the function the issue calls). It returns the definitions, best first, each
with why, and the test files that mention the names (a hint, never an edit target).

The repository's files are untrusted input: the scan is bounded in files, bytes per file,
bytes in all and time; symbolic links are not followed; a file that does not parse adds no
definition. Nothing here runs anything or writes anything.
"""
from __future__ import annotations

import ast
import builtins
import keyword
import os
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from baseagent.core.verification.evidence import is_test_file

# Bounds on what the scan reads: files, bytes per file and in all, and wall time.
MAX_FILES = 3_000
MAX_FILE_BYTES = 512 * 1024
MAX_TOTAL_BYTES = 24 * 1024 * 1024
MAX_SECONDS = 5.0
# Directories never scanned (and any whose name ends in .egg-info or starts with a dot).
SKIP_DIRS = frozenset({"venv", "env", "build", "dist", "node_modules", "__pycache__",
                       "site-packages", "htmlcov", "_build", "docs", "doc", "examples",
                       "benchmarks"})
# Calls followed from a candidate to the functions of its module, and the weight each step
# keeps.
CALL_DEPTH = 3
CALL_DECAY = 0.5
# What is read of an issue, and the message strings of it searched for in the files.
MAX_ISSUE_CHARS = 100_000
MAX_STRINGS = 40
# Test files named as hints, at most.
MAX_TESTS = 3
# A word of the issue in a definition's name: WORD_POINTS shared by the definitions whose
# names carry it, capped at WORD_POINTS_MOST a definition (below localised_code's MIN_SCORE,
# so that a task whose words only brush a name gets nothing shown); never less than the 1
# a word these hits scored before the sharing.
WORD_POINTS = 4.0
WORD_POINTS_MOST = 2.5

_BUILTINS = frozenset(dir(builtins))
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BACKTICKS = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\w+)')
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\(\)")
_QUOTED = re.compile(r"\"([^\"\n]{4,120})\"|'([^'\n]{4,120})'")
_WORD = re.compile(r"[A-Za-z]{4,}")
# Words of an issue's prose that say nothing about where the code is; the last line, words
# a task says of the workspace itself ("the repository is in the current directory; find
# the cause and fix it there"): through cafcdf6 "current" lifted croniter's `set_current`
# over `_is_leap`, the bug's, and out of the code shown.
_STOP = frozenset("""
about above after again also always another because been before being below between both
break broken called cannot case could does doing done each else even every example
expected fine from gets give gives given have here into itself just keep like made make
more most much must need never none only other otherwise over print prints return returns
same says should shows since some still such than that their them then there these they
this those through time true false under until used uses using very want well were what
when where which while will with without work works would wrong your issue value values
python number numbers string strings instead correctly documented earlier release
current directory folder repository package source cause find suite correct change changes
""".split())
_DUNDER_CALL = "__call__"


# -- the issue's names --------------------------------------------------------------------

@dataclass
class IssueNames:
    """What an issue names, by kind (each a name and, for methods, the class it is on)."""

    called: set[str] = field(default_factory=set)  # functions and methods called
    methods: set[tuple[str, str]] = field(default_factory=set)  # (Class, method) reached
    classes: set[str] = field(default_factory=set)  # classes the reproduction builds
    named: set[str] = field(default_factory=set)  # identifiers in backticks or code
    imports: set[tuple[str, str]] = field(default_factory=set)  # (module, name)
    modules: set[str] = field(default_factory=set)  # modules imported or named
    frames: set[tuple[str, str]] = field(default_factory=set)  # traceback (file, function)
    title: set[str] = field(default_factory=set)  # identifiers of the issue's first line
    strings: set[str] = field(default_factory=set)  # message strings, constants
    words: set[str] = field(default_factory=set)  # the prose's words, lower case

    def all_names(self) -> set[str]:
        return self.called | self.classes | self.named | {m for _, m in self.methods} \
            | {n for _, n in self.imports}


def names_in(issue: str) -> IssueNames:
    """The names an issue's text gives (pure)."""
    names = IssueNames()
    issue = issue[:MAX_ISSUE_CHARS]
    code_blocks = [m.group(2) for m in _FENCE.finditer(issue)]
    prose = _FENCE.sub(" ", issue)
    for block in code_blocks:
        _read_code(block, names)
    for span in _BACKTICKS.findall(prose):
        if not _read_code(span, names):
            names.named.update(_identifiers(span))
    names.called.update(n for n in _CALLED.findall(prose) if _useful(n))
    for path, _, function in _FRAME.findall(issue):
        names.frames.add((path, function))
        names.called.add(function)
    for match in _QUOTED.finditer(issue):
        text = (match.group(1) or match.group(2)).strip()
        if re.search(r"[A-Za-z]{3}", text):
            names.strings.add(text)
    names.words = {_stem(w) for w in _WORD.findall(prose)} - _STOP
    names.strings = set(sorted(names.strings, key=lambda t: (-len(t), t))[:MAX_STRINGS])
    first = issue.strip().split("\n", 1)[0] if issue.strip() else ""
    names.title = {n for n in _IDENT.findall(first) if _useful(n) and len(n) > 2}
    return names


def _stem(word: str) -> str:
    word = word.lower()
    return word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith("ss") \
        else word


def _identifiers(text: str) -> set[str]:
    return {n for n in _IDENT.findall(text) if _useful(n)}


def _useful(name: str) -> bool:
    return len(name) > 1 and not keyword.iskeyword(name) and name not in _BUILTINS


def _read_code(code: str, names: IssueNames) -> bool:
    """The names of a piece of Python code; False when it does not parse."""
    try:
        tree = ast.parse(_dedent_prompt(code))
    except (SyntaxError, ValueError, RecursionError):
        # Not Python as a whole: a traceback, output, a shell line. Its identifiers still
        # count, as names.
        names.named.update(n for n in _identifiers(code) if len(n) > 2)
        return False
    types: dict[str, str] = {}  # variable -> the class (or callable) that built it
    imported: dict[str, str] = {}  # local name -> module it came from, for `mod.f()`
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.modules.add(node.module)
            for alias in node.names:
                if alias.name != "*":
                    names.imports.add((node.module, alias.name))
                    imported[alias.asname or alias.name] = node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names.modules.add(alias.name)
                imported[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            callee = _callee(node.value.func)
            for target in node.targets:
                if isinstance(target, ast.Name) and callee:
                    types[target.id] = callee
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            callee = _callee(func)
            if isinstance(func, ast.Name) and func.id in types:
                names.methods.add((types[func.id], _DUNDER_CALL))
            elif callee and _useful(callee):
                names.called.add(callee)
                if callee[:1].isupper():
                    names.classes.add(callee)
                    names.methods.add((callee, "__init__"))
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                owner = func.value.id
                if owner in types:
                    names.methods.add((types[owner], func.attr))
                elif owner in imported:
                    names.imports.add((imported[owner], func.attr))
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id in types:
            names.methods.add((types[node.value.id], "__getitem__"))
        elif isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn))
                                                   for o in node.ops):
            for side in node.comparators:
                if isinstance(side, ast.Name) and side.id in types:
                    names.methods.add((types[side.id], "__contains__"))
        elif isinstance(node, ast.Attribute) and _useful(node.attr):
            names.named.add(node.attr)
            if isinstance(node.value, ast.Name) and node.value.id in imported:
                names.imports.add((imported[node.value.id], node.attr))
        elif isinstance(node, ast.Name) and _useful(node.id) and node.id not in types:
            names.named.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and re.search(r"[A-Za-z]", node.value) and len(node.value) <= 120:
            names.strings.add(node.value)
    return True


def _dedent_prompt(code: str) -> str:
    """Code as typed at `>>>` prompts, without them (output lines dropped)."""
    lines = code.splitlines()
    if not any(line.lstrip().startswith(">>>") for line in lines):
        return code
    kept = [re.sub(r"^\s*(?:>>>|\.\.\.) ?", "", line) for line in lines
            if line.lstrip().startswith((">>>", "..."))]
    return "\n".join(kept)


def _callee(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


# -- the repository's map -------------------------------------------------------------------

@dataclass(frozen=True)
class Definition:
    """A def or class: its file (workspace-relative), qualified name, kind and lines."""

    path: str
    qualname: str
    kind: str  # "function", "method" or "class"
    start: int
    end: int
    calls: frozenset[str] = frozenset()  # names it calls (`f(...)`, `self.f(...)`)

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def owner(self) -> str | None:
        return self.qualname.rsplit(".", 1)[0] if "." in self.qualname else None


@dataclass(frozen=True)
class Import:
    """`from <module> import <name> as <alias>` (level: leading dots); name "*": all."""

    module: str
    level: int
    name: str
    alias: str


@dataclass(frozen=True)
class FileMap:
    path: str
    text: str
    definitions: tuple[Definition, ...]
    imports: tuple[Import, ...]
    top_level: frozenset[str]  # names assigned or defined at module level


@dataclass
class Scan:
    """One pass over a repository: its source files mapped, and its test files' texts."""

    files: dict[str, FileMap]
    tests: dict[str, str]
    truncated: bool  # a bound stopped the scan


class RepoMap:
    """Maps a repository's Python files, each parsed again only when its modification time
    or size changed (the cache lives as long as this object)."""

    def __init__(self, max_files: int = MAX_FILES, max_file_bytes: int = MAX_FILE_BYTES,
                 max_total_bytes: int = MAX_TOTAL_BYTES, max_seconds: float = MAX_SECONDS
                 ) -> None:
        self.max_files = max_files
        self.max_file_bytes = max_file_bytes
        self.max_total_bytes = max_total_bytes
        self.max_seconds = max_seconds
        self._cache: dict[str, tuple[tuple[int, int], FileMap | str | None]] = {}

    def scan(self, root: Path) -> Scan:
        started = time.monotonic()
        files: dict[str, FileMap] = {}
        tests: dict[str, str] = {}
        total = 0
        seen = 0
        truncated = False
        for rel in _python_files(root):
            if seen >= self.max_files or total >= self.max_total_bytes \
                    or time.monotonic() - started > self.max_seconds:
                truncated = True
                break
            path = root / rel
            try:
                st = path.lstat()
            except OSError:
                continue
            if not os.path.isfile(path) or os.path.islink(path) \
                    or st.st_size > self.max_file_bytes:
                continue
            seen += 1
            total += st.st_size
            entry = self._map(path, rel, (st.st_mtime_ns, st.st_size))
            if isinstance(entry, FileMap):
                files[rel] = entry
            elif isinstance(entry, str):
                tests[rel] = entry
        return Scan(files, tests, truncated)

    def _map(self, path: Path, rel: str, key: tuple[int, int]) -> FileMap | str | None:
        cached = self._cache.get(rel)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            entry: FileMap | str | None = None
        else:
            entry = text if is_test_file(rel) else map_file(rel, text)
        self._cache[rel] = (key, entry)
        return entry


def _python_files(root: Path):
    """Workspace-relative paths of the .py files under root, sorted, skipping hidden,
    virtual-environment and build directories; symbolic links are not followed."""
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS
                         and not d.endswith(".egg-info")
                         and not os.path.exists(os.path.join(directory, d, "pyvenv.cfg")))
        base = os.path.relpath(directory, root)
        for name in sorted(names):
            if name.endswith(".py"):
                yield name if base == "." else f"{base}/{name}".replace(os.sep, "/")


def map_file(rel: str, text: str) -> FileMap | None:
    """The definitions and imports of one Python file; None when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    definitions: list[Definition] = []

    def visit(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qualname = f"{prefix}{node.name}"
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if isinstance(node, ast.ClassDef):
                    kind = "class"
                    calls: frozenset[str] = frozenset()
                else:
                    kind = "method" if in_class else "function"
                    calls = frozenset(c for n in ast.walk(node) if isinstance(n, ast.Call)
                                      and (c := _callee(n.func)))
                definitions.append(Definition(rel, qualname, kind, start,
                                              node.end_lineno or node.lineno, calls))
                visit(node.body, qualname + ".", isinstance(node, ast.ClassDef))
            elif isinstance(node, (ast.If, ast.Try)):  # `if TYPE_CHECKING:`, try/except
                visit([*node.body, *getattr(node, "orelse", [])], prefix, in_class)

    try:
        visit(tree.body, "", False)
    except RecursionError:
        return None
    imports: list[Import] = []
    top: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                imports.append(Import(node.module or "", node.level, alias.name,
                                      alias.asname or alias.name))
                top.add(alias.asname or alias.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            top.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            top.add(node.name)
    return FileMap(rel, text, tuple(definitions), tuple(imports), frozenset(top))


def module_name(rel: str, is_package_dir) -> str:
    """The dotted module of a workspace-relative file: its directories up to the topmost
    that is a package (has __init__.py); `src/pkg/sub/mod.py` -> `pkg.sub.mod`."""
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
        dirs = len(parts)
    else:
        dirs = len(parts) - 1
    first = dirs
    while first > 0 and is_package_dir("/".join(parts[:first])):
        first -= 1
    return ".".join(parts[first:])


# -- the ranking ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    path: str
    symbol: str  # the qualified name ("Class.method"), "" for the file as a whole
    start: int
    end: int
    kind: str
    score: float
    why: tuple[str, ...]


@dataclass(frozen=True)
class Localisation:
    candidates: tuple[Candidate, ...]  # best first
    tests: tuple[str, ...]  # test files that mention the names (a hint only)
    truncated: bool  # the scan stopped at a bound


class _Index:
    def __init__(self, scan: Scan) -> None:
        self.scan = scan
        packages = {rel.rsplit("/", 1)[0] for rel in scan.files
                    if rel.endswith("/__init__.py")}
        self.modules: dict[str, str] = {}
        for rel in scan.files:
            name = module_name(rel, packages.__contains__)
            if name and (name not in self.modules or len(rel) < len(self.modules[name])):
                self.modules[name] = rel
        self.by_name: dict[str, list[Definition]] = defaultdict(list)
        self.top: dict[tuple[str, str], Definition] = {}
        for fmap in scan.files.values():
            for d in fmap.definitions:
                self.by_name[d.name].append(d)
                if "." not in d.qualname:
                    self.top[(fmap.path, d.name)] = d
        self.module_of = {rel: name for name, rel in self.modules.items()}

    def callees(self, caller: Definition, name: str) -> list[Definition]:
        """What `name` called in `caller` most likely is, in the caller's own file: a method
        of its own class, else a function of the module, else the one method of that name."""
        same_file = [d for d in self.by_name.get(name, ())
                     if d.path == caller.path and d.kind != "class"]
        own = [d for d in same_file if caller.owner is not None and d.owner == caller.owner]
        if own:
            return own
        functions = [d for d in same_file if d.kind == "function"]
        if functions:
            return functions
        return same_file if len(same_file) == 1 else []

    def resolve(self, module: str, name: str, depth: int = 0,
                seen: set[tuple[str, str]] | None = None) -> Definition | str | None:
        """Where `from module import name` leads: a Definition, a file (a submodule or a
        name assigned at module level), or None."""
        seen = set() if seen is None else seen
        if depth > 6 or (module, name) in seen:
            return None
        seen.add((module, name))
        rel = self.modules.get(module)
        if rel is None:
            return None
        if (rel, name) in self.top:
            return self.top[(rel, name)]
        fmap = self.scan.files[rel]
        package = module if rel.endswith("__init__.py") else module.rpartition(".")[0]
        for imp in fmap.imports:
            if imp.alias != name and imp.name != "*":
                continue
            source = _absolute(imp, package)
            if source is None:
                continue
            found = self.resolve(source, name if imp.name == "*" else imp.name, depth + 1, seen)
            if found is not None:
                return found
            if imp.name != "*" and f"{source}.{imp.name}" in self.modules:
                return self.modules[f"{source}.{imp.name}"]
        if f"{module}.{name}" in self.modules:
            return self.modules[f"{module}.{name}"]
        if name in fmap.top_level:
            return rel
        return None


def _absolute(imp: Import, package: str) -> str | None:
    if not imp.level:
        return imp.module
    parts = package.split(".") if package else []
    if imp.level - 1 > len(parts):
        return None
    base = parts[:len(parts) - (imp.level - 1)]
    return ".".join([*base, *([imp.module] if imp.module else [])])


def localise(issue: str, root: Path, repo_map: RepoMap | None = None,
             limit: int = 12) -> Localisation:
    """The definitions an issue's names lead to in the repository at `root`, best first."""
    return rank(names_in(issue), (repo_map or RepoMap()).scan(root), limit)


def rank(names: IssueNames, scan: Scan, limit: int = 12) -> Localisation:
    """The ranking itself, on names already read and a scan already made (pure)."""
    index = _Index(scan)
    scores: dict[Definition, float] = defaultdict(float)
    why: dict[Definition, list[str]] = defaultdict(list)
    file_scores: dict[str, float] = defaultdict(float)
    file_why: dict[str, list[str]] = defaultdict(list)

    def add(d: Definition, points: float, reason: str) -> None:
        scores[d] += points
        if reason not in why[d]:
            why[d].append(reason)

    def spread(name: str) -> float:  # a name defined in many places says less
        return 1.0 / max(1, len(index.by_name.get(name, ())))

    for name in names.called:
        for d in index.by_name.get(name, ()):
            add(d, 6 * spread(name), f"`{name}` is called in the issue")
    for name in names.title:
        for d in index.by_name.get(name, ()):
            add(d, 4 * spread(name), f"`{name}` is in the issue's title")
    for name in names.named - names.called:
        for d in index.by_name.get(name, ()):
            add(d, 3 * spread(name), f"`{name}` is named in the issue")
    for owner, method in names.methods:
        for d in index.by_name.get(method, ()):
            if d.owner is not None and d.owner.rsplit(".", 1)[-1] == owner:
                reason = f"`{owner}.{method}` is reached in the issue's code"
                add(d, 3 if method == "__init__" else 8, reason)
    for name in names.classes:
        for d in index.by_name.get(name, ()):
            if d.kind == "class":
                add(d, 2, f"the issue builds a `{name}`")
        # What an object the issue builds does when built and when called (a validator,
        # a schema): its __init__ and __call__, more so for the class of the title.
        for method in ("__init__", "__call__"):
            for d in index.by_name.get(method, ()):
                if d.owner is not None and d.owner.rsplit(".", 1)[-1] == name:
                    add(d, 5 if name in names.title else 3, f"the issue builds a `{name}`")
    for module, name in names.imports:
        found = index.resolve(module, name)
        if isinstance(found, Definition):
            add(found, 10, f"`{module}.{name}` is defined here")
        elif isinstance(found, str):
            file_scores[found] += 3
            file_why[found].append(f"`{module}.{name}` comes from here")
    for module in names.modules:
        rel = index.modules.get(module)
        if rel is not None and not rel.endswith("__init__.py"):
            file_scores[rel] += 2
            file_why[rel].append(f"the issue imports `{module}`")
    for path, function in names.frames:
        for d in index.by_name.get(function, ()):
            if path.replace(os.sep, "/").endswith(d.path):
                add(d, 12, f"in the traceback ({d.path}, `{function}`)")
    for rel, fmap in scan.files.items():
        stem = rel.rsplit("/", 1)[-1][:-3]
        if stem in names.strings or stem in names.named:
            file_scores[rel] += 2
            file_why[rel].append(f"the issue names `{stem}`")
        for text in names.strings:
            if len(text) >= 4 and text in fmap.text:
                line = fmap.text.count("\n", 0, fmap.text.index(text)) + 1
                inside = [d for d in fmap.definitions if d.start <= line <= d.end]
                reason = f"holds the issue's string {text!r}"
                if inside:
                    add(max(inside, key=lambda d: d.start), 4, reason)
                else:
                    file_scores[rel] += 1
                    file_why[rel].append(reason)
    definitions = [d for ds in index.by_name.values() for d in ds]
    name_words = {d: {_stem(t) for t in re.split(r"_|(?<=[a-z])(?=[A-Z])", d.name)
                      if len(t) >= 4} & names.words for d in definitions}
    # A word of the issue that few definitions' names carry says more about where the code
    # is (`leap` in one name) than one that many do (`month`, `last`): as a name defined in
    # many places says less.
    carriers = Counter(word for hits in name_words.values() for word in hits)
    for d, hits in name_words.items():
        if hits:
            points = min(WORD_POINTS_MOST, sum(WORD_POINTS / carriers[w] for w in hits))
            add(d, max(points, 1.0 * len(hits)),
                f"its name says {', '.join(sorted(hits))}, as the issue does")
    # A file the issue leads to lifts its definitions a little (and seeds nothing alone).
    for d in set(scores) | {d for rel in file_scores for d in scan.files[rel].definitions}:
        if file_scores.get(d.path):
            scores[d] += 0.25 * file_scores[d.path]
            for reason in file_why[d.path]:
                if reason not in why[d]:
                    why[d].append(reason)
    # The functions a candidate calls in its own module, a step down at a time.
    frontier = {d: s for d, s in scores.items() if d.kind != "class" and s >= 3}
    for _ in range(CALL_DEPTH):
        reached: dict[Definition, float] = {}
        for d, s in frontier.items():
            for name in d.calls:
                for callee in index.callees(d, name):
                    if callee != d:
                        gain = s * CALL_DECAY
                        if gain > reached.get(callee, 0):
                            reached[callee] = gain
                            reason = f"called by `{d.qualname}`"
                            if reason not in why[callee]:
                                why[callee].append(reason)
        for callee, gain in reached.items():
            scores[callee] += gain
        frontier = reached
    for d in scores:
        if d.kind == "class" and d.name.endswith(("Error", "Exception", "Warning")):
            scores[d] *= 0.3  # what the issue catches, rarely where the bug is
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0].path, item[0].start))
    candidates = tuple(Candidate(d.path, d.qualname, d.start, d.end, d.kind, round(s, 2),
                                 tuple(why[d])) for d, s in ranked[:limit] if s > 0)
    wanted = {n for n in names.called | names.classes | {n for _, n in names.imports}
              | {m for _, m in names.methods if not m.startswith("__")} if len(n) > 2}
    wanted &= set(index.by_name)  # names the source defines
    mentions = {rel: sum(1 for n in wanted if re.search(rf"\b{re.escape(n)}\b", text))
                for rel, text in scan.tests.items()}
    tests = sorted((rel for rel, n in mentions.items() if n),
                   key=lambda rel: (-mentions[rel], rel))
    return Localisation(candidates, tuple(tests[:MAX_TESTS]), scan.truncated)
