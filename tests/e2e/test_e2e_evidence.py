"""End to end: what an answer's verification rests on (core/verification/evidence.py), through the CLI
and the scripted server. A command that only looks is not evidence, and a write that
failed is named in `verification` and in the answer."""
from __future__ import annotations

from helpers import run_agent

APP = "def greet():\n    return 'hi'\n"


def write_app() -> dict:
    return {"tool_calls": [{"name": "write_file",
                            "arguments": {"file_path": "app.py", "content": APP}}]}


def shell(command: str) -> dict:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


def test_ls_after_an_edit_is_not_evidence(scripted_server, workspace, home):
    server = scripted_server([write_app(), shell("ls"), {"content": "Done."},
                              shell("python3 -c 'import app; print(app.greet())'"),
                              {"content": "Done: it prints hi."}])
    run = run_agent(["-i", "Add greet to app.py"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    # "Done." after `ls` was not accepted: the verification round ran, saying what is missing
    reminder = server.requests[3]["messages"][-1]
    assert reminder["role"] == "user" and "Before you finish, verify your work" in \
        reminder["content"]
    assert "Nothing that runs the changed code has passed" in reminder["content"]
    assert run.final_message == "Done: it prints hi."
    assert run.events[-1]["verification"] == {
        "by": "evidence", "command": "python3 -c 'import app; print(app.greet())'",
        "exit_code": 0, "reason": None}


def test_ls_alone_leaves_the_answer_a_statement(scripted_server, workspace, home):
    server = scripted_server([write_app(), shell("ls && git status; cat app.py"),
                              {"content": "Done."}, {"content": "Checked."},
                              {"content": "Checked again."}])
    run = run_agent(["-i", "Add greet to app.py"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert len(server.requests) == 5  # the verification round, then the evidence round
    assert run.events[-1]["verification"] == {
        "by": "statement", "command": None, "exit_code": None,
        "reason": "no command that exercises the change exited 0 after the last edit"}


def test_a_refused_write_is_named(scripted_server, workspace, home):
    server = scripted_server([
        {"tool_calls": [{"name": "write_file",
                         "arguments": {"file_path": "notes.txt", "content": "x"}}]},
        {"content": "Created notes.txt."}, {"content": "Verified: notes.txt is there."}])
    answer = home / "answer.txt"
    run = run_agent(["-i", "write notes", "--sandbox", "read-only",
                     "--output-last-message", str(answer)], cwd=workspace, home=home,
                    api_base=server.api_base, timeout=180)
    assert run.returncode == 0, run.stderr
    assert not (workspace / "notes.txt").exists()
    verification = run.events[-1]["verification"]
    assert verification["by"] == "statement"
    assert verification["reason"] == "no file changed: a write failed"
    assert verification["failed_writes"] == [str(workspace / "notes.txt")]
    assert answer.read_text() == (
        "Verified: notes.txt is there.\n\nNote: writing these files failed, so they were not "
        "changed: notes.txt (sandbox is read-only: refusing to write notes.txt).")
