"""The command-line conventions people type first, through the real CLI (agent.py as a
subprocess against the scripted server): the task as an argument, -V / version, --config
after a command, a workspace that is a file, one line on stderr for a failed headless run,
and on a terminal a UUIDv7 thread id and the command that resumes the thread."""
from __future__ import annotations

import re
import subprocess
import sys
import uuid

from baseagent import __version__
from helpers import AGENT, agent_env, parse_jsonl, run_agent, run_on_pty

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\r")


def test_the_task_as_an_argument_runs_it(scripted_server, workspace, home):
    server = scripted_server([{"content": "Done."}])
    run = run_agent(["--no-verify", "say done"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0, run.stderr
    assert run.final_message == "Done."
    users = [m["content"] for m in server.requests[0]["messages"] if m["role"] == "user"]
    assert any("say done" in str(content) for content in users), users


def test_a_command_word_keeps_its_meaning_and_dashes_make_it_the_task(
        scripted_server, workspace, home):
    listing = run_agent(["sessions"], cwd=workspace, home=home, parse=False)
    assert listing.returncode == 0 and listing.stdout == "no sessions\n", listing.stderr
    server = scripted_server([{"content": "Done."}])
    run = run_agent(["--no-verify", "--", "sessions"], cwd=workspace, home=home,
                    api_base=server.api_base)
    assert run.returncode == 0 and run.final_message == "Done.", run.stderr
    assert server.requests[0]["messages"][-1]["content"] == "sessions"


def test_a_task_given_twice_or_unquoted_or_a_typo_is_one_line_and_exit_2(workspace, home):
    for args, error in (
            (["fix it", "-i", "fix it"], "give the task once: as the argument or with "
                                         "--instruction"),
            (["fix", "the", "test"], "unexpected argument 'the' after the task: quote the "
                                     "task as one argument (baseagent \"fix the failing "
                                     "test\")"),
            (["sesions"], "no command 'sesions' (did you mean 'sessions'? to send it as the "
                          "task: baseagent -- sesions)")):
        run = run_agent(args, cwd=workspace, home=home, parse=False)
        assert run.returncode == 2 and run.stdout == "", run.stderr
        assert run.stderr.strip().splitlines() == [f"baseagent: error: {error}"]


def test_version_three_ways(workspace, home):
    for args in (["-V"], ["--version"], ["version"]):
        run = run_agent(args, cwd=workspace, home=home, parse=False)
        assert (run.returncode, run.stdout, run.stderr) == (0, f"baseagent {__version__}\n", "")


def test_config_after_the_command_is_the_same_as_before_it(workspace, home, tmp_path):
    config = tmp_path / "mcp.toml"
    config.write_text('[mcp_servers.demo]\ncommand = "/nonexistent-mcp"\n')
    before = run_agent(["--config", str(config), "mcp", "list"], cwd=workspace, home=home,
                       parse=False)
    after = run_agent(["mcp", "list", "--config", str(config)], cwd=workspace, home=home,
                      parse=False)
    assert before.returncode == after.returncode == 1
    assert before.stdout == after.stdout == \
        "demo (stdio: /nonexistent-mcp): failed: command not found: /nonexistent-mcp\n"
    sessions = tmp_path / "elsewhere"
    (tmp_path / "s.toml").write_text(f'session_dir = "{sessions}"\n')
    missing = run_agent(["sessions", "list", "--config", str(tmp_path / "nope.toml")],
                        cwd=workspace, home=home, parse=False)
    assert missing.returncode == 2
    assert missing.stderr.strip() == \
        f"baseagent: error: config file not found: {tmp_path / 'nope.toml'}"


def test_a_workspace_that_is_a_file_is_not_a_directory(workspace, home, tmp_path):
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0\n")
    for path, error in ((a_file, "is not a directory"),
                        (tmp_path / "gone", "does not exist")):
        run = run_agent(["-C", str(path), "hi"], cwd=workspace, home=home,
                        api_base="http://127.0.0.1:9/v1", parse=False)
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr.strip() == f"baseagent: error: working directory {error}: {path}"


def test_a_failed_headless_run_says_why_on_stderr_unless_it_shares_stdout(
        scripted_server, workspace, home):
    failing = {"fault": "status", "status": 401, "message": "invalid api key"}
    server = scripted_server([failing, failing])
    run = run_agent(["hi"], cwd=workspace, home=home, api_base=server.api_base)
    assert run.returncode == 1
    failed = run.of_type("turn.failed")[0]["error"]["message"]
    assert "invalid api key" in failed
    assert run.stderr.strip().splitlines()[-1] == f"baseagent: error: {failed}"

    # 2>&1: the line would land inside the JSONL (and repeat it): not written
    both = subprocess.run([sys.executable, str(AGENT), "--model", "openai/scripted",
                           "--api-base", server.api_base, "hi"], cwd=workspace,
                          env=agent_env(home), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=60)
    assert both.returncode == 1
    events = parse_jsonl(both.stdout)  # every line an event
    assert events[-1]["type"] == "turn.failed" and "baseagent: error" not in both.stdout


def test_a_run_on_a_terminal_has_a_uuid7_thread_and_says_how_to_resume_it(
        scripted_server, workspace, home):
    server = scripted_server([{"content": "Done."}])
    code, screen = run_on_pty(["--model", "openai/scripted", "--api-base", server.api_base,
                               "--no-verify", "-i", "say done"], workspace, home)
    screen = ANSI.sub("", screen)
    assert code == 0, screen
    thread_id = re.search(r"thread ([0-9a-f-]{36})", screen).group(1)
    assert uuid.UUID(thread_id).version == 7
    assert f"To continue this thread: baseagent --resume {thread_id}" in screen
    assert (home / ".baseagent" / "sessions" / f"{thread_id}.jsonl").is_file()

    quiet = scripted_server([{"content": "Done."}])
    code, screen = run_on_pty(["--model", "openai/scripted", "--api-base", quiet.api_base,
                               "--no-verify", "--no-session", "-i", "say done"], workspace, home)
    assert code == 0 and "To continue" not in screen  # nothing recorded to resume
