"""Checkpoints end to end: the library Agent in-process against the scripted model server,
in a git repository and in a plain directory. Undo is held to every kind of change the
agent makes (write_file, apply_patch, shell edits, new and deleted files, binary files, a
symlink, a mode change) and to a person's uncommitted work, which survives; it refuses,
changing nothing, when a file the turn changed has changed since."""
from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from baseagent import Agent
from baseagent.checkpoints import CheckpointError, Checkpoints, UndoRefused

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
PATCH = """*** Begin Patch
*** Update File: patched.py
@@
 def f():
-    return 1
+    return 2
*** Add File: added/new.py
+print("new")
*** Delete File: doomed.txt
*** End Patch"""
SHELL_EDITS = ("printf '\\000\\001\\002\\377' > image.bin && sed -i s/one/ONE/ shell.txt && "
               "rm link && ln -s patched.py newlink && chmod +x run.sh && mkdir -p made/deep && "
               "echo x > made/deep/x.txt")


def git(ws: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=ws, capture_output=True, text=True,
                          check=True).stdout


def tree(root: Path) -> dict[str, Any]:
    """Every file under `root` (but .git) as (kind, content or target, mode)."""
    found: dict[str, Any] = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir != "." and not dirs and not files:
            found[rel_dir + "/"] = "empty dir"
        for name in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(path))
            else:
                found[rel] = ("file", Path(path).read_bytes(), stat.S_IMODE(st.st_mode))
    return found


def git_state(ws: Path) -> dict[str, Any]:
    """What belongs to the person in a repository: index, HEAD, branches, stash, status."""
    return {"index": (ws / ".git" / "index").read_bytes(),
            "head": git(ws, "rev-parse", "HEAD"), "branch": git(ws, "branch", "--show-current"),
            "heads": git(ws, "for-each-ref", "refs/heads", "refs/stash"),
            "status": git(ws, "status", "--porcelain=v1", "-uall"),
            "staged": git(ws, "diff", "--cached")}


@pytest.fixture(params=["git", "plain"])
def project(request, tmp_path) -> Path:
    """A workspace with committed files and, in git, a person's uncommitted work: a
    modified tracked file, a staged new file, an untracked note, an ignored file."""
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "tracked.txt").write_text("committed\n")
    (ws / "patched.py").write_text("def f():\n    return 1\n")
    (ws / "doomed.txt").write_text("delete me\n")
    (ws / "shell.txt").write_text("one two\n")
    (ws / "image.bin").write_bytes(bytes(range(256)))
    (ws / "run.sh").write_text("#!/bin/sh\necho run\n")
    (ws / "link").symlink_to("tracked.txt")
    (ws / ".gitignore").write_text("*.log\n")
    if request.param == "git":
        git(ws, "init", "-q", "-b", "main")
        git(ws, "add", "-A")
        git(ws, "commit", "-qm", "start")
        (ws / "tracked.txt").write_text("committed\nthe person's uncommitted line\n")
        (ws / "staged.txt").write_text("staged by the person\n")
        git(ws, "add", "staged.txt")
    (ws / "notes.txt").write_text("the person's untracked notes\n")
    (ws / "build.log").write_text("ignored output\n")
    return ws


def agent_in(ws: Path, server, tmp_path: Path, **kw: Any) -> Agent:
    kw.setdefault("session_dir", tmp_path / "sessions")
    return Agent(model="openai/scripted", api_base=server.api_base, api_key="sk-test-dummy",
                 cwd=ws, verify=False, env={"PATH": os.environ["PATH"]}, **kw)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def every_kind_of_change() -> list[dict[str, Any]]:
    return [call("write_file", file_path="tracked.txt", content="rewritten by the agent\n"),
            call("apply_patch", input=PATCH),
            call("shell", command=SHELL_EDITS),
            {"content": "done"}]


def test_undo_puts_back_every_kind_of_change_and_keeps_the_persons_work(
        project, scripted_server, tmp_path):
    server = scripted_server(every_kind_of_change())
    start = tree(project)
    in_git = (project / ".git").exists()
    person = git_state(project) if in_git else None
    agent = agent_in(project, server, tmp_path)
    result = agent.run("change everything")
    assert result.status == "completed", result.error
    changed = tree(project)
    assert changed["tracked.txt"][1] == b"rewritten by the agent\n"
    assert "doomed.txt" not in changed and changed["newlink"] == ("link", "patched.py")
    assert changed["run.sh"][2] & 0o100

    diff = agent.diff()
    kinds = {f.path: f.kind for f in diff.files}
    assert kinds == {"tracked.txt": "update", "patched.py": "update", "added/new.py": "add",
                     "doomed.txt": "delete", "image.bin": "update", "shell.txt": "update",
                     "link": "delete", "newlink": "add", "run.sh": "update",
                     "made/deep/x.txt": "add"}
    assert [f.binary for f in diff.files if f.path == "image.bin"] == [True]
    assert "+    return 2" in diff.text and "-one two" in diff.text
    assert diff.title.startswith("turn 1 “change everything” changed 10 files")

    undone = agent.undo()
    assert tree(project) == start  # the person's uncommitted, staged and ignored files too
    assert {c.path for c in undone.changes} == set(kinds)
    assert "recreated doomed.txt" in " ".join(str(undone).split())
    if in_git:
        assert git_state(project) == person  # index, HEAD, branch, stash untouched
        refs = git(project, "for-each-ref", "--format=%(refname)", "refs/baseagent")
        assert refs.strip() == f"refs/baseagent/checkpoints/{agent.thread_id}"
    with pytest.raises(CheckpointError, match="undone already"):
        agent.undo()
    agent.close()


