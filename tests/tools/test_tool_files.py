"""read_file and write_file end to end on real files."""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from baseagent.tools import read_file, write_file
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ToolError


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path)


def read(ctx: ToolContext, path: str, **kw) -> str:
    return read_file.run(read_file.Args(file_path=path, **kw), ctx).output


def write(ctx: ToolContext, path: str, content: str):
    return write_file.run(write_file.Args(file_path=path, content=content), ctx)


# --- read_file ----------------------------------------------------------------------------

def test_read_numbers_lines(ctx, tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\r\n\nfour")
    assert read(ctx, "a.txt") == "L1: one\nL2: two\nL3: \nL4: four"
    res = read_file.run(read_file.Args(file_path=str(tmp_path / "a.txt")), ctx)
    assert res.success and res.item == {}


def test_read_offset_and_limit(ctx, tmp_path):
    (tmp_path / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert read(ctx, "a.txt", offset=4, limit=3) == "L4: line 4\nL5: line 5\nL6: line 6"
    assert read(ctx, "a.txt", offset=10, limit=5) == "L10: line 10"


def test_read_long_line_cut_on_utf8_boundary(ctx, tmp_path):
    line = "x" * 499 + "é" * 300  # the 500-byte cut falls inside the first "é"
    (tmp_path / "long.txt").write_text(line + "\nnext\n")
    out = read(ctx, "long.txt").split("\n")
    assert out[0] == "L1: " + "x" * 499
    assert out[1] == "L2: next"
    (tmp_path / "ascii.txt").write_text("y" * 2000)
    assert read(ctx, "ascii.txt") == "L1: " + "y" * read_file.MAX_LINE_BYTES


def test_read_invalid_utf8_is_lossy(ctx, tmp_path):
    (tmp_path / "bad.txt").write_bytes(b"ok \xff\xfe end\n")
    assert read(ctx, "bad.txt") == "L1: ok \ufffd\ufffd end"


def test_read_errors(ctx, tmp_path):
    with pytest.raises(ToolError, match="file not found"):
        read(ctx, "missing.txt")
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match="is a directory.*list_dir"):
        read(ctx, "d")
    (tmp_path / "three.txt").write_text("a\nb\nc\n")
    with pytest.raises(ToolError, match="offset 5 .* has 3 lines"):
        read(ctx, "three.txt", offset=5)
    with pytest.raises(ToolError, match="offset 4 .* has 3 lines"):
        read(ctx, "three.txt", offset=4)
    (tmp_path / "noeol.txt").write_text("a\nb")
    with pytest.raises(ToolError, match="has 2 lines"):
        read(ctx, "noeol.txt", offset=3)
    with pytest.raises(ToolError, match="not a regular file"):
        read(ctx, "/dev/null")


def test_read_binary_file_refused_with_size(ctx, tmp_path):
    (tmp_path / "img.bin").write_bytes(b"\x89PNG\r\n\x00\x00" + bytes(1000))
    with pytest.raises(ToolError, match=r"binary file \(1008 bytes\)") as err:
        read(ctx, "img.bin")
    assert "\x00" not in str(err.value)


def test_read_empty_file(ctx, tmp_path):
    (tmp_path / "e.txt").write_text("")
    assert read(ctx, "e.txt") == "(the file is empty)"
    with pytest.raises(ToolError, match="empty"):
        read(ctx, "e.txt", offset=2)


def test_read_args_validation():
    with pytest.raises(ValidationError):
        read_file.Args(file_path="a", offset=0)
    with pytest.raises(ValidationError):
        read_file.Args(file_path="a", limit=0)


def test_read_large_file_window(ctx, tmp_path):
    big = tmp_path / "big.txt"
    with open(big, "w") as fh:
        for i in range(1, 1_000_001):
            fh.write(f"row {i:07d} " + "z" * 38 + "\n")  # 51 bytes a line: ~51 MB
    assert big.stat().st_size > 50_000_000
    out = read(ctx, "big.txt", offset=987_654, limit=3).split("\n")
    assert out == [f"L{i}: row {i:07d} " + "z" * 38 for i in (987_654, 987_655, 987_656)]
    assert read(ctx, "big.txt", offset=1_000_000) == "L1000000: row 1000000 " + "z" * 38
    with pytest.raises(ToolError, match="has 1000000 lines"):
        read(ctx, "big.txt", offset=1_000_001)


def test_read_huge_single_line_is_streamed(ctx, tmp_path):
    (tmp_path / "one.txt").write_bytes(b"q" * 5_000_000 + b"\nsecond\n")
    assert read(ctx, "one.txt") == "L1: " + "q" * 500 + "\nL2: second"


# --- write_file ---------------------------------------------------------------------------

def test_write_creates_with_parents(ctx, tmp_path):
    res = write(ctx, "a/b/c.txt", "héllo\n")
    assert (tmp_path / "a/b/c.txt").read_text() == "héllo\n"
    assert res.output == "Created a/b/c.txt (7 bytes)"
    assert res.item["changes"] == [{"path": str(tmp_path / "a/b/c.txt"), "kind": "add"}]
    assert res.item["diff"] == "--- /dev/null\n+++ b/a/b/c.txt\n@@ -0,0 +1 @@\n+héllo\n"
    mode = stat.S_IMODE((tmp_path / "a/b/c.txt").stat().st_mode)
    assert mode == 0o666 & ~write_file._umask()


def test_overwrite_keeps_mode_and_leaves_no_temp_files(ctx, tmp_path):
    target = tmp_path / "run.sh"
    target.write_text("old")
    target.chmod(0o751)
    res = write(ctx, str(target), "#!/bin/sh\necho new\n")
    assert target.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert res.output == "Overwrote run.sh (19 bytes)"
    assert res.item["changes"] == [{"path": str(tmp_path / "run.sh"), "kind": "update"}]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]


