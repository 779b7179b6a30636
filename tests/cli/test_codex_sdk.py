"""The real Codex TypeScript SDK drives `baseagent exec` (issue: proof with the real client).

`@openai/codex-sdk` (pinned in tests/codex_sdk/package.json) is installed from npm once into
tests/.npm-cache/ (git-ignored; optional platform binaries of @openai/codex are skipped:
codexPathOverride replaces them). The SDK spawns a wrapper script that runs
`agent.py "$@"`; the model is the scripted server, reached through the SDK's own
`baseUrl` and `apiKey` options. Skipped only when npm/node are missing or the registry is
unreachable.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers import AGENT, TESTS, agent_env

FIXTURE = TESTS / "codex_sdk"
CACHE = TESTS / ".npm-cache"
NPM_INSTALL_TIMEOUT_S = 300
# npm's own words for "the registry cannot be reached" (as opposed to a broken package).
NETWORK_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT",
                  "ENETUNREACH", "network", "getaddrinfo")
# A 1x1 transparent PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")


def install_sdk() -> Path:
    """node_modules with the pinned SDK, installed once per package.json content."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm/node not on PATH: cannot install @openai/codex-sdk")
    manifest = (FIXTURE / "package.json").read_bytes()
    target = CACHE / f"codex-sdk-{hashlib.sha256(manifest).hexdigest()[:12]}"
    if (target / "node_modules" / "@openai" / "codex-sdk" / "package.json").is_file():
        return target
    CACHE.mkdir(exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="install-", dir=CACHE))
    (staging / "package.json").write_bytes(manifest)
    proc = subprocess.run(
        ["npm", "install", "--omit=optional", "--no-audit", "--no-fund", "--no-package-lock",
         "--loglevel=error"],
        cwd=staging, capture_output=True, text=True, timeout=NPM_INSTALL_TIMEOUT_S)
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        if any(marker in proc.stderr for marker in NETWORK_ERRORS):
            pytest.skip(f"npm registry unreachable: {proc.stderr.strip()[-300:]}")
        pytest.fail(f"npm install failed:\n{proc.stderr}")
    try:
        staging.rename(target)  # atomic: a concurrent run either sees it whole or not at all
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)  # another run finished first
    return target


def write_wrapper(path: Path, argv_log: Path) -> None:
    """What codexPathOverride runs: log the SDK's argv, then run baseagent with it (the SDK's
    argv already starts with `exec`)."""
    path.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$@\" >> '{argv_log}'\n"
        f"printf '%s\\n' '--end--' >> '{argv_log}'\n"
        f"exec '{sys.executable}' '{AGENT}' \"$@\"\n")
    path.chmod(0o755)


def usage(prompt: int, completion: int, cached: int) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "cached_tokens": cached}


def plan(*pairs: tuple[str, str]) -> dict:
    return {"name": "update_plan",
            "arguments": {"plan": [{"step": step, "status": status} for step, status in pairs]}}


SCRIPT = [
    # turn 1: a plan, a command, the plan finished, an answer, the verification round
    {"content": "Running it.", "usage": usage(100, 10, 0),
     "tool_calls": [plan(("run the command", "in_progress"), ("report", "pending")),
                    {"name": "shell", "arguments": {"command": "echo sdk-turn-1"}},
                    # fails (a directory is in the way): the item carries path and reason
                    {"name": "write_file", "arguments": {"file_path": "adir", "content": "x"}},
                    plan(("run the command", "completed"), ("report", "completed"))]},
    {"content": "Turn one done.", "usage": usage(200, 20, 80)},
    {"content": "Turn one verified.", "usage": usage(300, 30, 160)},
    # turn 2 (resumed, with an output schema; a question, so no verification round): an
    # answer that breaks the schema, then the corrected answer after the single retry
    {"content": '{"answer": 42}', "usage": usage(500, 50, 320)},
    {"content": '{"answer": "forty-two"}', "usage": usage(600, 60, 400)},
]
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}},
          "required": ["answer"], "additionalProperties": False}


