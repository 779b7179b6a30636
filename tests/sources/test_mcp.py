"""MCP servers as tool sources: real servers over stdio and streamable HTTP, end to end.

The servers are real: `mcp-server-time` from PyPI, and tests/mcp_servers/demo_server.py
written with the official SDK (run over stdio, or over HTTP on 127.0.0.1 behind a bearer
token). The agent is the real CLI against the scripted model server.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from baseagent import Agent
from baseagent.config.load import ConfigError, load_settings
from baseagent.config.sources import McpServerConfig
from baseagent.mcp import launch
from baseagent.mcp.tools import (MAX_NAME_LENGTH, check_arguments, qualified_name,
                                 result_text, select)
from baseagent.testing.deterministic import DeterministicClient
from baseagent.tools.tool import ToolArgumentsError
from helpers import run_agent
from mcp_helpers import (DEMO_SERVER, demo, free_port, processes_with, stop, wait_gone,
                         wait_listening, write_config)
from reliability import finish, kill_quietly, session_records, start_agent, wait_for

BUILTINS = ["shell", "read_file", "write_file", "apply_patch", "grep_files", "list_dir",
            "update_plan"]
DEMO_TOOLS = ["add", "crash", "daemon", "echo", "fail", "flood_stderr", "reject", "slow",
              "spawn_child"]
SLOW_START = 60  # a server imports the SDK (seconds, more on a loaded machine)


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def items_by_tool(run) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for item in run.completed_items("mcp_tool_call"):
        out.setdefault(item["tool"], []).append(item)
    return out


def tool_names(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


@pytest.fixture
def http_server(tmp_path):
    """The demo server over streamable HTTP on 127.0.0.1, behind a bearer token."""
    port, token = free_port(), f"mcp-token-{uuid.uuid4().hex}"
    log = open(tmp_path / "http_server.log", "w")
    proc = subprocess.Popen([sys.executable, str(DEMO_SERVER), "http", str(port), token],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", token
    finally:
        stop(proc)
        log.close()


# -- end to end ----------------------------------------------------------------------------

def test_stdio_and_http_servers_give_the_model_tools_and_the_jsonl_items(
        scripted_server, workspace, home, tmp_path, http_server):
    url, token = http_server
    tag = f"tag-{uuid.uuid4().hex}"
    config = write_config(tmp_path / "config.toml", {"mcp_servers": {
        "time": {"command": sys.executable,  # -X TAG: a mark CPython ignores
                 "args": ["-X", tag, "-m", "mcp_server_time", "--local-timezone", "UTC"],
                 "startup_timeout_sec": SLOW_START},
        "demo": demo("stdio", tag, startup_timeout_sec=SLOW_START),
        "web": {"url": url, "bearer_token_env_var": "WEB_MCP_AUTH",
                "startup_timeout_sec": SLOW_START, "enabled_tools": ["add", "echo", "fail"],
                "disabled_tools": ["fail"]},
    }})
    server = scripted_server([
        {"tool_calls": [call("mcp__time__get_current_time", timezone="UTC"),
                        call("mcp__demo__add", a=2, b=40),
                        call("mcp__web__echo", text=f"my token is {token}"),
                        call("mcp__demo__fail", reason="no luck today"),
                        call("mcp__demo__add", a="two")]},
        {"content": "done"},
    ])
    run = run_agent(["-i", "use the tools", "--no-verify", "--config", str(config)],
                    cwd=workspace, home=home, api_base=server.api_base, timeout=180,
                    env_extra={"WEB_MCP_AUTH": token})
    assert run.returncode == 0, run.stderr
    assert not run.of_type("error"), run.of_type("error")

    # the model sees every server's tools, after the built-in ones, in a stable order
    assert tool_names(server.requests[0]) == BUILTINS + [
        "mcp__time__convert_time", "mcp__time__get_current_time",
        *(f"mcp__demo__{t}" for t in DEMO_TOOLS), "mcp__web__add", "mcp__web__echo"]
    assert tool_names(server.requests[1]) == tool_names(server.requests[0])

    items = items_by_tool(run)
    now = items["get_current_time"][0]
    assert (now["server"], now["status"], now["arguments"]) == ("time", "completed",
                                                               {"timezone": "UTC"})
    assert json.loads(now["result"]["content"][0]["text"])["timezone"] == "UTC"
    assert now["result"]["structured_content"]["timezone"] == "UTC"
    added, bad = items["add"]
    assert (added["server"], added["status"]) == ("demo", "completed")
    assert added["result"]["content"] == [{"type": "text", "text": "42"}]
    assert bad["status"] == "failed" and "invalid arguments for mcp__demo__add" in \
        bad["error"]["message"] and "'two' is not of type 'integer'" in bad["error"]["message"]
    echoed = items["echo"][0]
    assert (echoed["server"], echoed["status"]) == ("web", "completed")  # the token worked
    assert echoed["result"]["content"][0]["text"] == "echo: my token is [REDACTED]"
    failed = items["fail"][0]
    assert failed["status"] == "failed" and "no luck today" in failed["error"]["message"]
    assert failed["result"]["content"][0]["text"].endswith("no luck today")

    # results go back to the model paired with their calls
    results = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert results[1] == "42" and "no luck today" in results[3]
    assert results[3].startswith("Error:") and results[4].startswith("Error: invalid arguments")
    # the configured token is a secret: never in the JSONL, stderr or session record
    thread = run.events[0]["thread_id"]
    record = (home / ".baseagent" / "sessions" / f"{thread}.jsonl").read_text()
    assert token not in run.stdout and token not in run.stderr and token not in record
    assert not wait_gone(processes_with(tag)), "an MCP server outlived the run"


def test_failing_servers_leave_the_run_going(scripted_server, workspace, home, tmp_path):
    tag = f"tag-{uuid.uuid4().hex}"
    child_pid_file = workspace / "child.pid"
    config = write_config(tmp_path / "config.toml", {"mcp_servers": {
        "gone": demo("exit", tag, startup_timeout_sec=SLOW_START),
        "stuck": demo("hang", tag, startup_timeout_sec=2),
        "flaky": demo("stdio", tag, startup_timeout_sec=SLOW_START, tool_timeout_sec=1.5,
                      enabled_tools=["slow", "crash", "spawn_child", "echo"],
                      disabled_tools=["echo"]),
        "parked": demo("stdio", tag, enabled=False),
    }})
    server = scripted_server([
        {"tool_calls": [call("mcp__flaky__spawn_child", pid_file=str(child_pid_file)),
                        call("mcp__flaky__slow", seconds=30),
                        call("mcp__flaky__crash"),
                        call("mcp__flaky__slow", seconds=0),
                        call("mcp__stuck__echo", text="hi")]},
        {"content": "done despite the servers"},
    ])
    run = run_agent(["-i", "go", "--no-verify", "--config", str(config)], cwd=workspace,
                    home=home, api_base=server.api_base, timeout=180)
    assert run.returncode == 0, run.stderr
    assert run.final_message == "done despite the servers"
    notices = [e["message"] for e in run.of_type("error")]
    assert notices == [
        "MCP server 'gone' failed to start: the server closed the connection before it was "
        "ready (did it exit?) (stderr: demo_server: refusing to start: missing configuration);"
        " continuing without it",
        "MCP server 'stuck' failed to start: did not start within 2s (startup_timeout_sec); "
        "continuing without it"]
    assert tool_names(server.requests[0]) == BUILTINS + [
        "mcp__flaky__crash", "mcp__flaky__slow", "mcp__flaky__spawn_child"]

    spawned, timed_out, crashed, after, unknown = run.completed_items("mcp_tool_call")
    assert spawned["status"] == "completed"
    assert timed_out["status"] == "failed" and timed_out["error"]["message"] == (
        "Error: MCP tool slow of server 'flaky' did not answer within 1.5s (tool_timeout_sec)")
    assert crashed["status"] == "failed" and crashed["error"]["message"].startswith(
        "Error: MCP server 'flaky' stopped during the call to crash (connection closed)")
    assert after["status"] == "failed" and "MCP server 'flaky' is not running" in \
        after["error"]["message"]
    assert unknown["server"] == "baseagent" and "unknown tool 'mcp__stuck__echo'" in \
        unknown["error"]["message"]
    grandchild = int(child_pid_file.read_text())
    assert not wait_gone(processes_with(tag) + [grandchild]), "a server process survived"


def test_sigterm_during_a_call_stops_the_servers_and_their_children(
        scripted_server, workspace, home, tmp_path):
    tag = f"tag-{uuid.uuid4().hex}"
    child_pid_file, started = workspace / "child.pid", workspace / "slow.started"
    config = write_config(tmp_path / "config.toml", {"mcp_servers": {
        "demo": demo("stdio", tag, startup_timeout_sec=SLOW_START)}})
    server = scripted_server([
        {"tool_calls": [call("mcp__demo__spawn_child", pid_file=str(child_pid_file)),
                        call("mcp__demo__slow", seconds=120, started_file=str(started))]},
        {"content": "never"},
    ])
    proc = start_agent(["-i", "go", "--no-verify", "--config", str(config)], cwd=workspace,
                       home=home, api_base=server.api_base)
    try:
        wait_for(started.exists, timeout=120, what="the slow call to start")
        assert processes_with(tag)
        proc.send_signal(signal.SIGTERM)
        run = finish(proc, timeout=60)
    finally:
        kill_quietly(proc)
    assert run.returncode == 143, run.stderr
    slow = run.completed_items("mcp_tool_call")[1]
    assert slow["status"] == "failed" and "interrupted" in slow["error"]["message"]
    assert run.events[-1]["type"] == "turn.failed"
    grandchild = int(child_pid_file.read_text())
    assert not wait_gone(processes_with(tag) + [grandchild]), "a server process survived"


def test_mcp_list_starts_each_server_and_shows_its_tools(workspace, home, tmp_path):
    tag = f"tag-{uuid.uuid4().hex}"
    config = write_config(tmp_path / "config.toml", {"mcp_servers": {
        "demo": demo("stdio", tag, startup_timeout_sec=SLOW_START,
                      disabled_tools=["crash", "spawn_child", "daemon", "flood_stderr",
                                      "reject"]),
        "gone": demo("exit", tag, startup_timeout_sec=SLOW_START),
        "parked": {"command": "never-started", "enabled": False},
    }})
    run = run_agent(["--config", str(config), "mcp", "list"], cwd=workspace, home=home,
                    parse=False, timeout=120)
    assert run.returncode == 1, run.stderr  # a server failed to start
    lines = run.stdout.splitlines()
    assert lines[0].startswith("demo (stdio: ") and lines[0].endswith(": ready, 4 tool(s)")
    assert lines[1].split() == ["add", "as", "mcp__demo__add", "Add", "two", "integers."]
    assert [line.split()[0] for line in lines[1:5]] == ["add", "echo", "fail", "slow"]
    assert lines[5].startswith("gone (stdio: ") and "failed: the server closed" in lines[5]
    assert lines[6] == "parked (stdio: never-started): disabled"
    listed = run_agent(["--config", str(config), "mcp", "list", "--json"], cwd=workspace,
                       home=home, parse=False, timeout=120)
    reports = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(r["name"], r["status"]) for r in reports] == [
        ("demo", "ready"), ("gone", "failed"), ("parked", "disabled")]
    assert reports[0]["tools"][0] == {"tool": "add", "name": "mcp__demo__add",
                                      "description": "Add two integers."}
    assert not wait_gone(processes_with(tag))


def test_a_missing_sdk_is_one_notice_and_the_run_goes_on(scripted_server, workspace, home,
                                                         tmp_path):
    blocker = tmp_path / "blocker" / "mcp"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('mcp is not installed here')\n")
    config = write_config(tmp_path / "config.toml", {"mcp_servers": {"demo": demo()}})
    server = scripted_server([{"content": "fine without it"}])
    run = run_agent(["-i", "go", "--no-verify", "--config", str(config)], cwd=workspace,
                    home=home, api_base=server.api_base, timeout=150,
                    env_extra={"PYTHONPATH": str(blocker.parent)})
    assert run.returncode == 0, run.stderr
    assert [e["message"] for e in run.of_type("error")] == [
        "MCP server 'demo' failed to start: the `mcp` package is not installed (pip install "
        "'baseagent[mcp]', or pip install 'mcp>=2.3,<3'); continuing without it"]
    assert tool_names(server.requests[0]) == BUILTINS


def test_library_agent_starts_and_closes_its_servers(workspace):
    tag = f"tag-{uuid.uuid4().hex}"
    model = DeterministicClient([{"tool_calls": [call("mcp__demo__echo", text="hello")]},
                                 {"content": "ok"}])
    agent = Agent(model_client=model, cwd=workspace, session=False, verify=False,
                  env={"PATH": os.environ["PATH"]}, enabled_toolsets=["read"],
                  mcp_servers={"demo": demo("stdio", tag, startup_timeout_sec=SLOW_START)})
    try:
        result = agent.run("echo hello")
        assert result.ok
        echo = result.items[0]
        assert (echo.server, echo.tool, echo.status) == ("demo", "echo", "completed")
        assert echo.result.content == [{"type": "text", "text": "echo: hello"}]
        assert processes_with(tag), "the server runs while the agent is open"
        assert [t["function"]["name"] for t in model.tools_seen[0]][:3] == \
            ["read_file", "grep_files", "list_dir"]
    finally:
        agent.close()
    assert not wait_gone(processes_with(tag))


# -- configuration -------------------------------------------------------------------------

@pytest.mark.parametrize("table, fragment", [
    ('comand = "x"', "mcp_servers.s.comand: unknown key"),
    ('command = "x"\nurl = "http://h/mcp"', "give `command` (a stdio server) or `url`"),
    ("args = []", "give `command` (a stdio server) or `url`"),
    ('command = "x"\nbearer_token_env_var = "T"', "bearer_token_env_var do(es) not apply"),
    ('url = "http://h/mcp"\nenv = { A = "b" }', "env do(es) not apply to a streamable HTTP"),
    ('url = "ftp://h"', "url must start with http:// or https://"),
    ('command = "x"\nstartup_timeout_sec = 0', "mcp_servers.s.startup_timeout_sec"),
])
def test_bad_server_tables_are_one_line_naming_the_key(tmp_path, table, fragment):
    path = tmp_path / "config.toml"
    path.write_text(f"[mcp_servers.s]\n{table}\n")
    with pytest.raises(ConfigError) as info:
        load_settings({}, env={}, config_file=path)
    assert fragment in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_a_bad_server_name_is_rejected(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[mcp_servers."my server"]\ncommand = "x"\n')
    with pytest.raises(ConfigError, match="'my server' is not a valid name"):
        load_settings({}, env={}, config_file=path)


def test_codex_tables_load_unchanged(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("""
[mcp_servers.docs]
command = "docs-server"
args = ["--port", "4000"]
env = { "API_KEY" = "value" }
env_vars = ["API_KEY2"]
cwd = "/srv/docs"
startup_timeout_sec = 20
tool_timeout_sec = 30
enabled_tools = ["search", "summarize"]
disabled_tools = ["search"]

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "ENV_VAR"
http_headers = { "HEADER_NAME" = "HEADER_VALUE" }
env_http_headers = { "HEADER_NAME" = "ENV_VAR" }
enabled = false
""")
    servers = load_settings({}, env={}, config_file=path).mcp_servers
    assert servers["docs"].transport == "stdio" and servers["docs"].tool_timeout_sec == 30
    assert servers["figma"].transport == "streamable_http" and not servers["figma"].enabled


# -- pure parts ----------------------------------------------------------------------------

def test_qualified_names_are_sanitised_short_and_unique():
    taken = {"shell"}
    assert qualified_name("time", "get_current_time", taken) == "mcp__time__get_current_time"
    assert qualified_name("my-srv", "do.this thing", taken) == "mcp__my-srv__do_this_thing"
    clash = qualified_name("my-srv", "do_this thing", taken)  # sanitises to the same name
    assert clash != "mcp__my-srv__do_this_thing" and clash.startswith("mcp__my-srv__do_this_")
    long = qualified_name("server", "t" * 100, taken)
    assert len(long) == MAX_NAME_LENGTH and long.startswith("mcp__server__ttt")
    assert qualified_name("server", "t" * 100, set()) == long  # stable across runs
    assert len(taken) == 5


def test_enabled_then_disabled_tools():
    assert select(["a", "b", "c"], None, []) == ["a", "b", "c"]
    assert select(["a", "b", "c"], ["a", "c"], ["c"]) == ["a"]
    assert select(["a", "b"], [], []) == []


def test_result_text_for_the_model():
    assert result_text([{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
                       None) == "one\ntwo"
    assert result_text([{"type": "image", "data": "AAAA", "mimeType": "image/png"}], None) \
        == "[image: image/png, ~3 bytes]"
    assert result_text([{"type": "resource", "resource": {"uri": "f://a", "text": "body"}}],
                       None) == "body"
    assert result_text([], {"answer": 42}) == '{\n  "answer": 42\n}'


def test_arguments_are_checked_against_the_input_schema():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert check_arguments("t", schema, {"n": 1}) == {"n": 1}
    with pytest.raises(ToolArgumentsError, match="'n' is a required property"):
        check_arguments("t", schema, {})
    assert check_arguments("t", {"type": "bogus-type"}, {"x": 1}) == {"x": 1}  # unusable


def test_server_environment_headers_and_secrets():
    env = {"PATH": "/bin", "HOME": "/h", "OPENAI_API_KEY": "sk-parent-secret",
           "EXTRA_TOKEN": "tok-passed-through", "UNRELATED": "x", "HDR": "header-secret-value",
           "BEARER": "bearer-secret-value"}
    stdio = McpServerConfig(command="srv", env={"SERVICE_API_KEY": "configured-secret"},
                            env_vars=["EXTRA_TOKEN"])
    started = launch.server_env(stdio, env, "m1")
    assert started == {"PATH": "/bin", "HOME": "/h", "EXTRA_TOKEN": "tok-passed-through",
                       "SERVICE_API_KEY": "configured-secret", launch.MARKER_VAR: "m1"}
    assert sorted(launch.secret_values(stdio, env)) == ["configured-secret",
                                                        "tok-passed-through"]
    http = McpServerConfig(url="https://x/mcp", bearer_token_env_var="BEARER",
                           http_headers={"authorization": "old", "X-Team": "core"},
                           env_http_headers={"X-Key": "HDR", "X-Unset": "NOPE"})
    assert launch.http_headers(http, env) == {"X-Team": "core", "X-Key": "header-secret-value",
                                              "Authorization": "Bearer bearer-secret-value"}
    assert sorted(launch.secret_values(http, env)) == ["bearer-secret-value",
                                                       "header-secret-value", "old"]
    with pytest.raises(launch.LaunchError, match="BEARER is not set"):
        launch.http_headers(http, {})


def test_child_processes_are_found_by_their_marker(tmp_path):
    from baseagent.tools.procs import children_with_env

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                            env={**os.environ, "MARK_TEST": "abc123"})
    try:
        wait_for(lambda: children_with_env("MARK_TEST", "abc123") == [proc.pid], timeout=10,
                 what="the child to be found")
        assert children_with_env("MARK_TEST", "other") == []
    finally:
        proc.kill()
        proc.wait()


def test_later_layers_merge_into_server_tables(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[mcp_servers.docs]\ncommand = "docs-server"\ntool_timeout_sec = 30\n')
    s = load_settings({"mcp_servers": {"docs": {"enabled": False},
                                       "web": {"url": "https://x/mcp"}}},
                      env={}, config_file=path)
    docs = s.mcp_servers["docs"]
    assert (docs.command, docs.tool_timeout_sec, docs.enabled) == ("docs-server", 30, False)
    assert s.mcp_servers["web"].url == "https://x/mcp"


def test_exec_takes_codex_dotted_server_keys():
    from baseagent.exec_cli import parse_exec_args

    request = parse_exec_args([
        "--experimental-json", "-c", 'mcp_servers.web.url="http://127.0.0.1:9/mcp"',
        "-c", "mcp_servers.web.tool_timeout_sec=120",
        "-c", 'mcp_servers.time={command="uvx", args=["mcp-server-time"]}',
        "-c", 'tools=["read"]', "hi"])
    assert request.config == {
        "mcp_servers": {"web": {"url": "http://127.0.0.1:9/mcp", "tool_timeout_sec": 120},
                        "time": {"command": "uvx", "args": ["mcp-server-time"]}},
        "enabled_toolsets": ["read"]}
    assert request.notices == []
