"""Approvals end to end: a one-shot run on a terminal asks the person (allow once, allow a
prefix for the session, decline with a note), a headless run asks nobody, and `exec` keeps
Codex exec's read-only default. Real CLI, scripted model server, a pseudo-terminal."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from baseagent.sandbox import landlock
from helpers import run_agent
from test_interactive import screen, spawn, wait

pytestmark = pytest.mark.skipif(landlock.abi() < 1 and not os.environ.get("CI"),
                                reason="no Landlock on this kernel: nothing to escalate from")


@pytest.fixture
def outside():
    path = Path(tempfile.mkdtemp(prefix="baseagent-outside-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def shell_call(command: str, **extra) -> dict:
    return {"name": "shell", "arguments": {"command": command, **extra}}


def one_shot(server, task: str, *flags: str) -> list[str]:
    return ["-i", task, "--model", "openai/scripted", "--api-base", server.api_base, *flags]


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_on_a_terminal_an_escalation_waits_for_the_person(scripted_server, workspace, home,
                                                          outside):
    target = outside / "report.txt"
    server = scripted_server([
        {"tool_calls": [shell_call(f"echo done > {target}", with_escalated_permissions=True,
                                   justification="the report goes to the shared folder")]},
        {"tool_calls": [shell_call(f"echo again > {target}.2",
                                   with_escalated_permissions=True)]},
        {"content": "Wrote the report."}])  # no file tool, no test: no verification round
    child = spawn(one_shot(server, "write the report"), workspace, home)
    wait(child, "approval needed")
    text = wait(child, "answer [y/n]")  # no prefix offered: no [p]
    assert f"$ echo done > {target}" in text and "the report goes to the shared folder" in text
    assert "[p] allow `echo` for this session" not in text  # a redirection: no prefix
    child.send("p\r")  # not a choice here: said so, and asked again
    wait(child, "'p' is not an answer: type y (run it once), n (decline) or n NOTE")
    wait(child, "answer [y/n]")
    child.send("y\r")
    wait(child, "✓ approved once")
    wait(child, "answer [y/n]")
    child.send("n the second copy is not needed\r")
    wait(child, "✗ declined: the second copy is not needed")
    wait(child, "Wrote the report.")
    child.expect(pytest.importorskip("pexpect").EOF)
    child.close()
    assert child.exitstatus == 0, screen(child)
    # the declined command never ran: `declined`, not an exit code
    assert "exit none" not in screen(child), screen(child)
    assert target.read_text() == "done\n" and not Path(f"{target}.2").exists()
    # the terminal's defaults: workspace-write, and the model may ask to leave it
    shell_spec = next(t for t in server.requests[0]["tools"]
                      if t["function"]["name"] == "shell")
    assert "with_escalated_permissions" in shell_spec["function"]["parameters"]["properties"]
    told = tool_results(server.requests[2])[-1]
    assert "the user declined to run this command. Their note: the second copy is not " \
           "needed" in told


def test_allow_a_prefix_for_the_session(scripted_server, workspace, home):
    server = scripted_server([
        {"tool_calls": [shell_call("mkdir -p one")]},
        {"tool_calls": [shell_call("mkdir -p two")]},
        {"tool_calls": [shell_call("rmdir one")]},
        {"content": "Made two."}])  # no edit, no test named: no verification round
    child = spawn(one_shot(server, "make dirs", "-a", "untrusted"), workspace, home)
    text = wait(child, "answer [y/p/n]")
    assert "[p] allow `mkdir` for this session" in text
    child.send("p\r")
    wait(child, "✓ approved `mkdir` for this session")
    text = wait(child, "answer [y/p/n]")  # the next question is rmdir's: mkdir was allowed
    assert text.count("approval needed") == 2 and "[p] allow `rmdir` for this session" in text
    child.send("n\r")
    wait(child, "Made two.")
    child.expect(pytest.importorskip("pexpect").EOF)
    child.close()
    assert (workspace / "one").is_dir() and (workspace / "two").is_dir()


def test_headless_asks_nobody(scripted_server, workspace, home, outside):
    server = scripted_server([
        {"tool_calls": [shell_call("touch made.txt")]}, {"content": "Tried."},
        {"content": "Checked."}])
    run = run_agent(["-i", "make a file", "-a", "untrusted"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert not (workspace / "made.txt").exists()
    asked = [e["item"] for e in run.events
             if e["type"].startswith("item.") and e["item"]["type"] == "approval_request"]
    assert [(a["status"], a["decision"]) for a in asked] == [("in_progress", None),
                                                              ("completed", "denied")]
    assert asked[-1]["command"] == "touch made.txt" and asked[-1]["kind"] == "unsafe"
    command = run.completed_items("command_execution")[0]
    assert command["status"] == "declined" and command["exit_code"] is None
    record = next((home / ".baseagent" / "sessions").glob("*.jsonl")).read_text()
    recorded = [json.loads(line).get("event", {}) for line in record.splitlines()]
    assert [e["item"]["decision"] for e in recorded if e.get("type") == "item.completed"
            and e["item"]["type"] == "approval_request"] == ["denied"]  # in the record too
    # without -a, a headless run keeps full access and asks nothing (harnesses, pipes)
    server = scripted_server([
        {"tool_calls": [shell_call(f"echo out > {outside}/free.txt")]}, {"content": "Done."},
        {"content": "Checked."}])
    run = run_agent(["-i", "write outside"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0 and (outside / "free.txt").exists()
    shell_spec = next(t for t in server.requests[0]["tools"]
                      if t["function"]["name"] == "shell")
    assert "with_escalated_permissions" not in json.dumps(shell_spec)


def test_exec_is_read_only_unless_told(scripted_server, workspace, home):
    def steps():
        return [{"tool_calls": [shell_call("echo hi > made.txt")]}, {"content": "Tried."},
                {"content": "Checked."}]
    def exec_args(server, *flags: str) -> list[str]:
        return ["exec", "--json", "--model", "openai/scripted", "-c",
                f'openai_base_url="{server.api_base}"', *flags, "make a file"]
    server = scripted_server(steps())
    run = run_agent(exec_args(server), cwd=workspace, home=home)
    assert run.returncode == 0, run.stderr
    assert not (workspace / "made.txt").exists()
    assert "Read-only file system" in run.completed_items("command_execution")[0][
        "aggregated_output"]
    server = scripted_server(steps())
    run = run_agent(exec_args(server, "--full-auto"), cwd=workspace, home=home)
    assert run.returncode == 0 and (workspace / "made.txt").read_text() == "hi\n"


def test_an_approval_question_shows_escapes(scripted_server, workspace, home):
    """A command that would redraw the question's line to read `$ git status` (erase the
    line, back to column 1) shows its escapes spelled out on the screen a person reads."""
    pyte = pytest.importorskip("pyte")
    spoof = "touch pwned # \x1b[2K\x1b[1G  $ git status"
    server = scripted_server([
        {"tool_calls": [shell_call(spoof)]}, {"content": "Stopped."},
        {"content": "Checked."}])
    child = spawn(one_shot(server, "check the status", "-a", "untrusted"), workspace, home)
    wait(child, "answer [y/p/n]")
    term = pyte.Screen(120, 40)
    pyte.Stream(term).feed("".join(child.logfile_read.parts))
    rows = [row.rstrip() for row in term.display]
    assert "  $ touch pwned # \\x1b[2K\\x1b[1G  $ git status" in rows, "\n".join(rows)
    assert "  $ git status" not in rows
    child.send("n\r")
    wait(child, "✗ declined")
    child.expect(pytest.importorskip("pexpect").EOF)
    child.close()
    assert not (workspace / "pwned").exists()


def test_untrusted_a_file_tool_asks_before_writing_outside_the_workspace(
        scripted_server, workspace, home, outside):
    """Issue 39, item 5: under untrusted a write outside the workspace (or into .git) waits
    for the person as a command does; yes writes it, no (with a note) does not."""
    target = outside / "report.txt"
    server = scripted_server([
        {"tool_calls": [{"name": "write_file",
                         "arguments": {"file_path": str(target), "content": "done\n"}}]},
        {"tool_calls": [{"name": "write_file",
                         "arguments": {"file_path": ".git/config", "content": "[core]\n"}}]},
        {"tool_calls": [{"name": "write_file",
                         "arguments": {"file_path": "inside.txt", "content": "x\n"}}]},
        {"content": "Wrote the report."}, {"content": "Checked: it is there."}])
    (workspace / ".git").mkdir()
    child = spawn(one_shot(server, "write the report", "-a", "untrusted", "--sandbox",
                           "danger-full-access"), workspace, home)
    text = wait(child, "answer [y/n]")
    assert "a file tool would write outside the workspace or into .git" in text
    flat = "".join(text.split())
    assert f"$write_file{target.resolve()}" in flat and "outsidetheworkspace" in flat
    child.send("y\r")
    wait(child, "✓ approved once")
    text = wait(child, "answer [y/n]")
    flat = "".join(text.split())  # a long workspace path wraps at the terminal's width
    assert f"$write_file{workspace.resolve()}/.git/config" in flat
    child.send("n not the repository\r")
    wait(child, "✗ declined: not the repository")
    wait(child, "Checked: it is there.")
    child.expect(pytest.importorskip("pexpect").EOF)
    child.close()
    assert child.exitstatus == 0, screen(child)
    assert target.read_text() == "done\n"
    assert not (workspace / ".git" / "config").exists()
    assert (workspace / "inside.txt").read_text() == "x\n"  # inside: nobody asked
    told = tool_results(server.requests[2])[-1]
    assert "did not get it" in told and "Their note: not the repository" in told
