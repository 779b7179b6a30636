"""Round three of the adversarial pass (issue 23), beyond the sandbox: grep and loader bombs,
MCP servers that misbehave, secrets in what the library returns, a full disk, bad inputs.
End to end through the CLI (or the library Agent in-process) against the scripted server."""
from __future__ import annotations

import signal
import time

from helpers import run_agent
from reliability import finish, kill_quietly, start_agent, wait_for

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
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        run = finish(proc, timeout=20)
        assert time.monotonic() - sent < 1.5
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
