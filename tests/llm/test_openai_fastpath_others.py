"""Another user of openai-python in the agent's process, once the fast path is installed
(llm/openai_fastpath.py; docs/LIBRARY.md "No process-wide side effects"): its chat
requests go out byte-for-byte as the SDK's own transform builds them, whatever iterable it
passes where the SDK's types take `Iterable[...]`."""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable

import pytest

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

from baseagent.llm import openai_fastpath  # noqa: E402

ANSWER = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                       "finish_reason": "stop"}]}

MESSAGES: dict[str, Callable[[], Any]] = {
    "a list": lambda: [{"role": "user", "content": "hello"}],
    "a generator": lambda: ({"role": "user", "content": c} for c in ["hello", "again"]),
    "dict values": lambda: {1: {"role": "user", "content": "hello"}}.values(),
    "a read-only mapping": lambda: [MappingProxyType({"role": "user", "content": "hello"})],
    "a tuple of parts": lambda: [{"role": "user", "content": ({"type": "text", "text": "a"},)}],
    "a generator of parts": lambda: [{"role": "user", "content": (
        {"type": "text", "text": t} for t in "ab")}],
}


def sent_bodies() -> dict[str, bytes]:
    """What a plain openai-python client sends for each way of passing the messages."""
    bodies: dict[str, bytes] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        bodies["last"] = request.content
        return httpx.Response(200, json=ANSWER)

    client = openai.OpenAI(api_key="sk-other-user", base_url="http://other.invalid/v1",
                           max_retries=0,
                           http_client=httpx.Client(transport=httpx.MockTransport(answer)))
    out = {}
    for name, messages in MESSAGES.items():
        client.chat.completions.create(model="m", messages=messages(), stop=["x"],
                                       temperature=openai.NOT_GIVEN, metadata={"k": "v"})
        out[name] = bodies["last"]
    return out


def test_other_users_of_openai_send_the_same_bytes_with_the_fast_path_installed():
    import openai._utils
    from openai.resources.chat.completions import completions as module

    saved = module.maybe_transform
    module.maybe_transform = openai._utils.maybe_transform  # the SDK's own
    try:
        before = sent_bodies()
        assert openai_fastpath.install() is True
        assert module.maybe_transform is not openai._utils.maybe_transform
        assert sent_bodies() == before
    finally:
        module.maybe_transform = saved
