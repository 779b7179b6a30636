"""The CLI's process around one Agent (runner.py), in-process: exit codes, the header drawn
before the run on a terminal, stdout for events only, stderr through the redactor,
--output-last-message, and the errors that come before anything is printed.

In a real run `runner.run()` owns the process: it claims fd 1, wraps stderr, installs signal
handlers and a watchdog, hardens the process and makes it a subreaper. Here the steps that
would reach past this test are swapped for stand-ins that record what the runner asked of
them (the `process` fixture); everything else is real: the Agent the runner builds, its
model calls over HTTP to the scripted server (on the direct path, so litellm is never
imported: milliseconds per test), the session record, the redactor. The same behaviour
through a real process: tests/e2e/ (test_e2e_core.py, test_e2e_signals.py), and
tests/output/ (test_output_integrity.py, test_redaction.py).
"""
from __future__ import annotations

import errno
import gc
import io
import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from baseagent import runner
from baseagent.config.load import load_settings
from baseagent.errors import ConfigError, InputError
from baseagent.exit_codes import (EXIT_FAILED, EXIT_OK, EXIT_REQUIRES_ACTION,
                                  exit_code_for_status)
from baseagent.output.events import parse_event
from baseagent.tools.external import load_external_tools

KEY = "sk-runner-test-0123456789abcdefXYZ"  # long enough for the redactor to know it
MODEL = "openai/scripted-model"  # a name litellm has no rules for: the direct path


class Stdout(io.BytesIO):
    """What claim_stdout() hands the JSONL sink instead of fd 1."""

    def close(self) -> None:  # the lines stay readable after the run
        self.flush()


class FullDisk(io.RawIOBase):
    """fd 1 on a full disk (or /dev/full): every write fails."""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


class Terminal(io.StringIO):
    """sys.stdout when a person is watching."""

    def isatty(self) -> bool:
        return True


class Piped(io.StringIO):
    def isatty(self) -> bool:
        return False


class Process:
    """The process-wide steps of a run, recorded instead of done."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.stdout: Any = Stdout()
        self.claimed = 0
        self.hardened = 0
        self.subreaper = 0
        self.ended: list[dict[str, float]] = []
        self.guards: list[FakeGuard] = []
        # A signal the guard delivers once `signal_when()` holds (the run is under way).
        self.signal: int | None = None
        self.signal_when: Any = None
        self._capsys = capsys
        self._out = self._err = ""

    def _read(self) -> None:
        out, err = self._capsys.readouterr()
        self._out += out
        self._err += err

    def stderr(self) -> str:
        """What reached sys.stderr (through the redactor the runner put on it)."""
        self._read()
        return self._err

    def printed(self) -> str:
        """What Python-level code printed on sys.stdout (not the event stream)."""
        self._read()
        return self._out

    def claim_stdout(self) -> Any:
        self.claimed += 1
        return self.stdout

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.getvalue().decode().splitlines()]

    def types(self) -> list[str]:
        return [event["type"] for event in self.lines()]


class FakeGuard:
    """runner's SignalGuard: no handlers, no watchdog process; it can deliver one signal the
    way the real guard's handler does (cancel the agent, remember the signal)."""

    process: Process  # set on the subclass the `process` fixture installs

    def __init__(self, target: Any, hard_exit: Any = None, watchdog: bool = False) -> None:
        self.target = target
        self.watchdog = watchdog
        self.signal_number: int | None = None
        self.closed = False

    def install(self) -> "FakeGuard":
        self.process.guards.append(self)
        if self.process.signal is not None:
            threading.Thread(target=self._deliver, daemon=True).start()
        return self

    def _deliver(self) -> None:
        deadline = time.monotonic() + 10
        while not self.process.signal_when() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.signal_number = signum = self.process.signal
        self.target.cancel(f"received {signal.Signals(signum).name}", signum)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
            capsys: pytest.CaptureFixture[str]) -> Process:
    import baseagent.hardening
    import baseagent.output.jsonl
    import baseagent.signals
    import baseagent.tools.procs

    proc = Process(capsys)  # sys.stdout and sys.stderr are capsys's (not a terminal)
    guard = type("Guard", (FakeGuard,), {"process": proc})
    monkeypatch.setattr(baseagent.output.jsonl, "claim_stdout", proc.claim_stdout)
    monkeypatch.setattr(baseagent.hardening, "harden_process",
                        lambda: setattr(proc, "hardened", proc.hardened + 1) or [])
    monkeypatch.setattr(baseagent.tools.procs, "adopt_orphans",
                        lambda: setattr(proc, "subreaper", proc.subreaper + 1) or True)
    monkeypatch.setattr(baseagent.tools.procs, "end_descendants",
                        lambda **kw: proc.ended.append(kw) or [])
    monkeypatch.setattr(baseagent.signals, "SignalGuard", guard)
    monkeypatch.setattr(gc, "freeze", lambda: None)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # session records go under it
    # What would send the calls through litellm (llm/route.py) or a proxy: the direct path
    # to the scripted server keeps each run to milliseconds.
    for name in ("BASEAGENT_MODEL_TRANSPORT", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
                 "OPENAI_ORGANIZATION", "OPENAI_CUSTOM_HEADERS", "SSL_VERIFY",
                 "SSL_CERTIFICATE", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
                 "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    return proc


def settings_for(tmp_path: Path, server: Any = None, **flags: Any) -> Any:
    """Settings as the CLI resolves them from its flags (no config file, no environment)."""
    config = tmp_path / "config.toml"
    config.write_text("")
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    base = {"model": MODEL, "api_key": KEY, "cwd": workspace, "verify": False,
            "api_base": server.api_base if server is not None else "http://127.0.0.1:9/v1"}
    return load_settings({**base, **flags}, env={}, config_file=config)


def records(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "home" / ".baseagent" / "sessions").glob("*.jsonl"))


