"""Round three of the adversarial pass (issue 23), beyond the sandbox: grep and loader bombs,
MCP servers that misbehave, secrets in what the library returns, a full disk, bad inputs.
End to end through the CLI (or the library Agent in-process) against the scripted server."""
from __future__ import annotations

import json
import signal
import time

from helpers import run_agent
from reliability import kill_quietly, sigterm, start_agent, wait_for

CATASTROPHIC_GLOB = "*a" * 14 + "*b"


def grep_call(**arguments) -> dict:
    return {"name": "grep_files", "arguments": arguments}


def test_a_catastrophic_glob_neither_hangs_grep_nor_delays_sigterm(scripted_server, workspace,
                                                                   home):
    """The include glob, and the same line in a .gitignore, against a 60-character name:
    the Python fallback used to hang past its timeout and ignore SIGTERM for 30 s or more."""
    (workspace / ".git").mkdir()
    (workspace / ".gitignore").write_text(CATASTROPHIC_GLOB + "\n")
    (workspace / ("a" * 60)).write_text("needle\n")
    (workspace / "found.txt").write_text("needle\n")
    server = scripted_server([
        {"tool_calls": [grep_call(pattern="needle", include=CATASTROPHIC_GLOB),
                        grep_call(pattern="needle")]},
        {"delay": 60, "content": "never"}])
    proc = start_agent(["-i", "search"], cwd=workspace, home=home, api_base=server.api_base,
                       env_extra={"BASEAGENT_GREP_BACKEND": "python",
                                  "BASEAGENT_GREP_TIMEOUT_S": "120"})
    try:
        wait_for(lambda: len(server.requests) >= 2, timeout=30, what="both searches to finish")
        results = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
        # the glob matches neither name (no "b" at the end): what matters is the time
        assert results[0] == "No matches found.", results
        assert sorted(results[1].splitlines()) == ["a" * 60, "found.txt"], results
        run, took = sigterm(proc)
        assert took < 1.5
    finally:
        kill_quietly(proc)
    assert run.returncode == 143, run.stderr
    assert run.of_type("turn.failed")


def test_a_pattern_that_would_exhaust_memory_is_a_tool_error(scripted_server, workspace, home):
    import resource

    (workspace / "a.txt").write_text("aaa\n")
    bomb = "(?:(?:(?:a{60000}){60000}){60000})"
    server = scripted_server([{"tool_calls": [grep_call(pattern=bomb)]},
                              {"content": "done"}, {"content": "verified"}])
    run = run_agent(["-i", "search"], cwd=workspace, home=home, api_base=server.api_base,
                    env_extra={"BASEAGENT_GREP_BACKEND": "python"}, timeout=120)
    assert run.returncode == 0, run.stderr
    result = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"][0]
    assert "too costly to compile" in result, result
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 1_500_000  # KiB


GIL_HOG = """
import re, sys, threading, time
sys.path[:0] = sys.argv[1:]
from baseagent.signals import SignalGuard

class Target:
    cancel_requested = False
    def cancel(self, reason, signal_number=None):
        self.cancel_requested = True
    def kill_processes(self, grace=0):
        return []

guard = SignalGuard(Target(), watchdog=True).install()
print("ready", flush=True)
# Python's re holds the GIL for the whole match: the handler cannot run until it ends.
worker = threading.Thread(target=lambda: re.match(r"(a|aa)+$", "a" * 60 + "!"))
worker.start()
worker.join()
print("the handler waited for the match", flush=True)
"""


