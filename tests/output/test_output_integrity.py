"""Every stdout line is one valid JSON event whatever the tools and the model produce, and
nothing else ever reaches stdout."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap

from helpers import REPO
from reliability import assert_session_complete, finish, kill_quietly, shell, start_agent

# Invalid UTF-8, a NUL, colour and title escapes, a carriage-return progress bar.
NASTY = (r"printf 'bad \xff\xfe\xc3 utf8\n nul:\000:\n \033[31mred\033[0m "
         r"\033]0;title\007\n50%%\r100%%\n'")
ONE_MB_LINE = "head -c 1048576 /dev/zero | tr '\\0' 'a'"  # no newline at all
BINARY = "head -c 65536 /dev/urandom"


def test_hostile_output_stays_valid_jsonl(scripted_server, tmp_path):
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    last = tmp_path / "last.txt"
    server = scripted_server([
        {"tool_calls": [shell(NASTY), shell(ONE_MB_LINE), shell(BINARY)]},
        # a model that sends a lone surrogate, control characters and a NUL
        # (the answer: no edit, no test named, no verification round)
        {"content": "odd \ud800 text \x00 with \x1b[1mcontrols\x1b[0m and \u2028 \u2029 \x85 "
                    "line breaks \udcff"},
    ])
    proc = start_agent(["-i", "print odd things", "--output-last-message", str(last)],
                       cwd=workspace, home=home, api_base=server.api_base,
                       env_extra={"PYTHONWARNINGS": "always"})
    try:
        run = finish(proc, timeout=60)  # decodes stdout strictly and parses every line
    finally:
        kill_quietly(proc)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.split("\n")
    assert lines[-1] == "" and all(lines[:-1])  # newline-terminated, no blank lines
    assert all(ord(c) >= 0x20 for c in run.stdout.replace("\n", ""))  # no raw controls

    nasty, big, binary = run.completed_items("command_execution")
    assert "bad " in nasty["aggregated_output"] and " red \n100%\n" in nasty["aggregated_output"]
    assert "\x1b" not in nasty["aggregated_output"]
    assert big["exit_code"] == 0 and len(big["aggregated_output"]) < 1_048_576  # bounded
    assert binary["exit_code"] == 0
    messages = [m["text"] for m in run.completed_items("agent_message")]
    assert messages[0].startswith("odd \ufffd text")  # the lone surrogate, cleaned
    assert last.read_text(encoding="utf-8").startswith("odd ")
    assert_session_complete(home, run)  # the record parses line by line too
    # the model got valid (escaped) JSON back, with the tool output it asked for
    assert len(server.requests) == 2


def test_nothing_but_events_reaches_stdout(tmp_path):
    # Stray writes of every kind after the sink claimed stdout: print, sys.stdout, a
    # warning, a raw write to fd 1, a child process inheriting fd 1.
    script = textwrap.dedent("""
        import os, subprocess, sys, warnings
        from baseagent.output import events as ev
        from baseagent.output.jsonl import JsonlSink, claim_stdout
        sink = JsonlSink(claim_stdout())
        print("stray print")
        sys.stdout.write("stray write\\n")
        warnings.warn("a library warning")
        os.write(1, b"raw fd write\\n")
        subprocess.run(["echo", "child process"])
        sink.emit(ev.TurnStarted())
        print("more chatter")
        sink.emit(ev.ErrorEvent(message="still fine"))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=30, env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line) for line in proc.stdout.splitlines()] == [
        {"type": "turn.started"}, {"type": "error", "message": "still fine"}]
    for chatter in ("stray print", "stray write", "a library warning", "raw fd write",
                    "child process", "more chatter"):
        assert chatter in proc.stderr


def test_hard_exit_waits_for_the_line_being_written(tmp_path):
    # exit_when_idle called while a line is being written (as a signal handler can be)
    # lets the line finish, then exits with the code.
    script = textwrap.dedent("""
        import sys
        from baseagent.output import events as ev
        from baseagent.output.jsonl import JsonlSink, claim_stdout

        class Interrupting:
            def __init__(self, raw):
                self.raw, self.sink = raw, None
            def write(self, data):
                self.sink.exit_when_idle(143)  # "signal" arrives mid-write
                self.raw.write(data[:10]); self.raw.write(data[10:])
            def flush(self):
                self.raw.flush()

        stream = Interrupting(claim_stdout())
        sink = stream.sink = JsonlSink(stream)
        sink.emit(ev.ErrorEvent(message="x" * 100000))
        print("not reached", file=sys.stderr)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=30, env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 143
    assert json.loads(proc.stdout) == {"type": "error", "message": "x" * 100000}
    assert "not reached" not in proc.stderr


def test_agent_stdout_has_no_import_chatter(tmp_path, scripted_server):
    # litellm is imported after stdout is claimed; even with verbose litellm logging asked
    # for through the environment, its output goes to stderr.
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    server = scripted_server([{"content": "ok"}])
    proc = start_agent(["-i", "hi", "--no-verify"], cwd=workspace, home=home,
                       api_base=server.api_base,
                       env_extra={"LITELLM_LOG": "DEBUG", "PYTHONWARNINGS": "always"})
    try:
        run = finish(proc, timeout=60)
    finally:
        kill_quietly(proc)
    assert run.returncode == 0, run.stderr
    assert [e["type"] for e in run.events if e["type"] != "item.updated"] == [
        "thread.started", "turn.started", "item.started", "item.completed", "turn.completed"]


def test_terminal_rendering_survives_a_terminal_that_went_away():
    """After a hangup the TTY write fails; the renderer stops drawing instead of raising."""
    from baseagent.emitting import events as engine
    from baseagent.output.pretty import PrettySink

    class DeadTerminal(io.StringIO):
        writes = 0

        def write(self, text: str) -> int:
            DeadTerminal.writes += 1
            raise OSError(5, "Input/output error")

    sink = PrettySink(DeadTerminal())
    sink.run_event(engine.ThreadStarted(thread_id="t"))
    sink.run_event(engine.TurnEnded("interrupted", error="interrupted (received SIGHUP)"))
    assert DeadTerminal.writes == 1  # the first failure ends the drawing; nothing raised
