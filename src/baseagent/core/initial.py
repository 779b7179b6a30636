"""A conversation a run starts from: `Agent.run(messages=[...])` (AgentB's initialMessages,
hermes' conversation_history), checked before anything runs.

The messages are OpenAI chat messages: `user` (text, or text and image parts), `assistant`
(text and/or `tool_calls`, optionally `reasoning_content`) and `tool` (`tool_call_id`,
text). Each assistant tool call needs its tool message before the next user or assistant
message, and each tool message a call: providers refuse a history without the pairs. A
`system` message is refused: the thread has its system prompt (system_prompt,
append_system_prompt). Only the keys the wire knows are kept.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from baseagent.errors import InputError

ROLES = ("user", "assistant", "tool")
# The keys of a message kept, by role.
KEPT = {"user": ("role", "content", "name"),
        "assistant": ("role", "content", "tool_calls", "reasoning_content", "name"),
        "tool": ("role", "content", "tool_call_id", "name")}


def initial_messages(messages: Sequence[Mapping[str, Any]],
                     instruction: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """(the messages to add before the turn, the turn's instruction). Without
    `instruction`, the last message is it (a user message with text)."""
    if isinstance(messages, (str, bytes, Mapping)):
        raise InputError("messages: a list of messages ({\"role\", \"content\"} each)")
    checked = [_message(index, m) for index, m in enumerate(messages)]
    if instruction is None and checked:
        last = checked[-1]
        if last["role"] != "user" or not isinstance(last.get("content"), str):
            raise InputError("messages: without an instruction, the last message must be the "
                             "user's, with text (it is the instruction)")
        checked.pop()
        instruction = last["content"]
    _check_pairs(checked)
    return checked, instruction


def _message(index: int, message: Any) -> dict[str, Any]:
    where = f"messages[{index}]"
    if not isinstance(message, Mapping):
        raise InputError(f"{where}: a message is a mapping, not {type(message).__name__}")
    role = message.get("role")
    if role == "system":
        raise InputError(f"{where}: a system message is not taken (the thread has its system "
                         "prompt: use system_prompt or append_system_prompt)")
    if role not in ROLES:
        raise InputError(f"{where}: role must be one of {', '.join(ROLES)}, not {role!r}")
    out = {key: message[key] for key in KEPT[role] if message.get(key) is not None}
    content = out.get("content")
    if role == "assistant" and content is None and not out.get("tool_calls"):
        raise InputError(f"{where}: an assistant message needs content or tool_calls")
    if role != "assistant" and content is None:
        raise InputError(f"{where}: a {role} message needs content")
    if content is not None and not isinstance(content, (str, list)):
        raise InputError(f"{where}: content is text or a list of parts")
    if isinstance(content, str) and "\0" in content:
        raise InputError(f"{where}: the content contains a NUL byte")
    if role == "assistant" and "tool_calls" in out:
        out["tool_calls"] = [_call(f"{where}.tool_calls[{n}]", c)
                             for n, c in enumerate(out["tool_calls"])]
    if role == "tool" and not isinstance(out.get("tool_call_id"), str):
        raise InputError(f"{where}: a tool message needs its tool_call_id")
    return json.loads(json.dumps(out))  # a copy, and JSON all the way down


def _call(where: str, call: Any) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(call.get("id"), str) \
            or not isinstance(function.get("name"), str):
        raise InputError(f"{where}: a tool call is {{\"id\", \"type\": \"function\", "
                         "\"function\": {\"name\", \"arguments\"}}")
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {"id": call["id"], "type": "function",
            "function": {"name": function["name"], "arguments": arguments}}


def _check_pairs(messages: list[dict[str, Any]]) -> None:
    open_calls: list[str] = []
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            if message["tool_call_id"] not in open_calls:
                raise InputError(f"messages[{index}]: tool result for "
                                 f"{message['tool_call_id']!r}, which no assistant message "
                                 "before it called")
            open_calls.remove(message["tool_call_id"])
            continue
        if open_calls:
            raise InputError(f"messages[{index}]: the tool calls {', '.join(open_calls)} have "
                             "no tool message before it")
        if role == "assistant":
            open_calls = [c["id"] for c in message.get("tool_calls") or []]
    if open_calls:
        raise InputError(f"messages: the tool calls {', '.join(open_calls)} have no tool "
                         "message")