def test_codex_sdk_two_turns_with_resume(scripted_server, tmp_path):
    sdk_dir = install_sdk()
    driver = sdk_dir / "driver.mjs"
    shutil.copyfile(FIXTURE / "driver.mjs", driver)  # resolves the SDK from sdk_dir

    home, workdir, extra = tmp_path / "home", tmp_path / "ws", tmp_path / "extra"
    for d in (home, workdir, extra, workdir / "adir"):
        d.mkdir()
    image = tmp_path / "pixel.png"
    image.write_bytes(PNG)
    argv_log, wrapper = tmp_path / "argv.log", tmp_path / "codex-wrapper"
    write_wrapper(wrapper, argv_log)
    server = scripted_server(SCRIPT)

    env = agent_env(home)
    env.pop("OPENAI_API_KEY")  # the key must come from the SDK's apiKey (CODEX_API_KEY)
    proc = subprocess.run(
        ["node", str(driver), str(wrapper), str(workdir), str(extra), server.api_base,
         str(image), json.dumps(SCHEMA)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    first, second = result["first"], result["second"]

    # thread ids: a UUID from thread.started, kept by the resumed thread
    assert len(result["firstId"]) == 36 and result["secondId"] == result["firstId"]

    # turn 1: the SDK's items are our completed items, its final response the last message
    assert first["finalResponse"] == "Turn one verified."
    assert [i["type"] for i in first["items"]] == [
        "agent_message", "command_execution", "file_change", "agent_message", "agent_message",
        "todo_list"]
    # a failed file change reaches the SDK with its path and baseagent's `error` field
    failed = first["items"][2]
    assert failed["status"] == "failed"
    assert failed["changes"] == [{"path": str(workdir / "adir"), "kind": "update"}]
    assert "is a directory" in failed["error"]["message"]
    command = first["items"][1]
    assert command["command"] == "echo sdk-turn-1"
    assert command["aggregated_output"] == "sdk-turn-1\n"
    assert command["exit_code"] == 0 and command["status"] == "completed"
    assert [i["text"] for i in first["items"] if i["type"] == "agent_message"] == [
        "Running it.", "Turn one done.", "Turn one verified."]
    # the plan: one todo_list item, in its final state (the SDK keeps completed items)
    assert first["items"][-1] == {"id": "item_1", "type": "todo_list", "items": [
        {"text": "run the command", "completed": True}, {"text": "report", "completed": True}]}
    assert first["usage"] == {"input_tokens": 600, "cached_input_tokens": 240,
                              "output_tokens": 60, "cache_write_input_tokens": 0,
                              "reasoning_output_tokens": 0}

    # turn 2: resumed thread, schema-checked answer, usage cumulative over the thread
    assert json.loads(second["finalResponse"]) == {"answer": "forty-two"}
    assert [i["text"] for i in second["items"]] == ['{"answer": 42}', '{"answer": "forty-two"}']
    assert second["usage"] == {"input_tokens": 1700, "cached_input_tokens": 960,
                               "output_tokens": 170, "cache_write_input_tokens": 0,
                               "reasoning_output_tokens": 0}

    # what the model saw on the resumed turn: turn 1's history, then text + image
    requests = server.requests
    assert len(requests) == 5
    resumed = requests[3]["messages"]
    assert any(m["role"] == "user" and m["content"] == "first task" for m in resumed)
    assert any(m["role"] == "tool" and "sdk-turn-1" in m["content"] for m in resumed)
    assert resumed[-1]["role"] == "user"
    parts = resumed[-1]["content"]
    assert parts[0]["type"] == "text" and parts[0]["text"].startswith("second task")
    assert '"answer"' in parts[0]["text"]  # the schema requirement travels with the prompt
    assert parts[1]["type"] == "image_url"
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    retry = requests[4]["messages"][-1]
    assert retry["role"] == "user" and "does not match the required output schema" in \
        retry["content"] and "42 is not of type 'string'" in retry["content"]

    # the argv the SDK really sent
    runs = argv_log.read_text().split("--end--\n")[:-1]
    assert len(runs) == 2
    argv1, argv2 = runs[0].splitlines(), runs[1].splitlines()
    assert argv1 == ["exec", "--experimental-json",
                     "--config", f'openai_base_url="{server.api_base}"',
                     "--model", "openai/scripted", "--sandbox", "danger-full-access",
                     "--cd", str(workdir), "--add-dir", str(extra), "--skip-git-repo-check"]
    assert argv2[argv2.index("resume") + 1] == result["firstId"]
    assert argv2[argv2.index("--image") + 1] == str(image)
    assert "--output-schema" in argv2

    # one session record for the thread, holding both turns
    records = list((home / ".baseagent" / "sessions").glob("*.jsonl"))
    assert [p.name for p in records] == [f"{result['firstId']}.jsonl"]