def test_sigterm_stops_the_cli_within_a_second_even_while_a_thread_holds_the_gil():
    """The guard's watchdog: a signal the Python handler cannot answer (another thread holds
    the GIL in one long C call) ends the process within a second."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", GIL_HOG, *sys.path],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        time.sleep(0.5)  # the match is under way
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        assert time.monotonic() - sent < 2
        assert proc.returncode == -signal.SIGKILL
    finally:
        kill_quietly(proc)


# -- 9. MCP servers ---------------------------------------------------------------------------


def test_an_mcp_servers_daemon_its_stderr_and_its_error_codes(scripted_server, workspace, home,
                                                              tmp_path):
    """A server double-forks a setsid daemon, floods its stderr with 64 MiB, answers calls
    with JSON-RPC errors -32000 and -32001, then crashes: the daemon dies with the run, the
    agent's memory stays small, the errors are the server's rejections, and the crash notice
    quotes the tail of stderr."""
    import resource
    import uuid

    from mcp_helpers import demo, write_config
    from reliability import is_alive

    tag = f"tag-{uuid.uuid4().hex}"
    pid_file = workspace / "daemon.pid"
    config = write_config(tmp_path / "config.toml", {"mcp_servers": {
        "demo": demo("stdio", tag, startup_timeout_sec=60)}})
    server = scripted_server([
        {"tool_calls": [{"name": "mcp__demo__daemon", "arguments": {"pid_file": str(pid_file)}},
                        {"name": "mcp__demo__flood_stderr", "arguments": {"megabytes": 64}},
                        {"name": "mcp__demo__reject",
                         "arguments": {"code": -32000, "message": "quota used up"}},
                        {"name": "mcp__demo__reject",
                         "arguments": {"code": -32001, "message": "try later"}},
                        {"name": "mcp__demo__crash", "arguments": {}}]},
        {"content": "done"}])
    run = run_agent(["-i", "go", "--no-verify", "--config", str(config)], cwd=workspace,
                    home=home, api_base=server.api_base, timeout=180)
    assert run.returncode == 0, run.stderr
    results = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert results[0] == "started" and results[1] == "flooded", results
    assert results[2] == ("Error: calling reject on MCP server 'demo': the server rejected "
                          "the call (code -32000): quota used up"), results[2]
    assert results[3] == ("Error: calling reject on MCP server 'demo': the server rejected "
                          "the call (code -32001): try later"), results[3]
    assert "connection closed" in results[4] and "flood done" in results[4], results[4]
    assert len(results[4]) < 4000  # the last three lines of stderr at most
    daemon = int(pid_file.read_text())
    wait_for(lambda: not is_alive(daemon), timeout=10, what="the server's daemon to die")
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 1_000_000  # KiB


# -- 8. OpenAPI documents and responses --------------------------------------------------------


class _Bombs:
    """An HTTP service on 127.0.0.1: /doc.json is a small document whose /big operation
    answers with 2 GB; /huge.json is a 2 GB document; /trickle.json sends a byte
    every 0.2 s (and notes when the client hangs up)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        bombs = self
        self.hung_up = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - the http.server name
                if self.path == "/doc.json":
                    return self._send(200, json.dumps(bombs.document()).encode())
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(2 << 30))
                self.end_headers()
                chunk = b"[" + b"1," * 32767 + b"1"
                try:
                    if self.path == "/trickle.json":
                        while True:
                            self.wfile.write(b" ")
                            self.wfile.flush()
                            time.sleep(0.2)
                    for _ in range((2 << 30) // len(chunk)):
                        self.wfile.write(chunk)
                except OSError:
                    bombs.hung_up.set()

            def _send(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def document(self) -> dict:
        return {"openapi": "3.0.3", "info": {"title": "bombs", "version": "1"},
                "servers": [{"url": self.url}],
                "paths": {"/big": {"get": {"operationId": "big", "responses": {}}}}}


def fan_out_document() -> dict:
    """Acyclic $refs, 10 properties on each of 9 levels: a billion nodes expanded."""
    schemas = {f"L{level}": {"type": "object", "properties": {
        f"p{n}": {"$ref": f"#/components/schemas/L{level + 1}"} for n in range(10)}}
        for level in range(9)}
    schemas["L9"] = {"type": "string"}
    return {"openapi": "3.0.3", "info": {"title": "fan", "version": "1"},
            "servers": [{"url": "http://127.0.0.1:9"}],
            "paths": {"/x": {"post": {"operationId": "fan", "requestBody": {"content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/L0"}}}},
                "responses": {}}}},
            "components": {"schemas": schemas}}


