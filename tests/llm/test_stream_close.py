"""Every model stream is closed on its own thread as soon as it ends (llm/client.py
`_StreamPump`). litellm stops reading an Anthropic answer at `message_stop`, before its
body ends; a response left open like that was closed by the garbage collector on whatever
thread it ran, and when that was the next call's stream thread inside httpcore's connection
pool, the close waited for the pool lock that thread held: the run hung (seen under load in
test_e2e_anthropic)."""
from __future__ import annotations

import gc
import inspect
import threading

import pytest

from baseagent.llm.client import ModelClient

CLAUDE = "anthropic/claude-sonnet-4-5-20250929"
# httpx's generators over a streamed response body
BODY_READERS = {"iter_lines", "iter_text", "iter_bytes", "iter_raw"}


def open_body_readers() -> list:
    return [o for o in gc.get_objects()
            if inspect.isgenerator(o) and o.gi_code.co_name in BODY_READERS
            and inspect.getgeneratorstate(o) != inspect.GEN_CLOSED]


@pytest.mark.parametrize("model", [CLAUDE, "openai/gpt-4.1"])  # both through litellm
def test_no_response_is_left_open_for_the_garbage_collector(model, scripted_server):
    server = scripted_server([
        {"content": "Looking.", "tool_calls": [{"name": "shell",
                                                "arguments": {"command": "echo hi"}}]},
        {"content": "Done."}])
    base = server.url if model.startswith("anthropic/") else server.api_base
    client = ModelClient(model=model, api_base=base, api_key="sk-test", max_retries=0,
                         stream_idle_timeout=120)
    before = open_body_readers()  # held, so no new generator can take one of their ids
    gc.disable()  # nothing is collected behind the test's back
    try:
        for _ in range(2):
            client.complete([{"role": "user", "content": "go"}])
        for thread in threading.enumerate():
            if thread.name == "model-stream":
                thread.join(10)
        known = {id(o) for o in before}
        left = [o for o in open_body_readers() if id(o) not in known]
    finally:
        gc.enable()
    assert left == []
