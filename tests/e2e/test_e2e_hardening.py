"""Round two of the adversarial pass (issue 14), end to end: bad paths, NUL bytes, oversized
arguments, unusable session directories, torn records, runaway output."""
from __future__ import annotations

import hashlib

import pytest

from helpers import run_agent


def write(path: str, content: str = "hi") -> dict:
    return {"name": "write_file", "arguments": {"file_path": path, "content": content}}


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("sandbox", ["danger-full-access", "workspace-write"])
def test_bad_paths_become_error_results(scripted_server, workspace, home, sandbox):
    # A 300-byte name, a NUL byte, and a valid 255-byte name (the longest a file system takes).
    longest = "n" * 255
    server = scripted_server([
        {"tool_calls": [write("a" * 300), write("x\u0000y"), write(longest)]},
        {"content": "done"}, {"content": "verified"}])
    run = run_agent(["--sandbox", sandbox, "-i", "write them"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    changes = run.completed_items("file_change")
    assert [c["status"] for c in changes] == ["failed", "failed", "completed"]
    assert (workspace / longest).read_text() == "hi"
    results = tool_results(server.requests[1])
    assert "File name too long" in results[0]
    assert "NUL byte" in results[1]


def test_oversized_tool_arguments_are_refused_and_not_resent(scripted_server, workspace,
                                                            home):
    from baseagent.tools.registry import MAX_ARGUMENT_CHARS

    # varied text (one character repeated would be cut as a runaway reply, llm/repetition.py)
    big = "".join(hashlib.sha256(str(i).encode()).hexdigest()
                  for i in range(MAX_ARGUMENT_CHARS // 64 + 1))
    server = scripted_server([{"tool_calls": [write("big.txt", big)]},
                              {"content": "done"}, {"content": "verified"}])
    run = run_agent(["-i", "write a big file"], cwd=workspace, home=home,
                    api_base=server.api_base, timeout=120)
    assert run.returncode == 0, run.stderr
    assert not (workspace / "big.txt").exists()
    refused = run.completed_items("mcp_tool_call")  # a call the model got wrong
    assert [(c["tool"], c["status"]) for c in refused] == [("write_file", "failed")]
    assert refused[0]["arguments"]["omitted"].endswith(" characters")
    assert "over the limit" in tool_results(server.requests[1])[0]
    # the refused arguments are not sent back to the provider with every later call
    calls = [m for m in server.requests[1]["messages"] if m.get("tool_calls")]
    assert calls[0]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert len(run.stdout) < 100_000


def test_nul_in_the_instruction_is_a_usage_error(workspace, home):
    run = run_agent(["--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1"],
                    cwd=workspace, home=home, stdin="fix\u0000this", parse=False)
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.strip() == "baseagent: error: the instruction contains a NUL byte"


def test_unusable_session_dir_is_one_line_and_exit_2(scripted_server, workspace, tmp_path):
    # HOME is a file: ~/.baseagent/sessions cannot be created (root ignores permissions, so a
    # read-only directory would not do in CI).
    home = tmp_path / "home-is-a-file"
    home.write_text("")
    server = scripted_server([{"content": "never"}])
    run = run_agent(["-i", "hi"], cwd=workspace, home=home, api_base=server.api_base,
                    parse=False)
    assert run.returncode == 2, run.stderr
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("baseagent: error: cannot write the "
                                                   "session record"), run.stderr
    assert "--no-session" in lines[0]
    assert server.requests == []


def test_sigterm_stops_a_catastrophic_python_grep(scripted_server, workspace, home):
    import time

    from reliability import kill_quietly, sigterm, start_agent, wait_for

    (workspace / "evil.txt").write_text("a" * 80 + "!\n")
    server = scripted_server([
        {"tool_calls": [{"name": "grep_files", "arguments": {"pattern": "(a|aa)+$"}}]},
        {"content": "never"}])
    proc = start_agent(["-i", "search"], cwd=workspace, home=home, api_base=server.api_base,
                       env_extra={"BASEAGENT_GREP_BACKEND": "python",
                                  "BASEAGENT_GREP_TIMEOUT_S": "120"})
    try:
        wait_for(lambda: server.requests, what="the model call")
        time.sleep(1.5)  # the search is under way
        run, took = sigterm(proc)
        assert took < 3
    finally:
        kill_quietly(proc)
    assert run.returncode == 143, run.stderr
    grep = run.completed_items("mcp_tool_call")[0]
    assert grep["status"] == "failed" and "interrupted" in grep["error"]["message"]


KEY = "sk-agent-own-key-0123456789"


def test_commands_cannot_read_the_agents_environment(scripted_server, workspace, home):
    """A command of the same user cannot read /proc/<agent>/environ: the CLI is
    non-dumpable. The agent runs without capabilities here (setpriv drops root's), as for
    any ordinary user; root's CAP_SYS_PTRACE would open every process to its commands."""
    import subprocess
    import sys

    from helpers import AGENT, agent_env
    from reliability import finish, kill_quietly

    server = scripted_server([])
    proc = subprocess.Popen(
        ["setpriv", "--bounding-set=-all", "--inh-caps=-all", sys.executable, str(AGENT),
         "--model", "openai/scripted", "--api-base", server.api_base, "-i", "look"],
        cwd=workspace, env=agent_env(home, OPENAI_API_KEY=KEY), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        reader = (f"cat /proc/{proc.pid}/environ | tr '\\0' '\\n' | grep -c OPENAI_API_KEY=;"
                  " echo status=${PIPESTATUS[0]}")
        server.extend([{"tool_calls": [{"name": "shell", "arguments": {"command": reader}}]},
                       {"content": "done"}, {"content": "verified"}])
        run = finish(proc, timeout=60)
    finally:
        kill_quietly(proc)
    assert run.returncode == 0, run.stderr
    output = run.completed_items("command_execution")[0]["aggregated_output"]
    assert "Permission denied" in output and output.endswith("0\nstatus=1\n"), output


def test_agents_md_is_read_only_from_regular_files_and_bounded(scripted_server, workspace,
                                                              home):
    import resource

    (workspace / ".git").mkdir()
    (workspace / "AGENTS.md").symlink_to("/proc/self/environ")
    sub = workspace / "sub"
    sub.mkdir()
    with open(sub / "AGENTS.md", "wb") as handle:  # 1 GiB, sparse: costs no disk
        handle.write(b"# rules\nbe brief\n")
        handle.truncate(1 << 30)
    server = scripted_server([{"content": "done"}, {"content": "verified"}])
    run = run_agent(["-i", "hi"], cwd=sub, home=home, api_base=server.api_base,
                    env_extra={"OPENAI_API_KEY": KEY}, timeout=120)
    assert run.returncode == 0, run.stderr
    context = server.requests[0]["messages"][1]["content"]
    assert KEY not in context and "OPENAI_API_KEY" not in context and "HOME=" not in context
    assert "# rules\nbe brief" in context
    assert len(context.encode()) < 40 * 1024
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert peak_kib < 900 * 1024, peak_kib  # reading all of it cost over 2 GB
