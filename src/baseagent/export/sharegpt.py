"""ShareGPT conversations for training (the hermes-agent batch format): one JSON object per
conversation, turns as `{"from": system|human|gpt|tool, "value": str}`.

Tool calls and results are written the way function-calling models in the hermes family
are trained on: the tool definitions in the system turn inside `<tools>`, each call in the
gpt turn as `<tool_call>{"name", "arguments"}</tool_call>`, reasoning as `<think>` (and, as
hermes-agent keeps it on a message, in the turn's `reasoning` field), and
consecutive results merged into one tool turn of `<tool_response>` blocks.
"""
from __future__ import annotations

import json
from typing import Any

from baseagent.export.log import SessionLog, linear_messages
from baseagent.records.messages import content_text

ROLE_TO_FROM = {"system": "system", "user": "human", "assistant": "gpt", "tool": "tool"}


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw or "{}")
    except ValueError:
        return raw


def _gpt_value(message: dict[str, Any], reasoning: str) -> str:
    parts = []
    if reasoning:
        parts.append(f"<think>\n{reasoning}\n</think>")
    text = content_text(message.get("content"))
    if text:
        parts.append(text)
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        payload = {"name": function.get("name"), "arguments": _arguments(function.get("arguments"))}
        parts.append(f"<tool_call>\n{json.dumps(payload, ensure_ascii=False)}\n</tool_call>")
    return "\n".join(parts)


def to_sharegpt(log: SessionLog) -> dict[str, Any]:
    reasoning_of = {id(e.message): e.reasoning for e in log.entries if e.kind == "message"}
    names: dict[str, str] = {}
    turns: list[dict[str, str]] = []
    for message in linear_messages(log):
        role = message.get("role")
        if role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            block = json.dumps({"tool_call_id": call_id, "name": names.get(call_id, ""),
                                "content": content_text(message.get("content"))},
                               ensure_ascii=False)
            value = f"<tool_response>\n{block}\n</tool_response>"
            if turns and turns[-1]["from"] == "tool":
                turns[-1]["value"] += "\n" + value
            else:
                turns.append({"from": "tool", "value": value})
            continue
        turn: dict[str, str] = {"from": ROLE_TO_FROM.get(str(role), "human")}
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                names[str(call.get("id"))] = str((call.get("function") or {}).get("name", ""))
            reasoning = reasoning_of.get(id(message), "") or message.get("reasoning_content", "")
            turn["value"] = _gpt_value(message, reasoning)
            if reasoning:
                turn["reasoning"] = reasoning  # where hermes-agent keeps it on a message
        else:
            value = content_text(message.get("content"))
            if role == "system" and log.tools and not turns:
                value += "\n\n<tools>\n" + json.dumps(log.tools, ensure_ascii=False) + "\n</tools>"
            turn["value"] = value
        turns.append(turn)
    return {"id": log.thread_id, "conversations": turns}
