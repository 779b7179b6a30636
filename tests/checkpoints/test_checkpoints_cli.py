"""`baseagent diff` and `baseagent undo` after a headless run (agent.py against the scripted
server, then the commands as a person types them); the headless JSONL is the same with
checkpoints as without. /diff and /undo on a terminal: cli/test_interactive_checkpoints.py."""
from __future__ import annotations

import json
import re
import subprocess
import sys

from helpers import AGENT, agent_env, run_agent
from test_checkpoints import GIT, every_kind_of_change, git_state, tree


def baseagent(args: list[str], cwd, home) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(AGENT), *args], cwd=cwd, env=agent_env(home),
                          capture_output=True, text=True, timeout=60)


def make_repo(ws) -> None:
    (ws / "kept.txt").write_text("committed\n")
    (ws / "doomed.txt").write_text("delete me\n")
    (ws / "patched.py").write_text("def f():\n    return 1\n")
    (ws / "shell.txt").write_text("one two\n")
    (ws / "image.bin").write_bytes(bytes(range(256)))
    (ws / "run.sh").write_text("#!/bin/sh\n")
    (ws / "link").symlink_to("kept.txt")
    (ws / "tracked.txt").write_text("committed\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run([*GIT, *args], cwd=ws, check=True, capture_output=True)
    (ws / "kept.txt").write_text("committed\nuncommitted work\n")


def test_headless_run_then_baseagent_diff_and_undo(scripted_server, workspace, home):
    make_repo(workspace)
    start, person = tree(workspace), git_state(workspace)
    server = scripted_server(every_kind_of_change())
    run = run_agent(["-i", "change everything", "--no-verify"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    thread_id = run.events[0]["thread_id"]

    shown = baseagent(["diff"], workspace, home)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"thread {thread_id}: turn 1 “change everything” changed "
                                   "10 files\n")
    assert "  D doomed.txt (+0 -1)\n" in shown.stdout
    assert "  M image.bin (binary)\n" in shown.stdout
    assert "diff --git a/patched.py b/patched.py" in shown.stdout
    # what `git apply` takes: the diff applies in reverse onto the changed tree
    stat = baseagent(["diff", "--stat", thread_id[:13]], workspace, home)
    assert "diff --git" not in stat.stdout and "  A newlink (+1 -0)" in stat.stdout

    (workspace / "tracked.txt").write_text("the person, after the turn\n")
    refused = baseagent(["undo"], workspace, home)
    assert refused.returncode == 1
    assert "cannot undo turn 1 “change everything”: files it changed have changed since it " \
           "ended, outside the agent: tracked.txt. Undo would lose those changes, so nothing " \
           "was changed" in refused.stderr
    assert refused.stdout == ""
    (workspace / "tracked.txt").write_text("rewritten by the agent\n")

    undone = baseagent(["undo"], workspace, home)
    assert undone.returncode == 0, undone.stderr
    assert undone.stdout.startswith(f"thread {thread_id}: undid turn 1 “change everything”")
    assert "  recreated doomed.txt\n" in undone.stdout
    assert tree(workspace) == start and git_state(workspace) == person

    again = baseagent(["undo", thread_id], workspace, home)
    assert again.returncode == 1 and "nothing to undo" in again.stderr
    elsewhere = baseagent(["diff"], home, home)
    assert elsewhere.returncode == 2 and "no thread has checkpoints in" in elsewhere.stderr


def test_the_headless_jsonl_is_the_same_without_checkpoints(scripted_server, tmp_path, home):
    lines = {}
    for setting in ("1", "0"):
        ws = tmp_path / f"ws{setting}"
        ws.mkdir()
        make_repo(ws)
        server = scripted_server(every_kind_of_change())
        run = run_agent(["--json", "-i", "change everything", "--no-verify"], cwd=ws,
                        home=home, api_base=server.api_base,
                        env_extra={"BASEAGENT_CHECKPOINTS": setting})
        assert run.returncode == 0, run.stderr
        events = [json.loads(line) for line in run.stdout.splitlines()]
        lines[setting] = [re.sub(r"[0-9a-f-]{36}", "ID", json.dumps(e)).replace(str(ws), "WS")
                          for e in events]
        checkpointed = (home / ".baseagent" / "sessions" / "checkpoints"
                        / events[0]["thread_id"]).exists()
        assert checkpointed == (setting == "1")
    assert lines["1"] == lines["0"]


def test_sessions_rm_takes_the_threads_checkpoints_and_their_ref_with_it(scripted_server,
                                                                         workspace, home):
    """A removed thread leaves nothing behind: its checkpoint directory goes, and in a
    repository the ref that kept its snapshots reachable (git's own gc drops the rest)."""
    make_repo(workspace)
    server = scripted_server(every_kind_of_change())
    run = run_agent(["-i", "change everything", "--no-verify"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    thread_id = run.events[0]["thread_id"]
    ref = f"refs/baseagent/checkpoints/{thread_id}"
    refs = subprocess.run([*GIT, "for-each-ref", "--format=%(refname)", "refs/baseagent"],
                          cwd=workspace, capture_output=True, text=True).stdout.split()
    assert refs == [ref]
    person = git_state(workspace)

    removed = baseagent(["sessions", "rm", thread_id], workspace, home)
    assert removed.returncode == 0, removed.stderr
    assert " and its checkpoints in " in removed.stdout and f" and {ref} in " in removed.stdout
    refs = subprocess.run([*GIT, "for-each-ref", "refs/baseagent"], cwd=workspace,
                          capture_output=True, text=True).stdout
    assert refs == ""
    assert git_state(workspace) == person  # the person's branches, index and status as they were
    gone = baseagent(["diff", thread_id], workspace, home)
    assert gone.returncode == 2 and "no checkpoints of a thread" in gone.stderr
