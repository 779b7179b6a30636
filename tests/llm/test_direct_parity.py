"""One behaviour whichever path serves a call: the direct transport against litellm.

The same calls go through both paths (llm/route.py) to the scripted server: the request
bodies the server received, the turns that came back (text, reasoning, tool calls, finish
reason, usage and cost), and the way every error reads to the retry policy must be the
same. The client tests of test_retry.py also run on both paths (`transport` fixture).
"""
from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from baseagent.llm.client import ModelClient
from baseagent.llm.retry import (Verdict, classify, describe, failure_message, is_quota,
                                 last_error, retry_hint)
from baseagent.llm.route import choose
from baseagent.testing.scripted_server import ScriptedServer

MODEL = "openai/scripted-local"
KEY = "sk-test-dummy"
TOOLS = [{"type": "function", "function": {
    "name": "shell", "description": "Run a command.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                   "required": ["command"]}}},
         {"type": "function", "function": {
             "name": "read_file", "description": "Read a file.",
             "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
IMAGE = "data:image/png;base64,iVBORw0KGgo="
HISTORY = [
    {"role": "system", "content": "You are a coding agent.",
     "cache_control": {"type": "ephemeral"}},
    {"role": "user", "content": [{"type": "text", "text": "look at this"},
                                 {"type": "image_url", "image_url": {"url": IMAGE}}]},
    {"role": "user", "content": [{"type": "image_url", "image_url": IMAGE}]},
    {"role": "assistant", "content": "I will list it.", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "shell", "arguments": '{"command": "ls"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\nb.txt"},
    {"role": "assistant", "content": None, "reasoning_content": "Read it next.",
     "thinking_blocks": [{"type": "thinking", "thinking": "Read it next.",
                          "signature": "c2ln"}],
     "tool_calls": [{"id": "call_2", "type": "function",
                     "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}]},
    {"role": "tool", "tool_call_id": "call_2", "content": "é \u2028 \ud800 unpaired"},
    {"role": "assistant", "content": ""},
    {"role": "user", "content": "Now summarise, ünïcödé and all.",
     "cache_control": {"type": "ephemeral"}},
]


def client(server: ScriptedServer, transport: str, model: str = MODEL,
           **kw: Any) -> ModelClient:
    # litellm adds /v1/messages to an Anthropic base; OpenAI's base is the /v1 one
    base = server.url if model.startswith("anthropic/") else server.api_base
    route = None
    if transport == "direct":
        route = choose(model, api_base=base, api_key=KEY, env={},
                       extra_params=kw.get("extra_params"), temperature=kw.get("temperature"),
                       reasoning_effort=kw.get("reasoning_effort"))
        assert route is not None, "the direct path should serve this model"
    kw.setdefault("stream_idle_timeout", 15.0)  # a loaded machine is slow, not stalled
    return ModelClient(model=model, api_base=base, api_key=KEY, max_retries=0,
                       route=route, **kw)


@pytest.fixture(autouse=True, scope="module")
def _litellm_warm() -> None:
    """litellm imports each provider's code on its first call (seconds on a loaded
    machine): done once here, so no comparison's idle timer counts it."""
    for model in (MODEL, "anthropic/claude-sonnet-4-5-20250929"):
        with ScriptedServer([{"content": "ok"}]) as server:
            base = server.url if model.startswith("anthropic/") else server.api_base
            ModelClient(model=model, api_base=base, api_key=KEY, max_retries=0,
                        max_tokens=10, stream_idle_timeout=120).complete(
                [{"role": "user", "content": "warm up"}])


def both(script: list[dict], call: Any, **kw: Any) -> dict[str, tuple[Any, list[dict]]]:
    """Run `call(client)` on each path against its own server: (result, request bodies)."""
    out = {}
    for transport in ("litellm", "direct"):
        with ScriptedServer(copy.deepcopy(script)) as server:
            c = client(server, transport, **kw)
            try:
                result = call(c)
            except Exception as exc:  # noqa: BLE001 - compared below
                result = exc
            out[transport] = (result, server.requests)
    return out


PARAMS = [
    {},
    {"temperature": 0.2, "max_tokens": 1000},
    {"temperature": 1.0, "max_tokens": 64, "reasoning_effort": "high"},
    {"max_tokens": 500, "extra_params": {"prompt_cache_key": "thread-1"}},
]
CHOICES = [None, "auto", "none", "required", {"type": "function", "function": {"name": "shell"}}]


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("tool_choice", CHOICES)
def test_the_same_request_body_either_way(params, tool_choice):
    history = copy.deepcopy(HISTORY)
    runs = both([{"content": "ok"}], lambda c: c.complete(
        history, TOOLS, tool_choice=tool_choice), **params)
    assert runs["litellm"][1] == runs["direct"][1]
    assert not isinstance(runs["direct"][0], Exception), runs["direct"][0]


def test_no_tools_no_tool_choice():
    runs = both([{"content": "ok"}], lambda c: c.complete(
        [{"role": "user", "content": "hi"}], None, tool_choice="auto"))
    assert runs["litellm"][1] == runs["direct"][1]
    assert "tools" not in runs["direct"][1][0] and "tool_choice" not in runs["direct"][1][0]


def test_a_request_the_wire_does_not_build_goes_through_litellm():
    # a tool result holding an image: litellm moves it into a user message of its own
    history = [{"role": "user", "content": "go"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c1", "type": "function",
                    "function": {"name": "shell", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": [
                   {"type": "text", "text": "see"},
                   {"type": "image_url", "image_url": {"url": IMAGE}}]}]
    runs = both([{"content": "ok"}],
                lambda c: c.complete(copy.deepcopy(history), TOOLS))
    assert runs["litellm"][1] == runs["direct"][1]
    assert len(runs["direct"][1][0]["messages"]) == 4  # the image's own user message


STEPS = [
    {"content": "Plain answer in several pieces.", "chunk_size": 4},
    {"reasoning": "First think, then act.", "content": "Done."},
    {"reasoning": "OpenRouter's way, in details.", "reasoning_format": "openrouter",
     "content": "Done."},
    {"content": "Calling.", "tool_calls": [
        {"name": "shell", "arguments": {"command": "ls -la"}},
        {"name": "read_file", "arguments": {"path": "x.py"}}]},
    {"tool_calls": [{"name": "shell", "arguments": '{"command": "echo \\ud800"}'}]},
    {"content": "cut", "finish_reason": "length"},
    {"content": "odd finish", "finish_reason": "eos"},
    {"content": "filtered", "finish_reason": "content_filter"},
    {"content": "cached", "usage": {"prompt_tokens": 900, "completion_tokens": 20,
                                    "cached_tokens": 700}},
    {"reasoning": "hmm " * 20, "content": "r",
     "usage": {"prompt_tokens": 50, "completion_tokens": 40}},
    {"content": "no usage at all", "usage": False},
    {"fault": "empty", "shape": "no_content"},
    {"fault": "truncated_args", "tool_calls": [{"name": "shell",
                                                "arguments": {"command": "x"}}], "keep": 5},
    {"content": "la la la la " * 400, "chunk_size": 12},  # repeats itself: cut
]


@pytest.mark.parametrize("step", STEPS, ids=lambda s: str(s)[:40])
@pytest.mark.parametrize("model", [MODEL, "openai/o9-local"])
def test_the_same_turn_either_way(step, model):
    progress: dict[str, list[tuple[Any, ...]]] = {}

    def call(c: ModelClient) -> Any:
        seen: list[tuple[Any, ...]] = []
        progress["direct" if c.route else "litellm"] = seen
        # the text and the tool calls as they stream (the calls' arguments piece by piece)
        return c.complete([{"role": "user", "content": "go"}], TOOLS,
                          on_progress=lambda t, r, calls=(): seen.append((t, r, calls)),
                          estimated_input_tokens=321)

    runs = both([step], call, model=model)
    litellm_turn, direct_turn = runs["litellm"][0], runs["direct"][0]
    assert not isinstance(direct_turn, Exception), direct_turn
    assert direct_turn == litellm_turn
    assert progress["direct"] == progress["litellm"]
    # the calls as last streamed are the turn's calls
    streamed = [calls for _t, _r, calls in progress["direct"] if calls]
    assert [(c.id, c.name, c.arguments) for c in (streamed[-1] if streamed else ())] == \
        [(c.id, c.name, c.arguments) for c in direct_turn.tool_calls if streamed]


FAULTS = [
    {"fault": "status", "status": 400}, {"fault": "status", "status": 401},
    {"fault": "status", "status": 403}, {"fault": "status", "status": 404},
    {"fault": "status", "status": 408}, {"fault": "status", "status": 409},
    {"fault": "status", "status": 413}, {"fault": "status", "status": 422},
    {"fault": "status", "status": 429, "retry_after": 7},
    {"fault": "status", "status": 429, "code": "insufficient_quota",
     "message": "You exceeded your current quota."},
    {"fault": "status", "status": 500}, {"fault": "status", "status": 502},
    {"fault": "status", "status": 503, "message": "Overloaded. Please try again in 1.5s."},
    {"fault": "status", "status": 504}, {"fault": "status", "status": 529},
    {"fault": "status", "status": 401, "message": "Overloaded, rate limit, try again."},
    {"fault": "status", "status": 503, "message": "Invalid API key. Permission denied."},
    {"fault": "context_length"},
    {"fault": "reset", "content": "cut off"}, {"fault": "drop", "content": "cut off"},
    {"fault": "malformed", "content": "cut off"},
    {"fault": "stall", "seconds": 3, "content": "cut off"},
    {"fault": "empty"}, {"fault": "empty", "shape": "done"},
]


@pytest.mark.parametrize("model", [MODEL, "anthropic/claude-sonnet-4-5-20250929"],
                         ids=["openai", "anthropic"])
@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: "-".join(map(str, f.values()))[:40])
def test_errors_read_the_same_either_way(fault, model):
    def call(c: ModelClient) -> Any:
        return c._call_once([{"role": "user", "content": "go"}], None, lambda _t, _r: None)

    runs = both([fault], call, model=model, max_tokens=100, stream_idle_timeout=1.0)
    litellm_exc, direct_exc = runs["litellm"][0], runs["direct"][0]
    assert len(runs["direct"][1]) == len(runs["litellm"][1])  # a 422 is sent twice
    if not isinstance(litellm_exc, Exception):  # the second attempt was answered
        assert direct_exc == litellm_exc
        return
    assert isinstance(direct_exc, Exception)
    verdict = classify(litellm_exc)
    assert classify(direct_exc) is verdict
    assert describe(direct_exc) == describe(litellm_exc)
    # The provider's own sentence: litellm's Anthropic errors carry the raw body as text
    # (b'{"type": "error", ...}'), the direct path the body's message; OpenAI's read alike.
    if model == MODEL:
        assert last_error(direct_exc) == last_error(litellm_exc)  # when retries run out
        if verdict is not Verdict.RETRY:  # the one line a failure not retried shows
            assert failure_message(direct_exc) == failure_message(litellm_exc)
    assert retry_hint(direct_exc) == retry_hint(litellm_exc)
    assert is_quota(direct_exc) == is_quota(litellm_exc)


@pytest.mark.parametrize("status, message", [
    (422, '{"detail": [{"loc": ["body", "temperature"], "msg": "not allowed"}]}'),
    (400, "Conversation roles must alternate user/assistant/user/assistant"),
    (400, "Last message must have role `user`"),
    (400, "unknown field: parameter index is not a valid field"),
])
def test_litellms_second_attempt_for_picky_servers(status, message):
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"},
               {"role": "user", "content": "b"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c", "type": "function", "index": 0,
                    "function": {"name": "shell", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c", "content": "out"},
               {"role": "assistant", "content": "last"}]
    script = [{"fault": "status", "status": status, "message": message}, {"content": "ok"}]
    runs = both(script, lambda c: c.complete(copy.deepcopy(history), TOOLS),
                temperature=0.3, max_tokens=100)
    assert len(runs["direct"][1]) == 2  # sent once more, changed
    assert runs["litellm"][1] == runs["direct"][1]
    assert runs["direct"][0].text == runs["litellm"][0].text == "ok"


# -- Anthropic's Messages API -----------------------------------------------------------------

def _claude_models() -> list[str]:
    """Every Anthropic chat model of the pinned map the direct path serves, and two names
    it does not list (one a Claude family name litellm's generalizations know)."""
    from baseagent.llm.model_map import ModelMap

    text = ModelMap.load()._text  # noqa: SLF001 - the map's own keys
    keys = json.loads(text)
    names = sorted(k for k, v in keys.items() if isinstance(v, dict)
                   and v.get("litellm_provider") == "anthropic" and v.get("mode") == "chat"
                   and not v.get("thinking_always_on")
                   and v.get("supports_forced_tool_use") is not False)
    return [f"anthropic/{n}" for n in names] + ["anthropic/claude-newfamily-5",
                                                 "anthropic/claude-local-test"]


CLAUDES = _claude_models()
CLAUDE = "anthropic/claude-sonnet-4-5-20250929"
# The history as the agent sends it to a Claude model: core/context/caching.py's markers on the
# system prompt and the last two messages, signed thinking blocks kept.
CLAUDE_HISTORY = [
    *HISTORY[:2],
    {"role": "user", "content": "and this too  "},
    *HISTORY[3:5],
    {**HISTORY[5], "thinking_blocks": [*HISTORY[5]["thinking_blocks"],
                                       {"type": "thinking", "thinking": "unsigned"}],
     "tool_calls": [*HISTORY[5]["tool_calls"], {"id": "call.3", "type": "function",
                                                "function": {"name": "shell",
                                                             "arguments": ""}}]},
    HISTORY[6],
    {"role": "tool", "tool_call_id": "call.3", "content": "",
     "cache_control": {"type": "ephemeral"}},
    {"role": "assistant", "content": "  "},
    {"role": "user", "content": "Now summarise.", "cache_control": {"type": "ephemeral"}},
]


@pytest.mark.parametrize("model", CLAUDES)
@pytest.mark.parametrize("tool_choice", CHOICES)
def test_the_same_anthropic_request_either_way(model, tool_choice):
    history = copy.deepcopy(CLAUDE_HISTORY)
    runs = both([{"content": "ok"}], lambda c: c.complete(history, TOOLS, tool_choice=tool_choice),
                model=model, max_tokens=2000)
    assert runs["litellm"][1] == runs["direct"][1], repr(runs["litellm"][0])
    assert not isinstance(runs["direct"][0], Exception), runs["direct"][0]
    assert runs["direct"][0] == runs["litellm"][0]


def test_a_final_assistant_message_loses_its_trailing_space():
    history = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok  \n"}]
    runs = both([{"content": "ok"}], lambda c: c.complete(history, None), model=CLAUDE,
                max_tokens=100)
    assert runs["litellm"][1] == runs["direct"][1]
    assert runs["direct"][1][0]["messages"][-1]["content"][0]["text"] == "ok"


@pytest.mark.parametrize("step", STEPS[:10], ids=lambda s: str(s)[:40])
def test_the_same_anthropic_turn_either_way(step):
    def call(c: ModelClient) -> Any:
        return c.complete([{"role": "user", "content": "go"}], TOOLS,
                          estimated_input_tokens=321)

    runs = both([step], call, model=CLAUDE, max_tokens=1000)
    assert not isinstance(runs["direct"][0], Exception), runs["direct"][0]
    assert runs["direct"][0] == runs["litellm"][0]
