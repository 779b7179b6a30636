"""One library run whose AgentB stream is kept as a golden file (tests/golden/agentb_run.jsonl).

The run has every part of AgentB's run model: the agent's own tools (one of them failing),
a delegation to a sub-agent, a tool the caller runs (the turn pauses, the outputs come, the
same run goes on), and a second turn cancelled while the model is answering. It is driven
through the library (`Agent.stream(format="agentb")`, `stream_tool_outputs`, `cancel()`)
against the scripted server, so the cancel lands at a known point: when the second turn's
model call has begun.

Normalised: timestamps, ids (each distinct id becomes a numbered placeholder, so what refers
to what stays visible), the workspace path, wall times and the machine-dependent prompt
size; consecutive deltas of one message's text, or of one tool call's arguments, are joined
(how the stream is cut into pieces depends on timing).

    python tests/golden/agentb.py --write     # regenerate (only when a change is meant)
"""
from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "src"))

from baseagent import Agent  # noqa: E402
from baseagent.testing.scripted_server import ScriptedServer  # noqa: E402

GOLDEN = HERE / "agentb_run.jsonl"
WEATHER = {"name": "get_weather", "description": "Current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}
FIRST = "What is the answer in notes.txt, and the weather in Paris?"
SECOND = "And tomorrow?"


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


SCRIPT: list[dict[str, Any]] = [
    # turn 1: the agent's own tools, one of which fails (the turn goes on: the default)
    {"content": "Looking.", "tool_calls": [
        _call("call_sh", "shell", command="echo hi"),
        _call("call_rd", "read_file", file_path="missing.txt")]},
    # a sub-agent (its two model calls are the next two steps of the script)
    {"tool_calls": [_call("call_dg", "delegate", task="find the answer in notes.txt")]},
    {"tool_calls": [_call("call_c1", "read_file", file_path="notes.txt")]},
    {"content": "42"},
    # a tool the caller runs: its arguments stream in small timed pieces
    {"tool_calls": [_call("call_w", "get_weather", city="Paris")],
     "chunk_size": 3, "chunk_delay": 0.08},
    # the same run, once the caller's output came
    {"content": "The answer is 42, and it is 18 C and sunny in Paris."},
    # turn 2: cancelled while the model is answering
    {"content": "never sent", "delay": 30},
]

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_OWN_ID = re.compile(r"\b(?:msg|step)_[0-9a-f]{32}\b")
_STAMP = re.compile(r'"(timestamp|createdAt)":"[^"]+"')
_WALL = re.compile(r"Wall time: [0-9.]+ seconds")
# The scripted server estimates prompt tokens from the prompt's text, which holds the
# machine's environment (OS, date, paths): compared exactly only on the machine that wrote it.
_INPUT_TOKENS = re.compile(r'"input_tokens":[0-9]+')


def run(root: Path) -> tuple[list[Any], list[Any]]:
    """The scenario: (AgentB events the stream yielded, those on_event got with
    on_event_format="agentb"), as the wire models."""
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    (workspace / "notes.txt").write_text("answer: 42\n")
    called_back: list[Any] = []
    with ScriptedServer(SCRIPT) as server:
        agent = Agent(model="openai/scripted", api_base=server.api_base, api_key="sk-dummy",
                      cwd=workspace, verify=False, session_dir=root / "sessions",
                      delegate=True, external_tools=[WEATHER], env={"PATH": os.environ["PATH"]},
                      on_event=called_back.append, on_event_format="agentb")
        try:
            events = list(agent.stream(FIRST, format="agentb"))
            assert agent.pending_tool_calls, events[-1]
            events += agent.stream_tool_outputs({"call_w": "18 C and sunny"}, format="agentb")
            stream = agent.stream(SECOND, format="agentb")
            for event in stream:
                events.append(event)
                if event.type == "thread.message.created" \
                        and event.data.message.role == "assistant":
                    agent.cancel("the caller cancelled the run")  # the model call is on
        finally:
            agent.close()
    return events, called_back


def normalise(events: list[Any], workspace: Path) -> str:
    """One JSON line per event, normalised (see the module's docstring)."""
    joined: list[dict[str, Any]] = []
    for event in events:
        data = json.loads(event.model_dump_json())
        last = joined[-1] if joined else None
        if last is not None and _joins(last, data):
            _join(last["data"]["delta"], data["data"]["delta"])
            continue
        joined.append(data)
    ids: dict[str, str] = {}

    def placeholder(kind: str) -> Any:
        def sub(match: re.Match[str]) -> str:
            return ids.setdefault(match.group(0), f"<{kind}{len(ids) + 1}>")
        return sub

    lines = []
    for data in joined:
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        text = text.replace(str(workspace.resolve()), "<WS>").replace(str(workspace), "<WS>")
        text = _UUID.sub(placeholder("ID"), text)
        text = _OWN_ID.sub(placeholder("ID"), text)
        text = _STAMP.sub(r'"\1":"<T>"', text)
        text = _WALL.sub("Wall time: <T> seconds", text)
        lines.append(_INPUT_TOKENS.sub('"input_tokens":"<N>"', text))
    return "".join(line + "\n" for line in lines)


def _joins(last: dict[str, Any], data: dict[str, Any]) -> bool:
    """Whether `data` is the next piece of the same delta as `last`: the same message's
    text, or the same tool call's arguments."""
    if last["type"] != "thread.message.delta" or data["type"] != "thread.message.delta" \
            or last["data"]["messageId"] != data["data"]["messageId"]:
        return False
    a, b = last["data"]["delta"], data["data"]["delta"]
    if a.get("contentChunk") is not None and b.get("contentChunk") is not None:
        return True
    calls_a, calls_b = a.get("toolCallsChunk") or [], b.get("toolCallsChunk") or []
    return len(calls_a) == len(calls_b) == 1 and calls_a[0]["id"] == calls_b[0]["id"]


def _join(into: dict[str, Any], piece: dict[str, Any]) -> None:
    if piece.get("contentChunk") is not None:
        into["contentChunk"] += piece["contentChunk"]
    else:
        into["toolCallsChunk"][0]["function"]["arguments"] += \
            piece["toolCallsChunk"][0]["function"]["arguments"]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        events, _ = run(Path(tmp))
        got = normalise(events, Path(tmp) / "ws")
    if "--write" in sys.argv:
        GOLDEN.write_text(got)
        print(f"wrote {GOLDEN} ({len(got.splitlines())} lines)")
        return 0
    if GOLDEN.read_text() != got:
        print("DIFFERS: agentb_run")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
