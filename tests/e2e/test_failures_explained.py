"""Failures that explain themselves: a refused file change names its path and reason (JSONL,
session record, terminal), a provider that cannot be reached is named with the cause, and
`sessions list/show` say why a thread failed."""
from __future__ import annotations

import json
import re
import socket

import pytest

from helpers import run_agent, run_on_pty

NO_RETRY = {"BASEAGENT_MAX_RETRIES": "0"}


def refused_write_script() -> list[dict]:
    return [{"tool_calls": [{"name": "write_file",
                             "arguments": {"file_path": "notes.txt", "content": "x"}}]},
            {"content": "Could not write."}, {"content": "Verified: not written."}]


def test_a_refused_write_names_its_path_and_reason(scripted_server, workspace, home):
    server = scripted_server(refused_write_script())
    run = run_agent(["-i", "write notes", "--sandbox", "read-only"], cwd=workspace, home=home,
                    api_base=server.api_base, timeout=180)
    assert run.returncode == 0, run.stderr
    [item] = run.completed_items("file_change")
    assert item["status"] == "failed"
    assert item["changes"] == [{"path": str(workspace / "notes.txt"), "kind": "add"}]  # absolute
    assert item["error"] == {"message": "sandbox is read-only: refusing to write notes.txt"}
    # the model got the same reason, and the record holds the same item
    assert server.requests[1]["messages"][-1]["content"] == \
        "Error: sandbox is read-only: refusing to write notes.txt"
    [record] = (home / ".baseagent" / "sessions").glob("*.jsonl")
    recorded = [json.loads(line)["event"]["item"] for line in record.open()
                if '"file_change"' in line and '"item.completed"' in line]
    assert recorded == [item]


def test_a_refused_write_on_the_terminal(scripted_server, workspace, home):
    server = scripted_server(refused_write_script())
    screen = screen_of(["-i", "write notes", "--sandbox", "read-only", "--model",
                         "openai/scripted", "--api-base", server.api_base], workspace, home)
    assert "A not written: notes.txt" in screen
    assert "  sandbox is read-only: refusing to write notes.txt" in screen
    assert "patch failed" not in screen


@pytest.mark.parametrize("kind", ["refused", "tls", "dns"])
def test_unreachable_providers_are_named_with_the_cause(kind, scripted_server, workspace, home):
    if kind == "refused":
        with socket.socket() as sock:  # a port nothing listens on
            sock.bind(("127.0.0.1", 0))
            base = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        cause = "connection refused"
    elif kind == "tls":
        base = scripted_server([]).api_base.replace("http://", "https://")  # plain HTTP there
        cause = "TLS handshake failed"
    else:
        base = "http://no-such-host.invalid/v1"
        cause = "DNS lookup failed"
    run = run_agent(["-i", "hello"], cwd=workspace, home=home, api_base=base,
                    env_extra=NO_RETRY, timeout=180)
    assert run.returncode == 1, run.stderr
    [failed] = run.of_type("turn.failed")
    message = failed["error"]["message"]
    assert message.startswith(f"model call failed: cannot connect to {base}/chat/completions: "
                              f"{cause}") or message.startswith(
        f"model call failed after 0 retries: cannot connect to {base}/chat/completions: "
        f"{cause}"), message
    said = message.replace(base, "URL")  # the port may hold "500"
    assert "500" not in said and "InternalServerError" not in said

    # sessions list and show say why the thread failed
    listing = run_agent(["sessions"], cwd=workspace, home=home, parse=False)
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert "failed" in lines[1].split()
    assert lines[2].startswith("  ↳ model call failed") and cause in lines[2]
    thread_id = run.events[0]["thread_id"]
    shown = run_agent(["sessions", "show", thread_id], cwd=workspace, home=home, parse=False)
    assert f"failed:   {message}" in shown.stdout.splitlines()
    as_json = run_agent(["sessions", "list", "--json"], cwd=workspace, home=home, parse=False)
    assert json.loads(as_json.stdout.splitlines()[0])["last_error"] == message


def screen_of(args: list[str], cwd, home) -> str:
    """The agent on a pseudo-terminal; what the terminal received, without escape codes."""
    _, text = run_on_pty(args, cwd, home)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", text)
