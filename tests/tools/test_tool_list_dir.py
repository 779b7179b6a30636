"""list_dir end to end on real trees."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from baseagent.tools import list_dir
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ToolError


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel in ["b.txt", "a/one.py", "a/deep/x.txt", "a/deep/deeper/y.txt", "c/two.md"]:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    (tmp_path / "link").symlink_to("a")
    return tmp_path


def ls(ctx: ToolContext, path: str = ".", **kw) -> str:
    return list_dir.run(list_dir.Args(dir_path=path, **kw), ctx).output


def test_format_and_default_depth(tree):
    assert ls(ToolContext(cwd=tree)) == "\n".join([
        f"Absolute path: {tree}",
        "a/",
        "  deep/",
        "  one.py",
        "b.txt",
        "c/",
        "  two.md",
        "link@",
    ])


def test_depth(tree):
    ctx = ToolContext(cwd=tree)
    assert ls(ctx, depth=1).splitlines()[1:] == ["a/", "b.txt", "c/", "link@"]
    assert ls(ctx, "a", depth=3).splitlines() == [
        f"Absolute path: {tree / 'a'}",
        "deep/",
        "  deeper/",
        "    y.txt",
        "  x.txt",
        "one.py",
    ]


def test_offset_limit_and_more_line(tree):
    ctx = ToolContext(cwd=tree)
    out = ls(ctx, limit=3).splitlines()
    assert out == [f"Absolute path: {tree}", "a/", "  deep/", "  one.py",
                   "More than 3 entries found"]
    out = ls(ctx, offset=4, limit=3).splitlines()
    assert out == [f"Absolute path: {tree}", "b.txt", "c/", "  two.md",
                   "More than 3 entries found"]
    out = ls(ctx, offset=7, limit=3).splitlines()
    assert out == [f"Absolute path: {tree}", "link@"]
    with pytest.raises(ToolError, match="offset 9 .* has 7 entries"):
        ls(ctx, offset=9)


def test_bulky_dirs_shown_but_not_expanded(tmp_path):
    for rel in ["node_modules/pkg/index.js", ".venv/bin/python", "__pycache__/m.pyc",
                ".git/HEAD", "src/main.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    ctx = ToolContext(cwd=tmp_path)
    assert ls(ctx).splitlines()[1:] == [".venv/", "__pycache__/", "node_modules/", "src/",
                                        "  main.py"]
    assert ls(ctx, include_ignored=True).splitlines()[1:] == [
        ".git/", "  HEAD", ".venv/", "  bin/", "__pycache__/", "  m.pyc", "node_modules/",
        "  pkg/", "src/", "  main.py",
    ]


def test_relative_and_dotdot_paths_are_normalised(tree):
    ctx = ToolContext(cwd=tree / "a")
    assert ls(ctx, "../c").splitlines() == [f"Absolute path: {tree / 'c'}", "two.md"]


def test_errors(tree):
    ctx = ToolContext(cwd=tree)
    with pytest.raises(ToolError, match="directory not found"):
        ls(ctx, "missing")
    with pytest.raises(ToolError, match="not a directory.*read_file"):
        ls(ctx, "b.txt")
    with pytest.raises(ValidationError):
        list_dir.Args(dir_path=".", depth=0)
    with pytest.raises(ValidationError):
        list_dir.Args(dir_path=".", limit=0)


def test_empty_dir(tmp_path):
    assert ls(ToolContext(cwd=tmp_path)) == f"Absolute path: {tmp_path}"


def test_symlinked_dir_is_not_followed(tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path)
    assert ls(ToolContext(cwd=tmp_path), depth=5).splitlines()[1:] == ["loop@"]


def test_undecodable_name_is_printable(tmp_path):
    os.close(os.open(os.path.join(os.fsencode(tmp_path), b"bad\xffname"), os.O_CREAT))
    out = ls(ToolContext(cwd=tmp_path))
    assert out.splitlines()[1] == "bad\ufffdname"
    out.encode("utf-8")  # would raise on a lone surrogate


def test_ten_thousand_files(tmp_path):
    big = tmp_path / "big"
    big.mkdir()
    for i in range(10_000):
        (big / f"f{i:05d}.txt").touch()
    (tmp_path / "z.txt").touch()
    ctx = ToolContext(cwd=tmp_path)
    out = ls(ctx, limit=5).splitlines()
    assert out == [f"Absolute path: {tmp_path}", "big/", "  f00000.txt", "  f00001.txt",
                   "  f00002.txt", "  f00003.txt", "More than 5 entries found"]
    out = ls(ctx, offset=10_001, limit=5).splitlines()
    assert out == [f"Absolute path: {tmp_path}", "  f09999.txt", "z.txt"]


def test_a_hung_directory_times_out_and_an_interrupt_stops_it(tree, monkeypatch):
    # A hung network mount: scandir blocks in the kernel. The listing gives up on time.
    release = __import__("threading").Event()
    real_scandir = os.scandir

    def hung_scandir(path):
        release.wait(5)
        return real_scandir(path)

    monkeypatch.setattr(list_dir.os, "scandir", hung_scandir)
    monkeypatch.setattr(list_dir, "TIMEOUT_S", 0.3)
    import time
    started = time.monotonic()
    try:
        with pytest.raises(ToolError, match="timed out after 0.3 seconds"):
            ls(ToolContext(cwd=tree))
        assert time.monotonic() - started < 2
        monkeypatch.setattr(list_dir, "TIMEOUT_S", 30.0)
        started = time.monotonic()
        with pytest.raises(ToolError, match="interrupted"):
            ls(ToolContext(cwd=tree, cancelled=lambda: time.monotonic() - started > 0.2))
        assert time.monotonic() - started < 2
    finally:
        release.set()