def test_openapi_bombs_stay_small(scripted_server, workspace, home, tmp_path):
    """A 2 GB response is read to 1 MiB; a 2 GB document is refused at 32 MiB; a $ref
    fan-out loads at once with its deeper schemas left unexpanded; a document that trickles
    in is abandoned when the run stops waiting for it."""
    import resource

    from mcp_helpers import write_config

    bombs = _Bombs()
    fan = tmp_path / "fan.json"
    fan.write_text(json.dumps(fan_out_document()))
    config = write_config(tmp_path / "config.toml", {"openapi": {
        "small": {"spec": f"{bombs.url}/doc.json"},
        "huge": {"spec": f"{bombs.url}/huge.json", "timeout_sec": 60},
        "fan": {"spec": str(fan)},
        "trickle": {"spec": f"{bombs.url}/trickle.json", "timeout_sec": 1}}})
    model = scripted_server([{"tool_calls": [{"name": "big", "arguments": {}}]},
                             {"content": "done"}])
    started = time.monotonic()
    run = run_agent(["-i", "call it", "--no-verify", "--config", str(config)], cwd=workspace,
                    home=home, api_base=model.api_base, timeout=150)
    assert run.returncode == 0, run.stderr
    notices = sorted(e["message"] for e in run.of_type("error"))
    assert len(notices) == 2, notices
    assert notices[0].startswith("OpenAPI document 'huge' is unusable: ") and \
        "larger than 32 MiB" in notices[0], notices
    assert notices[1].startswith("OpenAPI document 'trickle' is unusable: loading took longer")
    tools = {t["function"]["name"]: t["function"] for t in model.requests[0]["tools"]}
    assert "big" in tools and "fan" in tools
    assert "too large to expand here" in json.dumps(tools["fan"]["parameters"])
    assert len(json.dumps(tools["fan"]["parameters"])) < 2_000_000
    result = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"][0]
    assert result.startswith("HTTP 200") and "cut after 1,048,576 bytes" in result, result[:300]
    assert len(result) < 20_000
    assert bombs.hung_up.wait(10)  # the trickling fetch was given up
    assert time.monotonic() - started < 120
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 1_000_000  # KiB


# -- 10. what the library hands back ------------------------------------------------------------


def test_the_library_redacts_every_string_it_hands_back(scripted_server, workspace):
    """The model repeats the key; a provider's 401 quotes it. Events were redacted already;
    RunResult.final_message and .error, chat(), stream().result, pending tool calls and
    `history` are too, unless redact_results=False."""
    from baseagent import Agent, ExternalTool
    from baseagent.errors import TurnError

    key = "sk-library-key-0123456789abcdef"
    server = scripted_server([
        {"content": f"the key is {key}"}, {"content": f"still {key}"},
        {"content": f"streamed {key}"},
        {"tool_calls": [{"name": "lookup", "arguments": {"q": key}}]},
        {"fault": "status", "status": 401, "message": f"Incorrect API key provided: {key}."},
        {"content": f"raw {key}"}])
    lookup = ExternalTool(name="lookup", description="look up",
                          parameters={"type": "object", "properties": {"q": {"type": "string"}}})

    def agent(**kw) -> Agent:
        return Agent(model="openai/scripted", api_base=server.api_base, api_key=key,
                     cwd=str(workspace), session=False, verify=False, max_retries=0,
                     external_tools=[lookup], env={"PATH": "/usr/bin:/bin"}, **kw)

    with agent() as safe:
        first = safe.run("say it")
        assert first.final_message == "the key is [REDACTED]"
        assert safe.chat("again") == "still [REDACTED]"
        stream = safe.stream("stream it")
        list(stream)
        assert stream.result.final_message == "streamed [REDACTED]"
        paused = safe.run("look it up")
        assert paused.status == "requires_action"
        assert paused.pending_tool_calls[0].arguments == {"q": "[REDACTED]"}
        assert safe.pending_tool_calls[0].arguments == {"q": "[REDACTED]"}
        assert key not in json.dumps(safe.history)
        failed = safe.submit_tool_outputs({paused.pending_tool_calls[0].id: "nothing"})
        assert failed.status == "failed" and "[REDACTED]" in failed.error, failed.error
        assert key not in failed.error
    with agent(redact_results=False) as raw:
        assert raw.chat("raw please") == f"raw {key}"
    import pytest

    server.extend([{"fault": "status", "status": 401, "message": f"bad key {key}"}])
    with agent() as failing, pytest.raises(TurnError) as caught:
        failing.chat("fail")
    assert key not in str(caught.value) and "[REDACTED]" in caught.value.result.error


