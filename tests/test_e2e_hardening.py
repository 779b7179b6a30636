"""Round two of the adversarial pass (issue 14), end to end: bad paths, NUL bytes, oversized
arguments, unusable session directories, torn records, runaway output."""
from __future__ import annotations

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
