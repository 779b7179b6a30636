"""apply_patch: data-driven conformance cases plus sandbox, atomicity and scale checks.

Each directory in tests/patch_cases/ is one case: `input/` (the starting tree), `patch.txt`,
then either `expected/` (the tree afterwards) or `error.txt` (a substring of the error; the
tree must then be unchanged), and optionally `output.txt` (the exact success text).
`.keep` files only exist so git keeps empty directories; they are not part of any tree.
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from baseagent.tools import apply_patch
from baseagent.tools.apply_patch import Args, run
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ToolError
from baseagent.tools.patch import Chunk, UpdateFile, parse_patch
from baseagent.tools.patch import apply as patch_apply
from baseagent.tools.patch.apply import update_text
from baseagent.tools.patch.matcher import LineIndex
from helpers import TESTS

CASES_DIR = TESTS / "patch_cases"
CASES = sorted(d.name for d in CASES_DIR.iterdir() if d.is_dir())
KEEP = ".keep"


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes), symlinks as their link text."""
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        if path.name == KEEP:
            continue
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            files[rel] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            files[rel] = path.read_bytes()
    return files


def load_tree(case: Path, ws: Path) -> None:
    shutil.copytree(case / "input", ws, symlinks=True, dirs_exist_ok=True)
    for keep in ws.rglob(KEEP):
        keep.unlink()


def patch_text(case: Path) -> str:
    # Bytes, not read_text(): universal newlines would hide the CRLF cases.
    return (case / "patch.txt").read_bytes().decode("utf-8")


def apply(text: str, cwd: Path, **ctx_kwargs) -> str:
    return run(Args(input=text), ToolContext(cwd=cwd, **ctx_kwargs)).output


def test_every_case_is_well_formed() -> None:
    assert len(CASES) >= 31
    for name in CASES:
        case = CASES_DIR / name
        assert (case / "input").is_dir() and (case / "patch.txt").is_file(), name
        assert (case / "expected").is_dir() != (case / "error.txt").is_file(), name


@pytest.mark.parametrize("name", CASES)
def test_conformance(name: str, tmp_path: Path) -> None:
    case = CASES_DIR / name
    load_tree(case, tmp_path)
    before = tree(tmp_path)
    error_file = case / "error.txt"
    if error_file.is_file():
        expected_error = error_file.read_bytes().decode("utf-8").rstrip("\n")
        with pytest.raises(ToolError) as excinfo:
            apply(patch_text(case), tmp_path)
        assert expected_error in str(excinfo.value)
        assert tree(tmp_path) == before, "a failed patch must leave the tree untouched"
        return
    output = apply(patch_text(case), tmp_path)
    assert tree(tmp_path) == tree(case / "expected")
    assert output.startswith("Success. Updated the following files:\n")
    if (case / "output.txt").is_file():
        assert output == (case / "output.txt").read_bytes().decode("utf-8")


# ---------------------------------------------------------------- tool contract


def test_tool_module_contract() -> None:
    assert apply_patch.NAME == "apply_patch"
    assert apply_patch.ITEM_TYPE == "file_change"
    assert "*** Begin Patch" in apply_patch.DESCRIPTION
    assert list(Args.model_json_schema()["properties"]) == ["input"]


