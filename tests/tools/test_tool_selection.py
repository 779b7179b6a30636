"""Toolsets, tool_choice and prompt overrides: what reaches the provider's request.

End to end through the real CLI and the scripted server (which records every request), plus
table-driven checks of the pure parts.
"""
from __future__ import annotations

import pytest

from baseagent import Agent, ConfigError
from baseagent.config.load import load_settings
from baseagent.prompts.system import SYSTEM_PROMPT, compose_system_prompt
from baseagent.tools.toolsets import builtin_names, check_tool_choice, check_toolsets
from helpers import run_agent

# Generous: these runs share two cores with everything else the suite runs.
TIMEOUT = 150
BUILTINS = ["shell", "read_file", "write_file", "apply_patch", "grep_files", "list_dir",
            "update_plan"]


def names(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


def system_message(request: dict) -> str:
    return request["messages"][0]["content"]


def read(path: str = "notes.txt") -> dict:
    return {"tool_calls": [{"name": "read_file", "arguments": {"file_path": path}}]}


# -- toolsets and tool_choice, end to end --------------------------------------------------

def test_toolsets_and_required_tool_choice_reach_the_request(scripted_server, workspace, home):
    (workspace / "notes.txt").write_text("hello\n")
    server = scripted_server([read(), {"content": "read it"}])  # no edit: no verification
    run = run_agent(["-i", "read notes.txt", "--tools", "read,shell", "--disable-tools",
                     "list_dir", "--tool-choice", "required"], cwd=workspace, home=home,
                    api_base=server.api_base, timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    first, second = server.requests
    assert names(first) == names(second) == ["shell", "read_file", "grep_files"]
    # forced until the model has called a tool in the turn, then its own choice
    assert first["tool_choice"] == "required"
    assert second["tool_choice"] == "auto"
    assert system_message(first).endswith(
        "In this run only these of the tools named above are available: shell, read_file, "
        "grep_files. Do not call the others.\n")
    assert system_message(first) == system_message(second)


def test_named_tool_choice_and_config_toolsets(scripted_server, workspace, home, tmp_path):
    (workspace / "notes.txt").write_text("hello\n")
    config = tmp_path / "config.toml"
    config.write_text('tools = ["read", "edit"]\ndisabled_tools = ["apply_patch"]\n'
                      'tool_choice = "read_file"\n')
    server = scripted_server([read(), {"content": "done"}])
    run = run_agent(["-i", "read it", "--no-verify", "--config", str(config)], cwd=workspace,
                    home=home, api_base=server.api_base, timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    first, second = server.requests
    assert names(first) == ["read_file", "write_file", "grep_files", "list_dir"]
    assert first["tool_choice"] == {"type": "function", "function": {"name": "read_file"}}
    assert second["tool_choice"] == "auto"


def test_tool_choice_none_and_no_flag(scripted_server, workspace, home):
    server = scripted_server([{"content": "no tools needed"}])
    run = run_agent(["-i", "answer", "--no-verify", "--tool-choice", "none"], cwd=workspace,
                    home=home, api_base=server.api_base, timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    assert server.requests[0]["tool_choice"] == "none" and names(server.requests[0]) == BUILTINS
    plain = scripted_server([{"content": "hi"}])
    run = run_agent(["-i", "answer", "--no-verify"], cwd=workspace, home=home,
                    api_base=plain.api_base, timeout=TIMEOUT)
    assert run.returncode == 0 and "tool_choice" not in plain.requests[0]
    assert system_message(plain.requests[0]) == SYSTEM_PROMPT  # unchanged by default


def test_no_builtin_tool_sends_no_tools(scripted_server, workspace, home):
    server = scripted_server([{"content": "fine"}])
    run = run_agent(["-i", "answer", "--no-verify", "--tools", "none", "--tool-choice",
                     "required"], cwd=workspace, home=home, api_base=server.api_base, timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    assert "tools" not in server.requests[0] and "tool_choice" not in server.requests[0]


@pytest.mark.parametrize("args, fragment", [
    (["--tools", "read,reed"], "unknown tool or toolset 'reed'"),
    (["--disable-tools", "network"], "unknown tool or toolset 'network'"),
    (["--tools", "read", "--tool-choice", "shell"], "tool_choice 'shell' is not a tool"),
    (["--tool-choice", "any tool"], "neither auto, required, none nor a tool name"),
    (["--system-prompt-file", "missing.txt"], "system_prompt_file: cannot read"),
    (["--append-system-prompt", "@missing.txt"], "append_system_prompt: cannot read"),
])
def test_bad_tool_and_prompt_flags_are_one_usage_line(workspace, home, args, fragment):
    run = run_agent(["-i", "x", *args], cwd=workspace, home=home, parse=False)
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], run.stderr


# -- prompt overrides ---------------------------------------------------------------------

def test_prompt_file_and_appended_file_are_byte_stable(scripted_server, workspace, home,
                                                       tmp_path):
    (tmp_path / "system.txt").write_text("You are a careful reviewer.\nOnly read.\n")
    (tmp_path / "extra.md").write_text("Project rule: answer in French.\n")
    (workspace / "notes.txt").write_text("bonjour\n")
    server = scripted_server([read(), {"content": "lu"}])  # no edit: no verification round
    run = run_agent(["-i", "read", "--system-prompt-file", str(tmp_path / "system.txt"),
                     "--append-system-prompt", f"@{tmp_path / 'extra.md'}", "--tools", "read"],
                    cwd=workspace, home=home, api_base=server.api_base, timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    expected = "You are a careful reviewer.\nOnly read.\n\nProject rule: answer in French.\n"
    assert [system_message(r) for r in server.requests] == [expected] * 2


def test_appended_text_follows_the_builtin_prompt(scripted_server, workspace, home):
    server = scripted_server([{"content": "ok"}])
    run = run_agent(["-i", "x", "--no-verify", "--append-system-prompt", "Be terse."],
                    cwd=workspace, home=home, api_base=server.api_base, timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    assert system_message(server.requests[0]) == SYSTEM_PROMPT + "\nBe terse.\n"


def test_library_prompt_and_toolsets(workspace):
    from baseagent.testing.deterministic import DeterministicClient

    model = DeterministicClient([{"content": "ok"}, {"content": "ok again"}])
    agent = Agent(model_client=model, cwd=workspace, session=False, verify=False,
                  system_prompt="Custom prompt.", append_system_prompt="Extra.",
                  disabled_toolsets=["shell", "edit"], tool_choice="auto")
    agent.chat("one")
    agent.chat("two")
    assert [r[0]["content"] for r in model.requests] == ["Custom prompt.\n\nExtra.\n"] * 2
    # (the default model, openai/gpt-4.1, sees images: view_image is a default tool for it)
    assert [t["function"]["name"] for t in model.tools_seen[0]] == \
        ["read_file", "grep_files", "list_dir", "update_plan", "view_image"]
    assert model.tool_choices == ["auto", "auto"]
    with pytest.raises(ConfigError, match="system_prompt or system_prompt_file, not both"):
        Agent(model_client=model, cwd=workspace, system_prompt="a",
              system_prompt_file=workspace / "b.txt")


# -- pure parts ----------------------------------------------------------------------------

@pytest.mark.parametrize("enabled, disabled, expected", [
    (None, [], BUILTINS),
    (["read"], [], ["read_file", "grep_files", "list_dir"]),
    (["edit", "shell"], [], ["shell", "write_file", "apply_patch"]),
    (None, ["edit", "list_dir"], ["shell", "read_file", "grep_files", "update_plan"]),
    (None, ["plan"], BUILTINS[:-1]),
    (["read_file", "read"], ["read"], []),
    (["none"], [], []),
    ([], [], []),
])
def test_builtin_names(enabled, disabled, expected):
    assert builtin_names(enabled, disabled) == expected


def test_toolset_and_tool_choice_checks():
    assert check_toolsets([" read ", "", "shell"]) == ["read", "shell"]
    with pytest.raises(ValueError, match="unknown tool or toolset 'x'"):
        check_toolsets(["x"])
    assert [check_tool_choice(v) for v in ("auto", "required", "none", "mcp__a__b")] == \
        ["auto", "required", "none", "mcp__a__b"]
    with pytest.raises(ValueError):
        check_tool_choice(" ")


def test_config_aliases_and_env(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('tools = ["read"]\ndisabled_tools = ["list_dir"]\n')
    s = load_settings({}, env={}, config_file=path)
    assert (s.enabled_toolsets, s.disabled_toolsets) == (["read"], ["list_dir"])
    s = load_settings({}, env={"BASEAGENT_TOOLS": "edit, shell"}, config_file=path)
    assert s.enabled_toolsets == ["edit", "shell"]
    path.write_text('tools = ["read"]\nenabled_toolsets = ["edit"]\n')
    with pytest.raises(ConfigError, match="give `tools` or `enabled_toolsets`, not both"):
        load_settings({}, env={}, config_file=path)
    path.write_text('tools = ["reed"]\n')
    with pytest.raises(ConfigError, match=r"enabled_toolsets \(tools\): unknown tool"):
        load_settings({}, env={}, config_file=path)


def test_composed_prompt_is_a_pure_function_of_its_inputs():
    assert compose_system_prompt("Base.\n", None) == "Base.\n"
    assert compose_system_prompt("Base.", "More.\n\n") == "Base.\n\nMore.\n"
    assert compose_system_prompt("Base.\n", None, []).endswith(
        "none of the tools named above is available; use only the tools you are given.\n")
