"""The flags people bring from Codex and Claude Code on the main command (--full-auto,
--yolo, --image, -c KEY=VALUE, --continue), an unknown option named as such, shell
completion, and --help telling the defaults as they apply. Runs the real agent.py."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from helpers import AGENT, agent_env, run_agent, run_on_pty

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\r")
# the smallest PNG there is: one transparent pixel
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6300010000050001"
                    "0d0a2db40000000049454e44ae426082")


@pytest.mark.parametrize("typed,named", [
    (["--foo", "bar", "do the task"], "no such option: --foo"),
    (["--foo", "do the task"], "no such option: --foo"),
    (["do the task", "--foo"], "no such option: --foo"),
    (["--foo", "bar", "sessions"], "no such option: --foo"),
    (["--ful", "task"], "no such option: --ful (did you mean --full-auto?)"),
])
def test_an_unknown_option_is_named_whatever_follows_it(typed, named, workspace, home):
    run = run_agent(typed, cwd=workspace, home=home, parse=False)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [f"baseagent: error: {named} (see --help)"]


def test_the_flags_of_codex_exist_on_the_main_command(workspace, home):
    for typed, message in [
        (["--full-auto", "--yolo", "-i", "x"], "give --full-auto or --yolo, not both"),
        (["--yolo", "--sandbox", "read-only", "-i", "x"],
         "--yolo sets the sandbox and the approval policy: give it or --sandbox, not both"),
        (["--full-auto", "-a", "never", "-i", "x"], "give it or --ask-for-approval"),
        (["--image", "missing.png", "explain"], "--image: cannot read image"),
        (["-c", "nokeyvalue", "-i", "x"], "-c expects KEY=VALUE"),
        (["--resume-last", "--continue", "-i", "x"], "not both"),
    ]:
        run = run_agent(typed, cwd=workspace, home=home, parse=False)
        assert run.returncode == 2, (typed, run.stderr)
        assert message in run.stderr and "quote the task" not in run.stderr, run.stderr


def test_image_and_config_override_reach_the_model(scripted_server, workspace, home):
    (workspace / "shot.png").write_bytes(PNG)
    server = scripted_server([{"content": "A pixel."}])
    # -c under the flags: the model comes from -c, the api base from the flag
    run = run_agent(["-c", "model=openai/from-c", "-c", "verify=false", "-c",
                     "no_such_key=1", "--api-base", server.api_base, "--image", "shot.png",
                     "what is this"], cwd=workspace, home=home)
    assert run.returncode == 0, run.stderr
    assert "ignoring config key 'no_such_key'" in run.stderr
    request = server.requests[0]
    assert request["model"] == "from-c"
    user = [m for m in request["messages"] if m["role"] == "user"][-1]
    assert {p["type"] for p in user["content"]} == {"text", "image_url"}, user
    assert len(server.requests) == 1  # verify=false from -c


def test_yolo_and_c_settle_the_sandbox_a_terminal_run_shows(scripted_server, workspace, home):
    server = scripted_server([{"content": "Done."}, {"content": "Done."}])
    base = ["--model", "openai/scripted", "--api-base", server.api_base, "--no-verify",
            "--no-session"]
    code, raw = run_on_pty([*base, "--yolo", "-i", "go"], workspace, home)
    screen = ANSI.sub("", raw)
    assert code == 0, screen
    assert "sandbox danger-full-access" in screen
    code, raw = run_on_pty([*base, "-c", "sandbox_mode=read-only", "-i", "go"], workspace, home)
    screen = ANSI.sub("", raw)
    assert code == 0, screen
    assert "sandbox read-only" in screen


def test_continue_takes_this_workspaces_thread_and_resume_last_names_another(
        scripted_server, tmp_path, home):
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    server = scripted_server([{"content": "one"}, {"content": "two"}, {"content": "three"},
                              {"content": "four"}])
    base = ["--no-verify"]
    first = run_agent([*base, "-i", "in here"], cwd=here, home=home, api_base=server.api_base)
    second = run_agent([*base, "-i", "in there"], cwd=there, home=home,
                       api_base=server.api_base)
    assert first.returncode == second.returncode == 0
    here_id, there_id = first.events[0]["thread_id"], second.events[0]["thread_id"]

    last = run_agent([*base, "--resume-last", "-i", "go on"], cwd=here, home=home)
    assert last.returncode == 0, last.stderr
    assert last.events[0]["thread_id"] == there_id
    assert f"baseagent: --resume-last: thread {there_id} of workspace {there} (not this " \
           f"directory" in last.stderr

    cont = run_agent([*base, "--continue", "-i", "go on"], cwd=here, home=home)
    assert cont.returncode == 0, cont.stderr
    assert cont.events[0]["thread_id"] == here_id
    assert "in here" in json.dumps(server.requests[-1]["messages"])

    empty = tmp_path / "empty"
    empty.mkdir()
    none = run_agent([*base, "--continue", "-i", "x"], cwd=empty, home=home, parse=False)
    assert none.returncode == 2
    assert f"no thread recorded in {empty} to continue" in none.stderr


def test_completion_scripts(workspace, home):
    for shell, marker in [("bash", "complete -o default -F _baseagent_completion baseagent"),
                          ("zsh", "#compdef baseagent"), ("fish", "complete --command baseagent")]:
        run = run_agent(["completion", shell], cwd=workspace, home=home, parse=False)
        assert run.returncode == 0 and marker in run.stdout, run.stderr
    bad = run_agent(["completion", "tcsh"], cwd=workspace, home=home, parse=False)
    assert bad.returncode == 2 and "choose from bash, zsh, fish" in bad.stderr
    # what the bash script asks the program: the words completed
    env = agent_env(home, COMP_WORDS="baseagent --full", COMP_CWORD="1",
                    _BASEAGENT_COMPLETE="complete_bash")
    asked = subprocess.run([sys.executable, str(AGENT)], cwd=workspace, env=env,
                           capture_output=True, text=True, timeout=60)
    assert asked.returncode == 0 and asked.stdout.split() == ["--full-auto"], asked.stderr
    env.update(COMP_WORDS="baseagent sess")
    asked = subprocess.run([sys.executable, str(AGENT)], cwd=workspace, env=env,
                           capture_output=True, text=True, timeout=60)
    assert asked.stdout.split() == ["sessions"]


def test_help_tells_the_defaults_as_they_apply(workspace, home):
    run = run_agent(["--help"], cwd=workspace, home=home, parse=False,
                    env_extra={"COLUMNS": "200"})
    text = " ".join(run.stdout.split())
    assert "danger-full-access (default)" not in text
    assert "Default: workspace-write when a person is at the terminal" in text
    assert "danger-full-access headless" in text
    for flag in ("--full-auto", "--yolo, --dangerously-bypass-approvals-and-sandbox",
                 "--image FILE", "-c KEY=VALUE", "--continue", "completion bash|zsh|fish"):
        assert flag in text, flag


def _record(directory, thread_id: str, cwd: str, end: dict) -> None:
    records = [{"kind": "meta", "thread_id": thread_id, "model": "openai/x", "cwd": cwd,
                "ts": "2026-11-28T09:00:00Z"},
               {"kind": "event", "event": {"type": "turn.started"}},
               {"kind": "event", "event": end}]
    (directory / f"{thread_id}.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records))


def test_sessions_list_limit_workspace_and_interrupted(workspace, home):
    directory = home / ".baseagent" / "sessions"
    directory.mkdir(parents=True)
    for n in range(3):
        _record(directory, f"01a00000-0000-7000-8000-00000000000{n}", f"{home}/proj{n}",
                {"type": "turn.completed", "usage": {}})
    _record(directory, "01a00000-0000-7000-8000-000000000009", "/srv/work",
            {"type": "turn.failed", "error": {"message": "interrupted (SIGINT)"}})
    listed = run_agent(["sessions", "list", "--limit", "2"], cwd=workspace, home=home,
                       parse=False)
    assert listed.returncode == 0, listed.stderr
    lines = [line for line in listed.stdout.splitlines() if not line.startswith("  ↳")]
    assert lines[0].split() == ["THREAD", "ID", "UPDATED", "TURNS", "STATUS", "MODEL",
                                "WORKSPACE", "FIRST", "INSTRUCTION"]
    assert len(lines) == 3 and "interrupted" in lines[1] and "/srv/work" in lines[1]
    assert "~/proj2" in lines[2]
    assert "the newest 2 of 4 threads" in listed.stderr
    every = run_agent(["sessions", "list"], cwd=workspace, home=home, parse=False)
    assert every.stdout.count("openai/x") == 4 and every.stderr == ""

    nothing = run_agent(["sessions", "rm", "--older-than", "30"], cwd=workspace, home=home,
                        parse=False)
    assert nothing.returncode == 0 and nothing.stdout == ""
    assert "no record older than 30 days: nothing removed" in nothing.stderr


def test_a_first_run_without_a_key_names_the_ways_on(workspace, home):
    run = run_agent(["-i", "hi"], cwd=workspace, home=home, parse=False,
                    env_extra={"OPENAI_API_KEY": ""})
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert line.startswith("baseagent: error: missing API key for openai: set OPENAI_API_KEY")
    assert "--oss" in line and "offline demo" in line