def test_item_lists_changes_in_patch_order_with_move_as_update_plus_delete(
        tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("a\n")
    (tmp_path / "d.txt").write_text("d\n")
    (tmp_path / "src.txt").write_text("s\n")
    patch = ("*** Begin Patch\n*** Update File: m.txt\n@@\n-a\n+b\n*** Delete File: d.txt\n"
             "*** Add File: n.txt\n+n\n*** Update File: src.txt\n*** Move to: dst.txt\n@@\n-s\n"
             "+t\n*** End Patch")
    planned = apply_patch.planned_changes(Args(input=patch), ToolContext(cwd=tmp_path))
    result = run(Args(input=patch), ToolContext(cwd=tmp_path))
    assert result.success
    assert planned == result.item["changes"]  # what item.started announces is what happened
    assert apply_patch.planned_changes(Args(input="not a patch"), ToolContext(cwd=tmp_path)) == []
    assert result.item["changes"] == [  # absolute paths, as Codex's file_change items have
        {"path": str(tmp_path / "m.txt"), "kind": "update"},
        {"path": str(tmp_path / "d.txt"), "kind": "delete"},
        {"path": str(tmp_path / "n.txt"), "kind": "add"},
        {"path": str(tmp_path / "dst.txt"), "kind": "update"},
        {"path": str(tmp_path / "src.txt"), "kind": "delete"},
    ]
    diff = result.item["diff"]  # display-only, for the terminal renderer
    assert "--- a/m.txt\n+++ b/m.txt\n@@ -1 +1 @@\n-a\n+b\n" in diff
    assert "--- a/d.txt\n+++ /dev/null\n" in diff and "+++ b/n.txt\n" in diff
    assert result.output == ("Success. Updated the following files:\nA n.txt\nM m.txt\n"
                             "M dst.txt\nD d.txt\n")


def test_paths_are_displayed_as_written_even_when_absolute(tmp_path: Path) -> None:
    target = tmp_path / "abs.txt"
    output = apply(f"*** Begin Patch\n*** Add File: {target}\n+x\n*** End Patch", tmp_path)
    assert output.splitlines()[1] == f"A {target}"
    assert target.read_text() == "x\n"


# ---------------------------------------------------------------- sandbox


def test_read_only_sandbox_refuses_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    with pytest.raises(ToolError, match="read-only"):
        apply("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: new.txt\n+n\n"
              "*** End Patch", tmp_path, sandbox="read-only")
    assert tree(tmp_path) == {"a.txt": b"a\n"}


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A workspace and an outside dir, with the system temp dir (writable under
    workspace-write) moved elsewhere so "outside" really is outside."""
    ws, outside, systmp = tmp_path / "ws", tmp_path / "outside", tmp_path / "systmp"
    for d in (ws, outside, systmp):
        d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(systmp))
    return ws, outside


def test_workspace_write_refuses_path_outside_before_writing_anything(
        workspace: tuple[Path, Path]) -> None:
    ws, outside = workspace
    patch = (f"*** Begin Patch\n*** Add File: inside.txt\n+i\n*** Add File: {outside}/evil.txt\n"
             "+e\n*** End Patch")
    with pytest.raises(ToolError, match="workspace-write"):
        apply(patch, ws, sandbox="workspace-write")
    assert tree(ws) == {} and tree(outside) == {}


def test_workspace_write_refuses_relative_escape(workspace: tuple[Path, Path]) -> None:
    ws, outside = workspace
    with pytest.raises(ToolError, match="outside the workspace"):
        apply("*** Begin Patch\n*** Add File: ../outside/x.txt\n+x\n*** End Patch", ws,
              sandbox="workspace-write")
    assert tree(outside) == {}


def test_workspace_write_refuses_symlink_pointing_outside(workspace: tuple[Path, Path]) -> None:
    ws, outside = workspace
    (outside / "secret.txt").write_text("keep\n")
    (ws / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolError, match="workspace-write"):
        apply("*** Begin Patch\n*** Update File: link/secret.txt\n@@\n-keep\n+gone\n"
              "*** End Patch", ws, sandbox="workspace-write")
    assert (outside / "secret.txt").read_text() == "keep\n"


def test_workspace_write_allows_inside_and_move_destination_is_checked(
        workspace: tuple[Path, Path]) -> None:
    ws, outside = workspace
    (ws / "a.txt").write_text("a\n")
    with pytest.raises(ToolError, match="workspace-write"):
        apply(f"*** Begin Patch\n*** Update File: a.txt\n*** Move to: {outside}/a.txt\n@@\n-a\n"
              "+b\n*** End Patch", ws, sandbox="workspace-write")
    assert tree(ws) == {"a.txt": b"a\n"} and tree(outside) == {}
    apply("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch", ws,
          sandbox="workspace-write")
    assert (ws / "a.txt").read_text() == "b\n"


# ---------------------------------------------------------------- file system details


def test_update_preserves_file_mode(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o750)
    apply("*** Begin Patch\n*** Update File: run.sh\n@@\n-echo old\n+echo new\n*** End Patch",
          tmp_path)
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750


def test_move_keeps_the_source_mode(tmp_path: Path) -> None:
    (tmp_path / "tool").write_text("x\n")
    (tmp_path / "tool").chmod(0o755)
    apply("*** Begin Patch\n*** Update File: tool\n*** Move to: bin/tool\n@@\n-x\n+y\n"
          "*** End Patch", tmp_path)
    assert stat.S_IMODE((tmp_path / "bin" / "tool").stat().st_mode) == 0o755
    assert not (tmp_path / "tool").exists()


def test_update_through_symlink_edits_the_target_and_keeps_the_link(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("a\n")
    (tmp_path / "alias.txt").symlink_to("real.txt")
    apply("*** Begin Patch\n*** Update File: alias.txt\n@@\n-a\n+b\n*** End Patch", tmp_path)
    assert (tmp_path / "alias.txt").is_symlink()
    assert (tmp_path / "real.txt").read_text() == "b\n"


def test_write_failure_midway_rolls_back_everything(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The OS refusing the last write must undo the earlier writes, deletes and mkdirs."""
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "gone.txt").write_text("g\n")
    (tmp_path / "b.txt").write_text("b\n")
    (tmp_path / "a.txt").chmod(0o640)
    real_replace = os.replace

    def failing_replace(src, dst):  # type: ignore[no-untyped-def]
        if Path(dst).name == "b.txt":
            raise PermissionError(13, "Permission denied", str(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(patch_apply.os, "replace", failing_replace)
    with pytest.raises(ToolError, match="b.txt: Permission denied. No file was changed"):
        apply("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Delete File: gone.txt\n"
              "*** Add File: new/deep/n.txt\n+n\n*** Update File: b.txt\n@@\n-b\n+B\n"
              "*** End Patch", tmp_path)
    monkeypatch.undo()
    assert tree(tmp_path) == {"a.txt": b"a\n", "b.txt": b"b\n", "gone.txt": b"g\n"}
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o640
    assert not (tmp_path / "new").exists()


def test_no_temp_files_are_left_behind(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    apply("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_add_under_an_existing_file_fails_cleanly(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("file\n")
    with pytest.raises(ToolError, match="is a file"):
        apply("*** Begin Patch\n*** Add File: ok.txt\n+x\n*** Add File: f/inner.txt\n+y\n"
              "*** End Patch", tmp_path)
    assert tree(tmp_path) == {"f": b"file\n"}


def test_non_utf8_bytes_in_untouched_lines_survive(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\nold\n")
    apply("*** Begin Patch\n*** Update File: latin.txt\n@@\n-old\n+new\n*** End Patch", tmp_path)
    assert (tmp_path / "latin.txt").read_bytes() == b"caf\xe9\nnew\n"


def test_utf8_bom_is_kept(tmp_path: Path) -> None:
    (tmp_path / "bom.txt").write_bytes("\ufefffirst\nsecond\n".encode())
    apply("*** Begin Patch\n*** Update File: bom.txt\n@@\n-first\n+FIRST\n*** End Patch",
          tmp_path)
    assert (tmp_path / "bom.txt").read_bytes() == "\ufeffFIRST\nsecond\n".encode()


# ---------------------------------------------------------------- parser and matcher units


def test_parse_codex_model() -> None:
    hunks = parse_patch("*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@ def f():\n"
                        " ctx\n-old\n+new\n*** End of File\n*** End Patch")
    assert hunks == [UpdateFile("a.py", "b.py", [Chunk(["ctx", "old"], ["ctx", "new"],
                                                       ("def f():",), True, None, (0, None))])]


def test_unified_hunk_numbers_in_codex_patch_are_only_a_hint() -> None:
    [hunk] = parse_patch("*** Begin Patch\n*** Update File: a\n@@ -3,2 +3,2 @@\n-x\n+y\n"
                         "*** End Patch")
    assert isinstance(hunk, UpdateFile)
    assert hunk.chunks[0].contexts == () and hunk.chunks[0].hint == 2


def test_later_exact_match_beats_earlier_fuzzy_match() -> None:
    hunk = UpdateFile("f", None, [Chunk(["x"], ["y"])])
    assert update_text("x  \nx\n", hunk, "f") == "x  \ny\n"


def test_trailing_empty_old_line_is_retried_without_it() -> None:
    hunk = UpdateFile("f", None, [Chunk(["a", ""], ["b", ""], sources=(None, 1))])
    assert update_text("a\n", hunk, "f") == "b\n"


def test_search_continues_forward_from_previous_chunk() -> None:
    hunk = UpdateFile("f", None, [Chunk(["b"], ["B"]), Chunk(["a"], ["A"])])
    assert update_text("a\nb\na\n", hunk, "f") == "a\nB\nA\n"


@pytest.mark.parametrize(("hint", "expected"), [(0, 1), (3, 1), (7, 9), (9, 9), (50, 9)])
def test_hint_picks_the_nearest_occurrence(hint: int, expected: int) -> None:
    index = LineIndex(["x", "a", "b", "x", "x", "x", "x", "x", "x", "a", "b"])
    assert index.seek(["a", "b"], 0, hint=hint) == expected


def test_hint_never_goes_back_before_the_previous_match() -> None:
    index = LineIndex(["a", "x", "x", "x", "a"])
    assert index.seek(["a"], 1, hint=0) == 4


def test_failure_tells_the_model_nothing_was_applied(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    with pytest.raises(ToolError) as excinfo:
        apply("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n@@\n-zz\n+y\n"
              "*** End Patch", tmp_path)
    assert str(excinfo.value).endswith("no file was changed; fix the problem and send the "
                                       "whole patch again.")


def test_unified_diff_hunk_before_file_header_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="file header"):
        apply("@@ -1 +1 @@\n-a\n+b\n--- a/x\n+++ b/x\n", tmp_path)


# ---------------------------------------------------------------- scale


def test_ten_megabyte_file(tmp_path: Path) -> None:
    lines = [f"line {i:07d} " + "x" * 40 for i in range(200_000)]  # ~10.4 MB
    big = tmp_path / "big.txt"
    big.write_text("\n".join(lines) + "\n")
    patch = ("*** Begin Patch\n*** Update File: big.txt\n"
             f"@@\n {lines[10]}\n-{lines[11]}\n+first change\n"
             f"@@ {lines[150_000]}\n {lines[150_001]}\n-  {lines[150_002]}  \n+second change\n"
             f"@@\n {lines[-2]}\n-{lines[-1]}\n+last change\n*** End of File\n*** End Patch")
    apply(patch, tmp_path)
    expected = list(lines)
    expected[11], expected[150_002], expected[-1] = "first change", "second change", "last change"
    assert big.read_text() == "\n".join(expected) + "\n"
