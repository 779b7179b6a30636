"""/diff and /undo in the interactive session, as a person sees them: agent.py on a
pseudo-terminal (pexpect) against the scripted model server."""
from __future__ import annotations

import re

import pexpect

from test_interactive import prompt, screen, session_args, spawn, wait


def call(name: str, **arguments: str) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_diff_and_undo_in_the_interactive_session(scripted_server, workspace, home):
    (workspace / "notes.txt").write_text("mine\n")
    server = scripted_server([
        call("write_file", file_path="notes.txt", content="the agent's\n"),
        call("shell", command="printf 'new\\n' > new.txt"),
        {"content": "Both written."}, {"content": "Verified."}])
    child = spawn(session_args(server), workspace, home)
    prompt(child)
    child.send("write the notes\r")
    wait(child, "✓ completed · turn 1")
    prompt(child)
    child.send("/diff\r")
    wait(child, "turn 1 “write the notes” changed 2 files")
    wait(child, "+the agent's")
    prompt(child)
    child.send("/undo\r")
    wait(child, "undid turn 1 “write the notes”: the workspace is as it was before it")
    prompt(child)
    assert (workspace / "notes.txt").read_text() == "mine\n"
    assert not (workspace / "new.txt").exists()
    child.send("/undo\r")
    wait(child, "nothing to undo")
    prompt(child)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, screen(child)
    text = screen(child)
    assert re.search(r"A new\.txt \(\+1 -0\)\n\s*M notes\.txt \(\+1 -1\)", text), text
    assert re.search(r"removed\s+new\.txt\n\s*restored\s+notes\.txt", text), text
