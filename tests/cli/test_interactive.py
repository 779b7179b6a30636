"""The interactive session, driven through a pseudo-terminal as a person would use it.

pexpect runs the real `agent.py` on a pty against the scripted model server: the prompt,
the turns of one thread, Ctrl-C on a running command, the slash commands and the header
drawn before litellm is imported. One test looks at the screen itself through tmux.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from helpers import AGENT, agent_env

# Turns wait for litellm's import (seconds on a loaded machine) before the first request.
TIMEOUT = 90
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>]|\r")


def spawn(args: list[str], cwd: Path, home: Path, **extra: str) -> pexpect.spawn:
    env = agent_env(home, **extra)
    env["TERM"] = "xterm-256color"
    # pexpect is no terminal emulator: it would never answer prompt_toolkit's cursor
    # position request (tmux below does; it runs without this).
    env["PROMPT_TOOLKIT_NO_CPR"] = "1"
    child = pexpect.spawn(sys.executable, [str(AGENT), *args], cwd=str(cwd), env=env,
                          dimensions=(40, 120), encoding="utf-8", timeout=TIMEOUT)
    child.logfile_read = _Transcript()
    return child


class _Transcript:
    """Everything the terminal received, for assertions and failure messages."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.mark = 0  # where the next wait() starts looking (in the plain text)

    def write(self, data: str) -> None:
        self.parts.append(data)

    def flush(self) -> None:
        pass

    @property
    def text(self) -> str:
        return ANSI.sub("", "".join(self.parts))


def screen(child: pexpect.spawn) -> str:
    return child.logfile_read.text


def wait(child: pexpect.spawn, text: str, timeout: float = TIMEOUT) -> str:
    """Read until `text` shows in the plain text (escape codes removed) after the last
    wait; returns that plain text."""
    transcript = child.logfile_read
    deadline = time.monotonic() + timeout
    while True:
        plain = transcript.text
        found = plain.find(text, transcript.mark)
        if found >= 0:
            transcript.mark = found + len(text)
            return plain
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} never appeared; the terminal showed:\n"
                                 f"{plain[transcript.mark:]}")
        try:
            child.read_nonblocking(65536, timeout=0.2)
        except pexpect.TIMEOUT:
            pass


def prompt(child: pexpect.spawn) -> None:
    wait(child, "› ")


def session_args(server) -> list[str]:
    return ["--model", "openai/scripted", "--api-base", server.api_base]


def test_two_turns_on_one_thread_and_ctrl_c_cancels_a_turn(scripted_server, workspace, home):
    server = scripted_server([
        # turn 1: an answer (a question: no verification round)
        {"content": "First answer."},
        # turn 2: a command that would run for a minute; Ctrl-C stops it
        {"content": "Sleeping.", "tool_calls": [{"name": "shell",
                                                 "arguments": {"command": "sleep 60"}}]},
        # turn 3: the session goes on, on the same thread
        {"content": "Third answer."},
    ])
    child = spawn(session_args(server), workspace, home)
    wait(child, "new thread")
    thread_id = re.search(r"thread ([0-9a-f-]{36})", screen(child)).group(1)
    prompt(child)

    child.send("first instruction\r")
    wait(child, "✓ completed · turn 1")
    prompt(child)
    assert "First answer." in screen(child)

    child.send("second instruction\r")
    wait(child, "$ sleep 60")
    wait(child, "running")  # the spinner, with the elapsed time
    started = time.monotonic()
    child.sendintr()
    wait(child, "■ interrupted · turn 2")
    prompt(child)
    assert time.monotonic() - started < 30  # not the command's 60 s
    assert re.search(r"exit (\d+|none) \(failed\)|\n  stopped\n", screen(child))

    child.send("third instruction\r")
    wait(child, "✓ completed · turn 3")
    prompt(child)
    child.send("/cost\r")
    wait(child, f"thread {thread_id}: ")
    prompt(child)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, screen(child)

    text = screen(child)
    # the final answers are set apart from the interim messages
    assert re.search(r"answer ─+\nThird answer\.\n─+\n✓ completed · turn 3", text), text
    # one thread: the third turn's request holds the first two turns
    last = server.requests[-1]["messages"]
    users = [m["content"] for m in last if m["role"] == "user"]
    assert "first instruction" in users and "second instruction" in users
    assert users.count("third instruction") == 1
    # a person is there: the prompt lets the model ask; commands run in workspace-write
    system = last[0]["content"]
    assert "A person is at the terminal" in system and "nobody will answer" not in system
    sleeping = next(i for i, m in enumerate(last) if m.get("content") == "Sleeping.")
    assert last[sleeping + 1]["role"] == "tool"  # the cancelled command's result is kept
    sessions = list((home / ".baseagent" / "sessions").glob("*.jsonl"))
    assert [p.stem for p in sessions] == [thread_id]
    events = [json.loads(line).get("event", {}) for line in sessions[0].open()]
    assert [e["type"] for e in events if e.get("type", "").startswith("turn.")
            and e["type"] != "turn.started"] == ["turn.completed", "turn.failed",
                                                 "turn.completed"]


