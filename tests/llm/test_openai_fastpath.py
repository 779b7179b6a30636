"""The cheaper chat transform must produce exactly the body openai-python's own would."""
from __future__ import annotations

import pytest

openai = pytest.importorskip("openai")

from openai import NOT_GIVEN  # noqa: E402
from openai._utils._transform import maybe_transform as sdk_transform  # noqa: E402
from openai.types.chat import completion_create_params as params  # noqa: E402

from baseagent.llm import openai_fastpath  # noqa: E402


def _body() -> dict:
    history = [{"role": "system", "content": "You are a coding agent.\n" * 50},
               {"role": "user", "content": [
                   {"type": "text", "text": "look at this"},
                   {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]
    for i in range(30):
        history.append({"role": "assistant", "content": None if i % 2 else "ok",
                        "tool_calls": [{"id": f"call_{i}", "type": "function",
                                        "function": {"name": "shell",
                                                     "arguments": '{"command": "ls"}'}}]})
        history.append({"role": "tool", "tool_call_id": f"call_{i}",
                        "content": "Exit code: 0\nOutput:\nx\u00e9\n"})
    return {"messages": history, "model": "gpt-x", "stream": True,
            "stream_options": {"include_usage": True}, "temperature": NOT_GIVEN,
            "tools": [{"type": "function", "function": {
                "name": "shell", "description": "run",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                               "required": ["command"]}}}],
            "max_tokens": 100, "prompt_cache_key": "abc", "user": NOT_GIVEN}


def test_plain_body_matches_the_sdk_transform():
    body = _body()
    expected = sdk_transform(body, params.CompletionCreateParamsStreaming)
    from openai import NotGiven, Omit
    import pydantic

    assert openai_fastpath.plain_body(body, (NotGiven, Omit), pydantic.BaseModel) == expected
    assert "temperature" not in expected  # the markers really are dropped


def test_install_only_swaps_chat_completions():
    import openai._utils
    from openai.resources.chat.completions import completions as module

    # The SDK's own function (another test in this process may have installed ours already).
    saved = module.maybe_transform
    original = module.maybe_transform = openai._utils.maybe_transform
    try:
        assert openai_fastpath.install() is True
        assert openai_fastpath.install() is True  # idempotent
        swapped = module.maybe_transform
        assert swapped is not original
        body = _body()
        assert swapped(body, params.CompletionCreateParamsStreaming) == sdk_transform(
            body, params.CompletionCreateParamsStreaming)
        # any other request type still goes through the SDK's own walk
        from openai.types.chat import completion_update_params as update

        calls = []
        module.maybe_transform = original
        openai_fastpath_original = original

        def spy(data, expected_type):
            calls.append(expected_type)
            return openai_fastpath_original(data, expected_type)

        module.maybe_transform = spy
        assert openai_fastpath.install() is True
        other = {"metadata": {"k": "v"}}
        assert module.maybe_transform(other, update.CompletionUpdateParams) == {"metadata": {"k": "v"}}
        assert calls == [update.CompletionUpdateParams]
        module.maybe_transform(_body(), params.CompletionCreateParamsStreaming)
        assert calls == [update.CompletionUpdateParams]  # chat bodies never reach the SDK walk
    finally:
        module.maybe_transform = saved


def test_guard_sees_aliases():
    from openai.types.beta import response_create_params

    assert openai_fastpath._needs_real_transform(
        response_create_params.ResponseCreateParamsBase) is True
    assert openai_fastpath._needs_real_transform(params.CompletionCreateParamsBase) is False