# -- exit codes ----------------------------------------------------------------------------

@pytest.mark.parametrize("status, signal_number, code", [
    ("completed", None, 0),
    ("failed", None, 1),
    ("requires_action", None, 3),
    ("interrupted", signal.SIGINT, 130),
    ("interrupted", signal.SIGTERM, 143),
    ("interrupted", signal.SIGHUP, 129),
    ("interrupted", None, 130),  # stopped without a signal we know of: SIGINT's code
])
def test_exit_codes(status, signal_number, code):
    assert exit_code_for_status(status, signal_number) == code


def test_a_completed_run_exits_0_with_only_events_on_stdout(process, scripted_server, tmp_path):
    server = scripted_server([{"content": "Done."}])
    code = runner.run(settings_for(tmp_path, server), "say done")
    assert code == EXIT_OK
    events = process.lines()
    for event in events:  # every line one event of the schema
        parse_event(event)
    assert [events[0]["type"], events[-1]["type"]] == ["thread.started", "turn.completed"]
    assert [e["item"]["text"] for e in events if e["type"] == "item.completed"] == ["Done."]
    assert process.claimed == 1 and process.stderr() == "" and process.printed() == ""
    # The process is the run's: hardened, a subreaper, the guard installed and removed.
    assert (process.hardened, process.subreaper) == (1, 1)
    assert [(g.watchdog, g.closed) for g in process.guards] == [(True, True)]
    assert process.ended == []  # a normal finish leaves background commands alone
    [record] = records(tmp_path)
    assert record.stem == process.lines()[0]["thread_id"]


def test_a_failed_turn_exits_1(process, scripted_server, tmp_path):
    server = scripted_server([{"fault": "status", "status": 401,
                               "message": f"Incorrect API key provided: {KEY}"}])
    code = runner.run(settings_for(tmp_path, server), "hello")
    assert code == EXIT_FAILED
    assert process.types()[-1] == "turn.failed"
    assert KEY not in process.stdout.getvalue().decode()