# -- 11. a full disk under the session record ---------------------------------------------------


def test_a_record_that_cannot_be_written_fails_the_turn_cleanly_and_stays_resumable(
        scripted_server, workspace, home):
    """`ulimit -f` (what a full disk does to a write): one clear line, turn.failed, exit 1,
    and the record cut back to its last complete line, from which the thread resumes."""
    import subprocess
    import sys

    from helpers import AGENT, agent_env, parse_jsonl
    from reliability import session_records

    # ~60 KB of output that does not repeat (a periodic call would be cut by the client's
    # repetition guard before it ran, llm/repetition.py)
    server = scripted_server([
        {"tool_calls": [{"name": "shell", "arguments": {"command": "seq 1 12000"}}]}])
    limit_kib = 48  # the opening records fit; the command's output does not
    proc = subprocess.run(
        ["bash", "-c", f'ulimit -f {limit_kib}; exec "$@"', "bash", sys.executable, str(AGENT),
         "--model", "openai/scripted", "--api-base", server.api_base, "-i", "print it"],
        cwd=workspace, env=agent_env(home), capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "baseagent: error: cannot write the session record "), proc.stderr
    assert "File too large" in lines[0] and "Traceback" not in proc.stderr
    events = parse_jsonl(proc.stdout)
    assert events[-1]["type"] == "turn.failed"
    assert "cannot write the session record" in events[-1]["error"]["message"]
    thread = events[0]["thread_id"]
    path = home / ".baseagent" / "sessions" / f"{thread}.jsonl"
    assert path.read_bytes().endswith(b"\n") and path.stat().st_size <= limit_kib * 1024
    records = session_records(home, thread)  # every line whole
    assert records[0]["kind"] == "meta"
    server.extend([{"content": "resumed fine"}])  # a question: one call
    resumed = run_agent(["--resume", thread, "-i", "go on"], cwd=workspace, home=home,
                        api_base=server.api_base)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.final_message == "resumed fine"


# -- 12. small input faults ---------------------------------------------------------------------


def test_prompt_files_must_be_bounded_regular_files(scripted_server, workspace, home, tmp_path):
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    server = scripted_server([{"content": "never"}])
    for path, reason in (("/dev/zero", "not a regular file"), (str(fifo), "not a regular file"),
                         (str(tmp_path), "Is a directory")):
        run = run_agent(["--system-prompt-file", path, "-i", "hi"], cwd=workspace, home=home,
                        api_base=server.api_base, parse=False, timeout=30)
        assert run.returncode == 2, run.stderr
        assert run.stdout == ""
        assert run.stderr.strip() == (f"baseagent: error: system_prompt_file: cannot read "
                                      f"{path}: {reason}"), run.stderr
    run = run_agent(["-i", "-"], cwd=workspace, home=home, api_base=server.api_base,
                    stdin="x" * (17 * 1024 * 1024), parse=False, timeout=30)
    assert run.returncode == 2 and "larger than" in run.stderr, run.stderr
    assert server.requests == []


def test_a_stdout_that_cannot_be_written_ends_the_run(scripted_server, workspace, home):
    """stdout is /dev/full: every write fails with ENOSPC. The run stops, says so on stderr
    and exits non-zero (it lost every event silently with exit 0)."""
    import subprocess
    import sys

    from helpers import AGENT, agent_env

    server = scripted_server([{"tool_calls": [{"name": "shell",
                                               "arguments": {"command": "echo hi"}}]},
                              {"content": "done"}, {"content": "verified"}])
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, str(AGENT), "--model", "openai/scripted",
                               "--api-base", server.api_base, "-i", "go"], cwd=workspace,
                              env=agent_env(home), stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "baseagent: error: cannot write the events to stdout: No space left on device")
    assert "Traceback" not in proc.stderr
    assert len(server.requests) <= 1  # it stopped instead of working on blind