def test_commands_new_model_resume_and_errors(scripted_server, workspace, home):
    server = scripted_server([{"content": "One."}, {"content": "Two."}])  # one call a turn
    child = spawn(session_args(server), workspace, home)
    wait(child, "new thread")
    first_id = re.search(r"thread ([0-9a-f-]{36})", screen(child)).group(1)
    prompt(child)
    child.send("/help\r")
    wait(child, "/resume [ID]")
    prompt(child)
    child.send("/nonsense\r")
    wait(child, "unknown command /nonsense")
    prompt(child)
    child.send("/model antropic/claude\r")  # a typo: the session keeps its agent
    wait(child, "error: unknown model or provider: 'antropic/claude'")
    prompt(child)
    child.send("one\r")
    wait(child, "✓ completed · turn 1")
    prompt(child)

    child.send("/model openai/other\r")  # same thread, another model
    wait(child, "model openai/other")
    prompt(child)
    child.send("two\r")
    wait(child, "✓ completed · turn 2")
    prompt(child)
    assert server.requests[-1]["model"] == "other"
    assert any(m.get("content") == "one" for m in server.requests[-1]["messages"])

    child.send("/new\r")
    wait(child, "new thread")
    prompt(child)
    ids = re.findall(r"thread ([0-9a-f-]{36}) \(new thread\)", screen(child))
    assert ids[0] == first_id and ids[-1] != first_id
    child.send(f"/resume {first_id[:8]}\r")
    wait(child, "resumed thread, 2 earlier turns")
    prompt(child)
    child.send("/exit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_resume_alone_offers_this_workspaces_threads_and_leaving_says_how_to_come_back(
        scripted_server, workspace, home, tmp_path):
    server = scripted_server([{"content": "One."}, {"content": "Elsewhere."}])
    args = [*session_args(server), "--no-verify"]

    child = spawn(args, workspace, home)
    wait(child, "new thread")
    first_id = re.search(r"thread ([0-9a-f-]{36})", screen(child)).group(1)
    prompt(child)
    child.send("/resume\r")  # nothing recorded here yet
    text = wait(child, "workspace's)")  # the line may wrap between any two words
    assert f"no other thread recorded in {workspace}" in " ".join(text.split())
    prompt(child)
    child.send("first task\r")
    wait(child, "✓ completed · turn 1")
    prompt(child)
    child.sendeof()  # Ctrl-D: how to come back to this thread
    wait(child, f"To continue this thread: baseagent --resume {first_id}")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    other = tmp_path / "other"  # a thread of another workspace is not offered
    other.mkdir()
    child = spawn(args, other, home)
    prompt(child)
    child.send("elsewhere task\r")
    wait(child, "✓ completed · turn 1")
    prompt(child)
    child.send("/exit\r")
    wait(child, "To continue this thread: baseagent --resume ")
    child.expect(pexpect.EOF)
    child.close()

    child = spawn(args, workspace, home)
    prompt(child)
    child.send("/resume\r")
    wait(child, "resume which?")
    child.send("\r")  # Enter: none
    wait(child, "not resumed")
    prompt(child)
    child.send("/resume\r")
    wait(child, "recent threads in this workspace:")
    listing = wait(child, "resume which?")
    offered = re.findall(r"^ +(\d+)\. ([0-9a-f-]{36}) .*$",
                         listing[listing.rfind("recent threads"):], re.M)
    assert offered == [("1", first_id)], listing
    assert "first task" in listing and "elsewhere task" not in listing
    child.send("1\r")
    wait(child, f"thread {first_id} (resumed thread")
    prompt(child)
    child.send("/resume\r")  # the thread in use is not offered; Enter chooses none
    wait(child, "no other thread recorded in")
    prompt(child)
    child.send("/exit\r")
    wait(child, f"To continue this thread: baseagent --resume {first_id}")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert len(server.requests) == 2  # choosing never called the model


def test_the_header_is_drawn_before_litellm_is_imported(workspace, home, tmp_path):
    # A `litellm` that ends the process with 99 the moment anything imports it.
    fake = tmp_path / "fake" / "litellm"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("import os\nos._exit(99)\n")
    pythonpath = os.pathsep.join([str(fake.parent), str(Path(AGENT).parent / "src")])
    child = spawn(["--model", "openai/gpt-4.1"], workspace, home, PYTHONPATH=pythonpath)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 99  # litellm was imported, in the background...
    text = screen(child)  # ...after the whole header was on the screen
    # (a line wider than the terminal breaks between its fields)
    assert re.search(r"baseagent \S+  thread [0-9a-f-]{36} \(new thread\)\n"
                     rf"model openai/gpt-4\.1(  |\n)workspace {re.escape(str(workspace))}"
                     r"(  |\n)sandbox workspace-write", text), text  # a person is there


