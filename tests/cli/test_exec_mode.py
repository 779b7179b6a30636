"""`baseagent exec`: the Codex exec command line, --output-schema and --image."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from baseagent.core.turn_input import image_part, load_schema, schema_problem
from baseagent.errors import InputError
from baseagent.exec_cli import ExecUsageError, parse_config_value, parse_exec_args
from helpers import run_agent

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")


# -- argv parsing (pure) --------------------------------------------------------------------

def test_parses_the_argv_the_codex_sdk_sends():
    # @openai/codex-sdk 0.163.0, resumed turn with every thread option set
    request = parse_exec_args([
        "--experimental-json", "--config", 'openai_base_url="http://h:1/v1"',
        "--model", "openai/x", "--thread-source", "user", "--sandbox", "workspace-write",
        "--cd", "/tmp/w", "--add-dir", "/tmp/a", "--add-dir", "/tmp/b",
        "--skip-git-repo-check", "--output-schema", "/tmp/s.json",
        "--config", 'model_reasoning_effort="high"',
        "--config", "sandbox_workspace_write.network_access=true",
        "--config", 'approval_policy="never"',
        "resume", "0199a213-81c0", "--image", "/tmp/a.png", "--image", "/tmp/b.png"])
    assert request.flags == {"json_output": True, "model": "openai/x",
                             "sandbox": "workspace-write", "cwd": Path("/tmp/w"),
                             "writable_roots": [Path("/tmp/a"), Path("/tmp/b")]}
    assert request.config == {"api_base": "http://h:1/v1", "reasoning_effort": "high",
                              "sandbox_network": True}
    assert request.resume_id == "0199a213-81c0" and not request.resume_last
    assert request.prompt is None  # read from stdin
    assert request.images == [Path("/tmp/a.png"), Path("/tmp/b.png")]
    assert request.output_schema == Path("/tmp/s.json")
    # every option baseagent does not act on is named on stderr; approval_policy is not
    # (baseagent never asks for approval, which is what a headless client wants)
    assert any("--thread-source" in n for n in request.notices)
    assert not any("model_reasoning_effort" in n for n in request.notices)  # a setting now
    assert not any("sandbox_workspace_write.network_access" in n for n in request.notices)
    assert not any("approval_policy" in n for n in request.notices)


def test_prompt_positional_resume_last_and_short_options():
    request = parse_exec_args(["-m", "openai/y", "-C", "dir", "-i", "a.png,b.png",
                               "resume", "--last", "follow up", "--json"])
    assert request.resume_last and request.resume_id is None
    assert request.prompt == "follow up"
    assert request.images == [Path("a.png"), Path("b.png")]
    assert request.flags["json_output"] is True
    assert parse_exec_args(["--", "--not-an-option"]).prompt == "--not-an-option"
    assert parse_exec_args(["-"]).prompt == "-"
    assert parse_exec_args(["--model=openai/z", "hi"]).flags["model"] == "openai/z"


def test_config_keys_and_values():
    request = parse_exec_args(["-c", "model=gpt-4.1", "-c", "max_iterations=7",
                               "-c", "model_context_window=50000", "-c", "verify=false",
                               "-c", 'sandbox_mode="read-only"', "x"])
    assert request.config == {"model": "gpt-4.1", "max_iterations": 7, "context_window": 50000,
                              "verify": False, "sandbox": "read-only"}
    assert parse_config_value('["a", 1]') == ["a", 1]
    assert parse_config_value("plain words") == "plain words"


@pytest.mark.parametrize("argv, message", [
    (["--bogus"], "unknown option '--bogus'"),
    (["-x", "hi"], "unknown option '-x'"),
    (["--model"], "option --model needs a value"),
    (["--json=yes"], "option --json takes no value"),
    (["resume"], "resume needs a THREAD_ID"),
    (["--last", "hi"], "--last only goes with resume"),
    (["one", "two"], "unexpected argument 'two'"),
    (["-c", "novalue"], "--config expects KEY=VALUE"),
])
def test_bad_argv_is_a_usage_error(argv, message):
    with pytest.raises(ExecUsageError, match=message):
        parse_exec_args(argv)


# -- output schema and images (pure) --------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"},
                                           "kind": {"enum": ["a", "b"]}},
          "required": ["n"]}


@pytest.mark.parametrize("text, problem", [
    ('{"n": 3}', None),
    ('  {"n": 3, "kind": "a"}\n', None),
    ('```json\n{"n": 3}\n```', "not valid JSON"),
    ("Here it is: 3", "not valid JSON"),
    ('{"kind": "a"}', "'n' is a required property"),
    ('{"n": "3"}', "at n: '3' is not of type 'integer'"),
    ('{"n": 1, "kind": "c"}', "at kind: 'c' is not one of"),
    (None, "not valid JSON"),
])
def test_schema_problem(text, problem):
    found = schema_problem(text, SCHEMA)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_load_schema_and_image_part_errors(tmp_path):
    good = tmp_path / "s.json"
    good.write_text(json.dumps(SCHEMA))
    assert load_schema(good) == SCHEMA
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "no-such-type"}')
    with pytest.raises(InputError, match="not a valid JSON schema"):
        load_schema(bad)
    (tmp_path / "list.json").write_text("[1]")
    with pytest.raises(InputError, match="must be a JSON object"):
        load_schema(tmp_path / "list.json")
    with pytest.raises(InputError, match="cannot read output schema"):
        load_schema(tmp_path / "missing.json")

    png = tmp_path / "p.png"
    png.write_bytes(PNG)
    part = image_part(png)
    assert part["type"] == "image_url"
    assert part["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InputError, match="unsupported image type"):
        image_part(tmp_path / "notes.txt")
    with pytest.raises(InputError, match="cannot read image"):
        image_part(tmp_path / "gone.png")


# -- the real CLI ---------------------------------------------------------------------------

def test_unknown_flag_is_one_line_on_stderr_and_exit_2(tmp_path):
    run = run_agent(["exec", "--json", "--no-such-flag", "hi"], cwd=tmp_path, home=tmp_path,
                    parse=False)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.strip().splitlines() == [
        "baseagent exec: error: unknown option '--no-such-flag' (see --help)"]
    missing = run_agent(["exec", "--json", "--image", str(tmp_path / "nope.png"), "hi"],
                        cwd=tmp_path, home=tmp_path, parse=False)
    assert missing.returncode == 2 and "cannot read image" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_exec_stdin_prompt_image_and_schema_failure(scripted_server, tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    (tmp_path / "shot.png").write_bytes(PNG)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    server = scripted_server([
        {"content": '{"kind": "a"}'},          # a question: no verification round
        {"content": '{"n": "three"}'},          # after the single schema retry: still wrong
    ])
    run = run_agent(["exec", "--experimental-json", "--model", "openai/scripted",
                     "-c", f'openai_base_url="{server.api_base}"', "-c", "max_iterations=5",
                     "-c", 'model_reasoning_effort="high"', "-c", "web_search=true",
                     "--cd", str(ws),
                     "--skip-git-repo-check", "--image", str(tmp_path / "shot.png"),
                     "--output-schema", str(tmp_path / "schema.json")],
                    cwd=tmp_path, home=home, stdin="count the files\n")
    assert run.returncode == 1
    assert "note: ignoring config key 'web_search'" in run.stderr
    assert "model_reasoning_effort" not in run.stderr  # understood: reasoning_effort
    types = [e["type"] for e in run.events]
    assert types[:2] == ["thread.started", "turn.started"] and types[-1] == "turn.failed"
    message = run.events[-1]["error"]["message"]
    assert "does not match the output schema after a retry" in message
    assert "'three' is not of type 'integer'" in message

    first = server.requests[0]["messages"][-1]
    assert first["role"] == "user"
    assert first["content"][0]["text"].startswith("count the files\n")
    assert "<output_schema>" in first["content"][0]["text"]
    assert first["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    retry = server.requests[1]["messages"][-1]["content"]
    assert "'n' is a required property" in retry
    assert len(server.requests) == 2  # one retry, then the turn fails
