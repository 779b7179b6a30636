"""Scripted CLI runs whose JSONL is kept as golden files (tests/golden/*.jsonl).

The library refactor must not change what the CLI prints: each scenario runs the real CLI
against the scripted server and its stdout, normalised (thread id, workspace path, wall
times, retry waits), must equal the stored file byte for byte.

    python tests/golden/scenarios.py --write     # regenerate (only when a change is meant)
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent / "src"))

from helpers import run_agent  # noqa: E402

from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402


def _tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


PATCH = ("*** Begin Patch\n*** Update File: app.py\n@@\n def greet():\n"
         "-    return \"hello\"\n+    return \"hello, world\"\n*** End Patch")
BAD_PATCH = ("*** Begin Patch\n*** Update File: app.py\n@@\n-not in the file\n+x\n"
             "*** End Patch")
SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}},
          "required": ["answer"], "additionalProperties": False}

# name -> (files in the workspace, script, CLI args before the instruction, instruction)
SCENARIOS: dict[str, tuple[dict[str, str], list[dict[str, Any]], list[str], str]] = {
    "demo": (
        {},
        json.loads((HERE.parent.parent / "examples" / "demo_script.json").read_text()),
        [], "create hello.py that prints a greeting",
    ),
    "tools_and_errors": (
        {"app.py": 'def greet():\n    return "hello"\n'},
        [
            {"content": "Reading.", "tool_calls": [_tool("read_file", file_path="app.py"),
                                                   _tool("grep_files", pattern="greet")]},
            {"fault": "status", "status": 500, "message": "try again in 0.01s"},
            {"tool_calls": [{"name": "shell", "arguments": "{not json"},
                            _tool("no_such_tool", x=1)]},
            {"tool_calls": [_tool("apply_patch", input=BAD_PATCH)]},
            {"tool_calls": [_tool("apply_patch", input=PATCH),
                            _tool("shell", command="exit 3")]},
            {"content": "Done."},
            {"tool_calls": [_tool("list_dir", dir_path="."),
                            _tool("shell", command="python3 -c 'import app; print(app.greet())'")]},
            {"content": "Verified."},
        ],
        [], "make greet say hello, world",
    ),
    "iteration_limit": (
        {},
        [{"tool_calls": [_tool("shell", command="echo one")]},
         {"tool_calls": [_tool("shell", command="echo two")]},
         {"content": "never reached"}],
        ["--max-iterations", "2"], "loop",
    ),
    "fatal_401": (
        {},
        [{"fault": "status", "status": 401, "message": "invalid api key"}],
        [], "anything",
    ),
    "exec_schema": (
        {},
        [{"content": "not json"},
         {"content": '{"answer": 42}'}],
        ["exec", "--json", "--skip-git-repo-check", "--output-schema", "{schema}"],
        "what is six times seven",
    ),
}

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_WALL = re.compile(r"Wall time: [0-9.]+ seconds")
_WAIT = re.compile(r"\(waiting [0-9.]+s\)")
# The scripted server estimates prompt tokens from the prompt's text, which holds the
# machine's environment (OS, date, paths): compared exactly only on the machine that wrote it.
_INPUT_TOKENS = re.compile(r'"input_tokens":[0-9]+')


def normalise(stdout: str, workspace: Path) -> str:
    """Ids, paths and timings replaced; `item.updated` lines dropped (throttled progress:
    how many there are and what they hold depends on timing, e.g. where a pipe read split
    a command's output)."""
    stdout = "".join(line for line in stdout.splitlines(keepends=True)
                     if not line.startswith('{"type":"item.updated"'))
    text = stdout.replace(str(workspace.resolve()), "<WS>").replace(str(workspace), "<WS>")
    text = _UUID.sub("<UUID>", text)
    text = _WALL.sub("Wall time: <T> seconds", text)
    text = _WAIT.sub("(waiting <T>s)", text)
    return _INPUT_TOKENS.sub('"input_tokens":"<N>"', text)


def run_scenario(name: str, root: Path) -> str:
    files, script, args, instruction = SCENARIOS[name]
    workspace = root / "ws"
    home = root / "home"
    workspace.mkdir(parents=True)
    home.mkdir()
    for rel, text in files.items():
        (workspace / rel).write_text(text)
    schema_path = root / "schema.json"
    schema_path.write_text(json.dumps(SCHEMA))
    args = [a.replace("{schema}", str(schema_path)) for a in args]
    with ScriptedServer(script) as server:
        if args[:1] == ["exec"]:
            argv = args + ["-m", "openai/scripted", "-c", f'openai_base_url="{server.api_base}"',
                           instruction]
            run = run_agent(argv, cwd=workspace, home=home)
        else:
            run = run_agent(args + ["--instruction", instruction], cwd=workspace, home=home,
                            api_base=server.api_base)
    return normalise(run.stdout, workspace)


def main() -> int:
    write = "--write" in sys.argv
    status = 0
    for name in SCENARIOS:
        with tempfile.TemporaryDirectory() as tmp:
            got = run_scenario(name, Path(tmp))
        path = HERE / f"{name}.jsonl"
        if write:
            path.write_text(got)
            print(f"wrote {path} ({len(got.splitlines())} lines)")
        elif path.read_text() != got:
            print(f"DIFFERS: {name}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