def test_a_turn_waiting_for_the_callers_tools_exits_3(process, scripted_server, tmp_path):
    server = scripted_server([{"tool_calls": [
        {"id": "call_w", "name": "get_weather", "arguments": {"city": "Paris"}}]}])
    tools = load_external_tools(json.dumps([{
        "name": "get_weather", "description": "Weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]),
        "tools.json")
    code = runner.run(settings_for(tmp_path, server), "weather?", external_tools=tools)
    assert code == EXIT_REQUIRES_ACTION
    assert process.types()[-1] == "turn.requires_action"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_exits_128_plus_its_number_and_ends_what_the_run_started(
        process, scripted_server, tmp_path, signum):
    server = scripted_server([{"content": "never sent", "delay": 30}])
    process.signal, process.signal_when = signum, lambda: server.requests
    started = time.monotonic()
    code = runner.run(settings_for(tmp_path, server), "hello")
    assert code == 128 + signum
    assert time.monotonic() - started < 20  # the model call was abandoned
    last = process.lines()[-1]
    assert last["type"] == "turn.failed"
    assert f"received {signal.Signals(signum).name}" in last["error"]["message"]
    assert process.ended and all(call.get("grace", 0) > 0 for call in process.ended)
    assert [g.closed for g in process.guards] == [True]


# -- before anything is printed ------------------------------------------------------------

@pytest.mark.parametrize("terminal", [False, True])
def test_a_bad_model_string_is_a_config_error_before_anything_is_printed(
        process, monkeypatch, tmp_path, terminal):
    stdout = Terminal() if terminal else Piped()
    monkeypatch.setattr(sys, "stdout", stdout)
    with pytest.raises(ConfigError, match="antropic"):
        runner.run(settings_for(tmp_path, model="antropic/claude-sonnet-4-5"), "hello")
    assert stdout.getvalue() == ""  # not even the header
    assert process.claimed == 0 and process.guards == [] and records(tmp_path) == []


def test_tool_outputs_for_a_thread_not_waiting_for_them_are_refused_before_stdout(
        process, scripted_server, tmp_path):
    server = scripted_server([{"content": "Done."}])
    with pytest.raises(InputError, match="not waiting for tool outputs"):
        runner.run(settings_for(tmp_path, server), None, tool_outputs={"call_x": "18 C"})
    assert process.claimed == 0 and server.requests == []


# -- what stdout carries -------------------------------------------------------------------

def test_on_a_terminal_the_header_comes_first_and_names_the_runs_thread(
        process, monkeypatch, scripted_server, tmp_path):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    server = scripted_server([{"content": "Done on a terminal."}])
    settings = settings_for(tmp_path, server)
    assert runner.run(settings, "hello") == EXIT_OK
    screen = terminal.getvalue()
    [record] = records(tmp_path)
    first = screen.splitlines()[0]
    assert "baseagent" in first and record.stem in first and "new thread" in first
    assert MODEL in screen and str(settings.cwd) in screen
    assert screen.index(record.stem) < screen.index("Done on a terminal.")
    assert process.claimed == 0  # no JSONL on a terminal
    assert not any(line.startswith("{") for line in screen.splitlines())


@pytest.mark.parametrize("terminal, flags, first", [
    (False, {}, "thread.started"),  # piped: Codex JSONL
    (True, {"json_output": True}, "thread.started"),  # --json on a terminal
    (False, {"event_format": "agentb"}, "agent.run.created"),
    (True, {"event_format": "agentb"}, "agent.run.created"),  # AgentB's is always JSONL
])
def test_which_stream_stdout_carries(process, monkeypatch, scripted_server, tmp_path,
                                     terminal, flags, first):
    stdout = Terminal() if terminal else Piped()
    monkeypatch.setattr(sys, "stdout", stdout)
    server = scripted_server([{"content": "Done."}])
    assert runner.run(settings_for(tmp_path, server, **flags), "hello") == EXIT_OK
    assert process.claimed == 1 and stdout.getvalue() == ""
    assert process.types()[0] == first


def test_stdout_that_cannot_be_written_ends_the_run_with_exit_1(process, scripted_server,
                                                                tmp_path):
    process.stdout = FullDisk()
    server = scripted_server([{"tool_calls": [{"name": "list_dir", "arguments": {
        "path": "."}}]}] * 20 + [{"content": "Done."}])
    code = runner.run(settings_for(tmp_path, server), "work")
    assert code == EXIT_FAILED
    assert process.stderr().strip().splitlines()[-1] == (
        "baseagent: error: cannot write the events to stdout: No space left on device")
    assert len(server.requests) < 21  # nobody gets the events: the run stopped


# -- stderr and the last message go through the redactor -----------------------------------

def test_notes_go_to_stderr_redacted_when_headless(process, scripted_server, tmp_path):
    server = scripted_server([{"content": "Done."}])
    code = runner.run(settings_for(tmp_path, server), "hello",
                      notes=[f"model from the record (key {KEY})"])
    assert code == EXIT_OK
    assert process.stderr() == \
        "baseagent: note: model from the record (key [REDACTED])\n"


def test_notes_go_in_the_header_on_a_terminal(process, monkeypatch, scripted_server, tmp_path):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    server = scripted_server([{"content": "Done."}])
    assert runner.run(settings_for(tmp_path, server), "hello",
                      notes=["model from the record"]) == EXIT_OK
    assert "model from the record" in terminal.getvalue()
    assert "note" not in process.stderr()


def test_the_last_message_file_is_redacted(process, scripted_server, tmp_path):
    server = scripted_server([{"content": f"The key is {KEY}."}])
    last = tmp_path / "out" / "last.txt"
    code = runner.run(settings_for(tmp_path, server, output_last_message=last), "key?")
    assert code == EXIT_OK
    assert last.read_text() == "The key is [REDACTED]."
    assert KEY not in process.stdout.getvalue().decode()


def test_a_last_message_file_that_cannot_be_written_is_a_warning(process, scripted_server,
                                                                 tmp_path):
    server = scripted_server([{"content": "Done."}])
    (tmp_path / "file").write_text("")
    last = tmp_path / "file" / "last.txt"  # its parent is a file
    code = runner.run(settings_for(tmp_path, server, output_last_message=last), "hello")
    assert code == EXIT_OK
    assert process.stderr().startswith(f"baseagent: warning: cannot write {last}: ")


def test_a_sandbox_the_kernel_cannot_enforce_is_a_warning(process, monkeypatch,
                                                          scripted_server, tmp_path):
    import baseagent.sandbox.policy

    monkeypatch.setattr(baseagent.sandbox.policy, "available", lambda: False)
    server = scripted_server([{"content": "Done."}])
    code = runner.run(settings_for(tmp_path, server, sandbox="workspace-write"), "hello")
    assert code == EXIT_OK
    assert process.stderr() == (
        "baseagent: warning: this kernel has no Landlock: --sandbox workspace-write binds "
        "the file tools only, not commands\n")
