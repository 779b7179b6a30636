"""The pieces of checkpoints on their own: the changes between manifests, which paths a
manifest may hold, the diff text, restore's refusal to write through a symlink, and git
run against a repository whose configuration names programs (none of them runs)."""
from __future__ import annotations

import os
import subprocess

import pytest

from baseagent.checkpoints import Checkpoints, UndoRefused
from baseagent.checkpoints.manifest import Change, Entry, changes, safe_path
from baseagent.checkpoints.render import file_diff
from baseagent.checkpoints.restore import apply

A, B, X = Entry("file", "a"), Entry("file", "b"), Entry("exec", "a")


@pytest.mark.parametrize("before, after, expected", [
    ({}, {}, []),
    ({"p": A}, {"p": A}, []),
    ({"p": A}, {"p": B}, [("p", "update")]),
    ({"p": A}, {"p": X}, [("p", "update")]),  # the execute bit alone
    ({"p": A}, {}, [("p", "delete")]),
    ({}, {"q": A, "p": B}, [("p", "add"), ("q", "add")]),  # sorted by path
])
def test_changes(before, after, expected):
    assert [(c.path, c.kind) for c in changes(before, after)] == expected


@pytest.mark.parametrize("path, ok", [
    ("a.txt", True), ("dir/a.txt", True), (".gitignore", True), (".github/x.yml", True),
    ("", False), ("/etc/passwd", False), ("../up", False), ("a/../../b", False),
    ("a//b", False), ("./a", False), (".git/config", False), ("sub/.git/hooks/x", False),
    ("nul\0byte", False),
])
def test_safe_path(path, ok):
    assert safe_path(path) is ok


@pytest.mark.parametrize("old, new, expect, counts", [
    (b"a\nb\n", b"a\nc\n", ["-b", "+c"], (1, 1)),
    (b"a", b"a\nb", ["-a", "\\ No newline at end of file", "+a", "+b"], (2, 1)),
    (b"\0\1", b"\0\2", ["Binary files a/f and b/f differ"], None),
    (b"\xff\xfe", b"text\n", ["Binary files a/f and b/f differ"], None),
])
def test_file_diff(old, new, expect, counts):
    diff = file_diff(Change("f", "update", Entry("file", "o"), Entry("file", "n")),
                     {"o": old, "n": new})
    for line in expect:
        assert line in diff.text.splitlines()
    assert diff.binary is (counts is None)
    if counts:
        assert (diff.added, diff.removed) == counts


def test_restore_never_writes_through_a_symlinked_directory(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "dir").symlink_to(outside)  # left by the turn, not part of the plan
    problems = apply(root, [Change("dir/f.txt", "add", None, Entry("file", "x"))],
                     lambda _path, _entry: b"data")
    assert problems == ["dir/f.txt: could not write it (dir is not a directory)"]
    assert list(outside.iterdir()) == []


def test_git_runs_none_of_the_programs_a_repository_names(tmp_path):
    ws, marker = tmp_path / "repo", tmp_path / "ran"
    ws.mkdir()
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {marker}\ncat\n")
    script.chmod(0o755)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=ws, check=True)
    (ws / "hooks").mkdir()
    for hook in ("reference-transaction", "post-index-change", "pre-commit", "post-commit"):
        (ws / "hooks" / hook).write_text(script.read_text())
        (ws / "hooks" / hook).chmod(0o755)
    for key, value in (("core.fsmonitor", str(script)), ("core.hooksPath", "hooks"),
                       ("filter.evil.clean", str(script)), ("filter.evil.smudge", str(script)),
                       ("filter.evil.required", "true"), ("commit.gpgSign", "true"),
                       ("gpg.program", str(script)), ("core.pager", str(script)),
                       ("diff.external", str(script))):
        subprocess.run(["git", "config", key, value], cwd=ws, check=True)
    (ws / ".gitattributes").write_text("* filter=evil\n")
    (ws / "a.txt").write_text("one\n")
    cp = Checkpoints(thread_id="t", workspace=ws, directory=tmp_path / "cp",
                     env={"PATH": os.environ["PATH"]})
    cp.begin("edit")
    cp.before_change()
    (ws / "a.txt").write_text("two\n")
    cp.end()
    assert cp.note is None
    assert [f.path for f in cp.diff().files] == ["a.txt"]
    cp.undo()
    assert (ws / "a.txt").read_text() == "one\n"
    assert not marker.exists(), marker.read_text()


def test_no_checkpoint_through_a_symlinked_objects_directory(tmp_path):
    ws, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    objects = ws / ".git" / "objects"
    os.rename(objects, elsewhere / "objects")
    objects.symlink_to(elsewhere / "objects")
    before = sorted(p for p in (elsewhere / "objects").rglob("*"))
    cp = Checkpoints(thread_id="t", workspace=ws, directory=tmp_path / "cp",
                     env={"PATH": os.environ["PATH"]})
    cp.begin("edit")
    cp.before_change()
    cp.end()
    assert "is a symbolic link: no checkpoint is written through it" in (cp.note or "")
    assert sorted(p for p in (elsewhere / "objects").rglob("*")) == before