def test_writing_back_the_same_code_says_nothing_changed(ctx, tmp_path):
    """A small model writes back the stub it was shown and reads "Overwrote" as progress."""
    (tmp_path / "stub.py").write_text("def f():\n    pass\n")
    res = write(ctx, "stub.py", "def f():\n    pass")  # the same, less the final newline
    assert res.output == ("Overwrote stub.py (17 bytes)\nNote: no change: this is the content "
                          "stub.py already had (apart from whitespace at its end). The code "
                          "is the same as before; write the changed code.")
    res = write(ctx, "stub.py", "def f():\n    pass")
    assert "Note: no change: this is the content stub.py already had. The code" in res.output
    assert "Note" not in write(ctx, "stub.py", "def f():\n    return 1\n").output


def test_failed_write_leaves_old_content_and_no_temp_file(ctx, tmp_path, monkeypatch):
    target = tmp_path / "keep.txt"
    target.write_text("original")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write_file.os, "replace", broken_replace)
    with pytest.raises(ToolError, match="No space left"):
        write(ctx, "keep.txt", "new content")
    assert target.read_text() == "original"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_write_through_symlink_keeps_the_link(ctx, tmp_path):
    (tmp_path / "real.txt").write_text("a")
    (tmp_path / "link.txt").symlink_to("real.txt")
    write(ctx, "link.txt", "b")
    assert (tmp_path / "link.txt").is_symlink()
    assert (tmp_path / "real.txt").read_text() == "b"


def test_write_refuses_directory(ctx, tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        write(ctx, "d", "x")


def test_write_parent_is_a_file(ctx, tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ToolError, match="cannot write"):
        write(ctx, "f/child.txt", "x")


def test_read_only_sandbox_refuses(tmp_path):
    ctx = ToolContext(cwd=tmp_path, sandbox="read-only")
    with pytest.raises(ToolError, match="read-only"):
        write(ctx, "a.txt", "x")
    assert not (tmp_path / "a.txt").exists()


def test_workspace_write_sandbox(tmp_path):
    ws = tmp_path / "ws"
    outside = Path("/var/lib/baseagent-test-outside-{}".format(os.getpid()))
    ws.mkdir()
    ctx = ToolContext(cwd=ws, sandbox="workspace-write")
    write(ctx, "inside.txt", "ok")
    assert (ws / "inside.txt").read_text() == "ok"
    with pytest.raises(ToolError, match="workspace-write"):
        write(ctx, str(outside / "x.txt"), "no")
    with pytest.raises(ToolError, match="workspace-write"):
        write(ctx, "../../../../../../etc/baseagent-escape.txt", "no")
    assert not outside.exists()


def test_workspace_write_symlink_escape_refused(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    target_dir = Path("/var/tmp").resolve()
    temp_root = Path(os.path.realpath(tempfile.gettempdir()))
    if not os.access(target_dir, os.W_OK) or target_dir.is_relative_to(temp_root):
        pytest.skip("needs a writable directory outside the system temp dir")
    escape = target_dir / f"baseagent-escape-{os.getpid()}"
    escape.mkdir()
    try:
        (ws / "out").symlink_to(escape)
        ctx = ToolContext(cwd=ws, sandbox="workspace-write")
        with pytest.raises(ToolError, match="outside the workspace"):
            write(ctx, "out/evil.txt", "no")
        assert list(escape.iterdir()) == []
    finally:
        escape.rmdir()


def test_write_overwrite_diff_shows_the_change(ctx, tmp_path):
    (tmp_path / "f.txt").write_text("one\ntwo\n")
    res = write(ctx, "f.txt", "one\nthree\n")
    assert res.item["changes"] == [{"path": str(tmp_path / "f.txt"), "kind": "update"}]
    assert "-two\n+three\n" in res.item["diff"]


def test_write_announces_add_or_update_before_writing(ctx, tmp_path):
    args = write_file.Args(file_path="new.txt", content="x")
    new = str(tmp_path / "new.txt")  # absolute, as Codex's file_change paths are
    assert write_file.planned_changes(args, ctx) == [{"path": new, "kind": "add"}]
    write_file.run(args, ctx)
    assert write_file.planned_changes(args, ctx) == [{"path": new, "kind": "update"}]
    readonly = ToolContext(cwd=tmp_path, sandbox="read-only")
    assert write_file.planned_changes(args, readonly) == []  # refused: nothing planned


def test_write_leaves_out_line_numbers_copied_from_read_file(ctx, tmp_path):
    (tmp_path / "a.py").write_text("def f():\n    pass\n")
    shown = read_file.run(read_file.Args(file_path="a.py"), ctx).output
    copied = shown.replace("pass", "return 1")  # a model edits what it saw, numbers and all
    result = write_file.run(write_file.Args(file_path="a.py", content=copied), ctx)
    assert (tmp_path / "a.py").read_text() == "def f():\n    return 1"
    assert "line number" in result.output and "left out" in result.output
    # numbers that are the file's own text (not 1, 2, 3...) are kept
    own = "L10: ten\nL20: twenty\n"
    write_file.run(write_file.Args(file_path="b.txt", content=own), ctx)
    assert (tmp_path / "b.txt").read_text() == own