def test_undo_refuses_when_the_turns_files_changed_since_and_leaves_other_changes_alone(
        project, scripted_server, tmp_path):
    server = scripted_server([
        call("write_file", file_path="tracked.txt", content="agent\n"),
        call("write_file", file_path="fresh.txt", content="agent's new file\n"),
        {"content": "done"}])
    agent = agent_in(project, server, tmp_path)
    before = tree(project)
    assert agent.run("edit").ok
    (project / "fresh.txt").write_text("the person edited the agent's file\n")
    after_person = tree(project)
    with pytest.raises(UndoRefused) as refused:
        agent.undo()
    assert refused.value.paths == ["fresh.txt"]
    assert "changed since it ended, outside the agent: fresh.txt" in str(refused.value)
    assert tree(project) == after_person  # nothing changed

    # Put back as the turn left it, with an unrelated edit of the person's: undo goes ahead
    # and leaves that edit alone.
    (project / "fresh.txt").write_text("agent's new file\n")
    (project / "notes.txt").write_text("notes edited after the turn\n")
    done = agent.undo()
    expected = dict(before)
    expected["notes.txt"] = tree(project)["notes.txt"]
    assert tree(project) == expected
    assert "left as they are: notes.txt" in str(done)
    agent.close()


def test_turns_undo_one_after_another_and_the_session_diff_spans_them(
        project, scripted_server, tmp_path):
    server = scripted_server([
        call("write_file", file_path="a.txt", content="first\n"), {"content": "one"},
        call("shell", command="echo second > b.txt"), {"content": "two"},
        call("read_file", file_path="a.txt"), {"content": "three: read only"},
    ])
    agent = agent_in(project, server, tmp_path)
    start = tree(project)
    agent.run("turn one")
    middle = tree(project)
    agent.run("turn two")
    agent.run("turn three")  # reads only: no checkpoint, nothing to undo for it
    assert [f.path for f in agent.diff().files] == ["b.txt"]
    assert agent.diff().title.startswith("turn 2 “turn two”")
    session = agent.diff(session=True)
    assert [f.path for f in session.files] == ["a.txt", "b.txt"]
    assert session.turns == [1, 2]
    assert agent.undo().turn == 2 and tree(project) == middle
    assert agent.undo().turn == 1 and tree(project) == start
    agent.close()


def test_a_resumed_thread_and_a_new_agent_undo_what_an_earlier_process_did(
        project, scripted_server, tmp_path):
    server = scripted_server([call("write_file", file_path="a.txt", content="x\n"),
                              {"content": "done"}])
    start = tree(project)
    first = agent_in(project, server, tmp_path)
    first.run("write a")
    first.close()
    resumed = agent_in(project, server, tmp_path, thread_id=first.thread_id)
    assert "a.txt" in str(resumed.diff())
    resumed.undo()
    assert tree(project) == start
    resumed.close()


def test_no_checkpoint_in_read_only_or_when_off_and_one_in_memory_without_a_record(
        project, scripted_server, tmp_path):
    steps = [call("shell", command="echo x > x.txt || true"), {"content": "done"}]
    for options in ({"sandbox": "read-only"}, {"checkpoints": False}):
        agent = agent_in(project, scripted_server(steps), tmp_path, **options)
        agent.run("try")
        with pytest.raises(CheckpointError, match="nothing to undo"):
            agent.undo()
        agent.close()
        (project / "x.txt").unlink(missing_ok=True)
    agent = agent_in(project, scripted_server(steps), tmp_path, session=False)
    start = tree(project)
    agent.run("write x")
    assert tree(project) != start
    agent.undo()
    assert tree(project) == start
    agent.close()
    assert not (tmp_path / "sessions" / "checkpoints" / agent.thread_id).exists()


def test_a_workspace_too_big_gets_no_checkpoint_and_says_so(tmp_path):
    ws = tmp_path / "big"
    ws.mkdir()
    for n in range(5):
        (ws / f"f{n}.txt").write_text("x")
    cp = Checkpoints(thread_id="t", workspace=ws, directory=tmp_path / "cp", env=os.environ,
                     max_files=3)
    cp.begin("write")
    cp.before_change()
    (ws / "f0.txt").write_text("changed")
    cp.end()
    assert "no checkpoint for this turn: the workspace has more than 3 files" in cp.note
    with pytest.raises(CheckpointError, match="turn 1 has no checkpoint: the workspace has more"):
        cp.undo()
    assert (ws / "f0.txt").read_text() == "changed"


def test_a_turn_paused_for_the_callers_tool_is_one_checkpoint(project, scripted_server,
                                                              tmp_path):
    server = scripted_server([
        call("write_file", file_path="a.txt", content="before the pause\n"),
        {"tool_calls": [{"name": "lookup", "arguments": {"q": "x"}, "id": "call_ext"}]},
        call("shell", command="echo after > b.txt"),
        {"content": "done"}])
    agent = agent_in(project, server, tmp_path, external_tools=[{
        "name": "lookup", "description": "look it up",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}])
    start = tree(project)
    paused = agent.run("across a pause")
    assert paused.status == "requires_action"
    with pytest.raises(UndoRefused, match="paused for tool outputs"):
        agent.undo()
    assert agent.submit_tool_outputs({"call_ext": "found"}).ok
    assert {f.path for f in agent.diff().files} == {"a.txt", "b.txt"}
    assert agent.undo().turn == 1
    assert tree(project) == start
    agent.close()