def test_chat_needs_a_terminal_and_pipes_are_unchanged(workspace, home):
    # `chat` without a terminal: one line, exit 2. No instruction and no terminal: as before.
    env = agent_env(home)
    chat = subprocess.run([sys.executable, str(AGENT), "chat"], cwd=workspace, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert chat.returncode == 2 and chat.stdout == ""
    assert chat.stderr.startswith("baseagent: error: chat needs a terminal")
    empty = subprocess.run([sys.executable, str(AGENT)], cwd=workspace, env=env, input="",
                           capture_output=True, text=True, timeout=60)
    assert empty.returncode == 2 and "the instruction is empty" in empty.stderr


def test_a_session_on_screen_through_tmux(scripted_server, workspace, home, tmp_path):
    """What a person sees (tmux renders the escape codes): header first, the prompt, the
    work, the answer set apart, the summary line, and nothing garbled."""
    if shutil.which("tmux") is None:
        if os.environ.get("CI"):
            pytest.fail("tmux is missing: .ci/run installs it")
        pytest.skip("tmux not installed (.ci/run installs it)")
    server = scripted_server([
        {"content": "Looking.", "tool_calls": [{"name": "shell",
                                                "arguments": {"command": "echo on-screen"}}]},
        {"content": "Done."}])  # no edit, no test named: no verification round
    name = f"baseagent-test-{os.getpid()}"
    env = agent_env(home)
    command = " ".join([f"{k}={_quote(v)}" for k, v in env.items() if k in (
        "HOME", "OPENAI_API_KEY", "PATH", "PYTHONUNBUFFERED")] + [
        "TERM=xterm-256color", _quote(sys.executable), _quote(str(AGENT)),
        *session_args(server)])
    socket = str(tmp_path / "tmux.sock")
    tmux = ["tmux", "-S", socket]
    subprocess.run([*tmux, "new-session", "-d", "-s", name, "-x", "100", "-y", "30", "-c",
                    str(workspace), command], check=True, env={**os.environ, "TMUX": ""})
    try:
        shown = _wait_for(tmux, name, "›")
        assert shown.splitlines()[0].startswith("baseagent ")
        subprocess.run([*tmux, "send-keys", "-t", name, "run it", "Enter"], check=True)
        shown = _wait_for(tmux, name, "✓ completed · turn 1")
        lines = [line.rstrip() for line in shown.splitlines()]
        assert "$ echo on-screen" in lines and "  on-screen" in lines
        assert "Done." in lines
        answer = lines.index("Done.")
        assert lines[answer - 1].startswith("answer ─") and lines[answer + 1].startswith("─")
        assert lines[answer + 2].startswith("✓ completed · turn 1 · ")
        assert "\x1b" not in shown and "⠋" not in shown.split("✓ completed")[1]
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _wait_for(tmux: list[str], name: str, text: str, timeout: float = TIMEOUT) -> str:
    deadline = time.monotonic() + timeout
    shown = ""
    while time.monotonic() < deadline:
        shown = subprocess.run([*tmux, "capture-pane", "-p", "-t", name], capture_output=True,
                               text=True).stdout
        if text in shown:
            return shown
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared on the screen:\n{shown}")


# ANSI colours and styles (SGR), not cursor movement: what NO_COLOR takes away.
SGR = re.compile(r"\x1b\[[0-9;]*m")


def test_live_output_streams_and_the_answer_is_markdown_without_colour(
        scripted_server, workspace, home):
    """Command output on screen while the command still runs (it cannot end before the test
    lets it), the answer visible while it streams, rendered as Markdown once complete; with
    NO_COLOR set, not one colour code from the header to the summary."""
    answer = ("The **fix** is in.\n\n```\nfence-body\n```\n\n" + "More words follow. " * 20
              + "END-OF-ANSWER")
    server = scripted_server([
        {"content": "Running it.", "tool_calls": [{"name": "shell", "arguments": {
            "command": "printf 'out-%s\\n' one two; "
                       "while [ ! -e release ]; do sleep 0.1; done; echo out-$((1 + 2))"}}]},
        {"content": answer, "chunk_size": 8, "chunk_delay": 0.2},
    ])
    child = spawn([*session_args(server), "--no-verify"], workspace, home, NO_COLOR="1")
    prompt(child)
    child.send("run it\r")
    wait(child, "out-two")  # streamed: the command waits for `release` to end
    assert not (workspace / "release").exists() and "out-3" not in screen(child)
    (workspace / "release").touch()
    wait(child, "exit 0 (completed)")
    wait(child, "The **fix** is in.")  # the answer as it streams, raw
    assert "END-OF-ANSWER" not in screen(child)  # ...before it is complete
    wait(child, "✓ completed · turn 1")
    prompt(child)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    text = screen(child)
    final = text[text.rindex("answer ─"):text.rindex("✓ completed · turn 1")]
    assert "The fix is in." in final and "fence-body" in final, final
    assert "**" not in final and "```" not in final and final.rstrip().endswith("─")
    assert "  out-one\n  out-two\n  out-3\n  exit 0 (completed)" in text
    raw = "".join(child.logfile_read.parts)
    header = raw[:raw.index("Ctrl-D leaves")]
    turn = raw[raw.index("$ printf"):raw.rindex("✓ completed · turn 1")]
    assert "baseagent" in header and not SGR.search(header), header
    assert not SGR.search(turn), turn
    assert "running" in turn and "\x1b[1A" in turn  # the spinner and in-place redraws


def test_live_output_on_screen_through_tmux(scripted_server, workspace, home, tmp_path):
    """The screen itself (tmux renders the escape codes) while a command runs and after:
    its last lines redrawn in place (never printed twice), the spinner on its own row under
    them, the reasoning above left whole, retries as one line counting up, and the answer
    rendered as Markdown."""
    if shutil.which("tmux") is None:
        if os.environ.get("CI"):
            pytest.fail("tmux is missing: .ci/run installs it")
        pytest.skip("tmux not installed (.ci/run installs it)")
    server = scripted_server([
        {"fault": "status", "status": 503}, {"fault": "status", "status": 503},
        {"reasoning": "Let me check the build first.", "content": "Running.",
         "chunk_size": 4, "chunk_delay": 0.05,
         "tool_calls": [{"name": "shell", "arguments": {"command": (
             "for i in 1 2 3 4 5 6 7 8; do echo row-$i; done; "
             "while [ ! -e release ]; do sleep 0.1; done")}}]},
        {"content": "**Done**: the build `passes`.", "chunk_size": 4, "chunk_delay": 0.05}])
    name = f"baseagent-live-{os.getpid()}"
    env = {**agent_env(home), "BASEAGENT_RETRY_BASE_DELAY": "0.2",
           "BASEAGENT_RETRY_MAX_DELAY": "0.3"}
    command = " ".join([f"{k}={_quote(v)}" for k, v in env.items() if k in (
        "HOME", "OPENAI_API_KEY", "PATH", "PYTHONUNBUFFERED", "BASEAGENT_RETRY_BASE_DELAY",
        "BASEAGENT_RETRY_MAX_DELAY")] + [
        "TERM=xterm-256color", _quote(sys.executable), _quote(str(AGENT)),
        *session_args(server), "--no-verify"])
    tmux = ["tmux", "-S", str(tmp_path / "tmux.sock")]
    subprocess.run([*tmux, "new-session", "-d", "-s", name, "-x", "90", "-y", "40", "-c",
                    str(workspace), command], check=True, env={**os.environ, "TMUX": ""})
    try:
        _wait_for(tmux, name, "›")
        subprocess.run([*tmux, "send-keys", "-t", name, "check the build", "Enter"],
                       check=True)
        lines = [line.rstrip() for line in _wait_for(tmux, name, "row-8").splitlines()]
        assert not (workspace / "release").exists()  # the command is still running
        at = lines.index("  row-8")
        assert lines[at - 4:at + 1] == [f"  row-{n}" for n in range(4, 9)], lines
        assert "  row-3" not in lines  # the last five lines only, while it runs
        assert re.match(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] running \d+\.\ds · Ctrl-C to cancel$",
                        lines[at + 1]), lines
        assert "Let me check the build first." in lines  # whole, not erased by the spinner
        (workspace / "release").touch()
        shown = _wait_for(tmux, name, "✓ completed · turn 1")
        lines = [line.rstrip() for line in shown.splitlines()]
        assert [lines.count(f"  row-{n}") for n in range(1, 9)] == [1] * 8, shown
        assert lines[lines.index("  row-8") + 1] == "  exit 0 (completed)"
        retries = [line for line in lines if "Reconnecting" in line]
        assert len(retries) == 1 and retries[0].startswith("! Reconnecting... 2/"), shown
        assert lines.index(retries[0]) < lines.index("Let me check the build first.")
        assert "Done: the build passes." in lines and "**" not in shown
        assert "\x1b" not in shown and "⠋" not in shown.split("✓ completed")[1]
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
