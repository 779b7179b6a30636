"""`-p/--profile NAME` on the real CLI (the main command and Codex's `exec`): the config
file's `[profiles.NAME]` table chooses the model and API base the run reaches, flags still
win, and an unknown profile is one line and exit code 2. The loader's rules themselves:
tests/core/test_config_profiles.py."""
from __future__ import annotations

from pathlib import Path

from helpers import run_agent


def write_config(home: Path, api_base: str) -> None:
    """~/.baseagent/config.toml whose top level points nowhere: only a profile reaches the
    scripted server."""
    (home / ".baseagent").mkdir(exist_ok=True)
    (home / ".baseagent" / "config.toml").write_text(f"""\
model = "openai/top-level"
api_base = "http://127.0.0.1:9/v1"
max_iterations = 40

[profiles.local]
model = "openai/from-profile"
api_base = "{api_base}"
verify = false

[profiles.other]
model = "openai/other-profile"
api_base = "{api_base}"
verify = false
session_dir = "~/other-sessions"
""", encoding="utf-8")


def test_main_cli_profile_picks_model_and_api_base(scripted_server, workspace, home):
    server = scripted_server([{"content": "one"}, {"content": "two"}, {"content": "three"}])
    write_config(home, server.api_base)
    first = run_agent(["-p", "local", "--json", "say hi"], cwd=workspace, home=home)
    assert first.returncode == 0, first.stderr
    assert first.of_type("turn.completed")
    # after the task, the long form; a flag beats the profile
    second = run_agent(["say hi", "--json", "--profile", "local", "-m", "openai/flagged"],
                       cwd=workspace, home=home)
    assert second.returncode == 0, second.stderr
    # BASEAGENT_PROFILE chooses one too, below the flag
    third = run_agent(["--json", "-i", "say hi"], cwd=workspace, home=home,
                      env_extra={"BASEAGENT_PROFILE": "other"})
    assert third.returncode == 0, third.stderr
    assert [r["model"] for r in server.requests] == ["from-profile", "flagged", "other-profile"]
    # the profile's session_dir took the third run's record; `sessions -p other` finds it
    listed = run_agent(["sessions", "list", "--json", "-p", "other"], cwd=workspace, home=home,
                       parse=False)
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == 1
    assert (home / "other-sessions").is_dir()


def test_exec_profile_and_config_profile(scripted_server, workspace, home):
    server = scripted_server([{"content": "a"}, {"content": "b"}])
    write_config(home, server.api_base)
    run = run_agent(["exec", "--json", "-p", "local", "hi"], cwd=workspace, home=home)
    assert run.returncode == 0, run.stderr
    assert "profile" not in run.stderr  # no longer "ignoring --profile"
    # Codex's `-c profile=NAME`; --profile wins over it
    run = run_agent(["exec", "--json", "-c", "profile=local", "--profile", "other", "hi"],
                    cwd=workspace, home=home)
    assert run.returncode == 0, run.stderr
    assert [r["model"] for r in server.requests] == ["from-profile", "other-profile"]


def test_unknown_profile_is_one_line_and_exit_2(workspace, home):
    write_config(home, "http://127.0.0.1:9/v1")
    for args, prog in ((["-p", "loacl", "-i", "hi"], "baseagent"),
                       (["exec", "--profile", "loacl", "hi"], "baseagent exec")):
        run = run_agent(args, cwd=workspace, home=home, parse=False)
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr.splitlines() == [
            f"{prog}: error: unknown profile 'loacl' (profiles in "
            f"{home}/.baseagent/config.toml: local, other)"], run.stderr