def test_a_turn_whose_process_died_mid_turn_is_shown_but_never_undone(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("before\n")
    env = {"PATH": os.environ["PATH"]}
    cp = Checkpoints(thread_id="t", workspace=ws, directory=tmp_path / "cp", env=env)
    cp.begin("killed")
    cp.before_change()
    (ws / "a.txt").write_text("half way\n")  # then the process is killed: no end()
    later = Checkpoints.existing(tmp_path / "cp", "t", env)
    diff = later.diff()
    assert "+half way" in diff.text and "-before" in diff.text
    assert diff.notes == ["turn 1 has not finished: shown up to now"]
    with pytest.raises(UndoRefused, match="turn 1 has no recorded end"):
        later.undo()
    assert (ws / "a.txt").read_text() == "half way\n"


def test_undo_refuses_a_workspace_swapped_for_a_symlink(tmp_path):
    parent, outside = tmp_path / "parent", tmp_path / "outside"
    ws = parent / "ws"
    ws.mkdir(parents=True)
    (outside / "ws").mkdir(parents=True)
    cp = Checkpoints(thread_id="t", workspace=ws, directory=tmp_path / "cp",
                     env={"PATH": os.environ["PATH"]})
    cp.begin("swap")
    cp.before_change()
    (ws / "made.txt").write_text("x\n")
    parent.rename(tmp_path / "moved")  # what a command could do, then a symlink in its place
    parent.symlink_to(outside)
    (outside / "ws" / "theirs.txt").write_text("not the workspace's\n")
    cp.end()
    with pytest.raises(UndoRefused, match="is now reached through a symbolic link"):
        cp.undo()
    assert [p.name for p in (outside / "ws").iterdir()] == ["theirs.txt"]


def test_in_memory_copies_go_when_the_checkpoints_are_closed_or_dropped(tmp_path):
    """Without a session record the copies live in a temporary directory; an agent its caller
    never closes must not leave it behind (over a day of runs they had piled up by the
    thousand)."""
    import gc

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    env = {"PATH": os.environ["PATH"], "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    temps = []
    for close in (True, False):
        cp = Checkpoints(thread_id="t", workspace=ws, directory=None, env=env)
        cp.begin("edit")
        cp.before_change()
        temps.append(cp._temp)
        assert temps[-1] is not None and temps[-1].is_dir()
        if close:
            cp.close()
        del cp
        gc.collect()
        assert not temps[-1].exists()


def test_discarding_a_threads_checkpoints_touches_only_its_own_ref_and_runs_nothing(tmp_path):
    """`sessions rm` reads the thread's checkpoint log, a file in the session directory that
    a command run with full access could have rewritten: whatever it says, only the ref
    `refs/baseagent/checkpoints/<thread>` of the repository it names goes, no program the
    repository names runs, and a log that is garbage still lets the directory go."""
    import json

    from baseagent.checkpoints import discard

    repo, marker = tmp_path / "repo", tmp_path / "ran"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "a"], cwd=repo, check=True)
    for ref in ("refs/baseagent/checkpoints/t", "refs/baseagent/checkpoints/other",
                "refs/heads/keep"):
        subprocess.run(["git", "update-ref", ref, "HEAD"], cwd=repo, check=True)
    hook = repo / ".git" / "hooks" / "reference-transaction"
    hook.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    hook.chmod(0o755)
    env = {"PATH": os.environ["PATH"]}

    def thread_dir(name: str, log: str) -> Path:
        directory = tmp_path / "cp" / name
        directory.mkdir(parents=True)
        (directory / "log.json").write_text(log)
        return directory

    said = discard(thread_dir("t", json.dumps({"store": "git", "root": str(repo)})), env)
    assert said is not None and "refs/baseagent/checkpoints/t" in said
    refs = subprocess.run(["git", "for-each-ref", "--format=%(refname)"], cwd=repo,
                          capture_output=True, text=True, check=True).stdout.split()
    assert refs == ["refs/baseagent/checkpoints/other", "refs/heads/keep", "refs/heads/main"]
    assert not marker.exists()
    assert not (tmp_path / "cp" / "t").exists()
    hostile = ["not json", json.dumps([1, 2]), json.dumps({"store": "git", "root": 12}),
               json.dumps({"store": "git", "root": str(tmp_path / "nowhere")}),
               json.dumps({"store": "git", "root": str(repo / "a.txt")}),
               json.dumps({"store": "git", "root": "nul\0byte"}),
               json.dumps({"store": "git", "root": "\x1b]0;title\x07" + "x" * 100_000})]
    for number, log in enumerate(hostile):
        directory = thread_dir(f"h{number}", log)
        assert discard(directory, env) == f"its checkpoints in {directory}"
        assert not directory.exists()
    assert discard(tmp_path / "cp" / "absent", env) is None
    assert subprocess.run(["git", "for-each-ref", "--format=%(refname)"], cwd=repo,
                          capture_output=True, text=True).stdout.split() == refs
