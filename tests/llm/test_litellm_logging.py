"""litellm's success logging on the litellm path: skipped while nothing listens, kept for a
program that registers a litellm callback (llm/client.py `_unlogged`)."""
from __future__ import annotations

import threading
import time

import pytest

from baseagent.llm.client import ModelClient, _unlogged, load_litellm


@pytest.fixture
def litellm():
    module = load_litellm()
    saved = list(module.success_callback)
    yield module
    module.success_callback[:] = saved


def stream_through(litellm, server):
    stream = litellm.completion(model="openai/scripted", api_base=server.api_base,
                                api_key="k", messages=[{"role": "user", "content": "hi"}],
                                stream=True, stream_options={"include_usage": True},
                                num_retries=0)
    stream = _unlogged(litellm, stream)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "fine"
    return stream


def wait_for(predicate, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_nothing_listening_means_no_logging_payload(litellm, scripted_server):
    stream = stream_through(litellm, scripted_server([{"content": "fine"}]))
    details = stream.logging_obj.model_call_details
    time.sleep(0.3)  # litellm's thread pool would have built it by now
    assert "standard_logging_object" not in details
    assert "complete_streaming_response" not in details


def test_a_registered_callback_still_gets_every_success(litellm, scripted_server):
    seen = threading.Event()
    litellm.success_callback.append(lambda *_args: seen.set())
    server = scripted_server([{"content": "fine"}, {"content": "fine"}])
    stream = stream_through(litellm, server)
    assert wait_for(seen.is_set)
    assert "standard_logging_object" in stream.logging_obj.model_call_details
    client = ModelClient(model="openai/scripted", api_base=server.api_base, api_key="k")
    seen.clear()
    assert client.complete([{"role": "user", "content": "hi"}]).text == "fine"
    assert wait_for(seen.is_set)
