"""A responder for the scripted server when many agents share it (batch tests and benches):
each conversation gets its own script, chosen by its instruction.

Requests from concurrent tasks interleave, so a single list of steps cannot serve them; this
responder reads the conversation's instruction (the first user message after the opening
system prompt and environment context) and plays step k of that instruction's script, where
k is the number of assistant messages already in the request. So each task gets its own
steps in order, however the requests of different tasks interleave, and a retried task
starts its script again.

    responder = KeyedResponder(lambda instruction: steps_for[instruction])
    server = ScriptedServer(responder)
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from baseagent.records.messages import content_text

# system prompt, environment context, then the instruction (compose/builder.py open_history).
INSTRUCTION_INDEX = 2


def instruction_of(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    users = [m for m in messages[INSTRUCTION_INDEX:] if m.get("role") == "user"]
    return content_text(users[0].get("content")) if users else ""


class KeyedResponder:
    """`script_for(key)` returns that conversation's steps (None: unknown, which the server
    answers as an exhausted script); the key is the conversation's instruction unless
    `key_of` reads another one from the request (a specialist's name, say)."""

    def __init__(self, script_for: Callable[[str], Sequence[dict[str, Any]] | None],
                 key_of: Callable[[dict[str, Any]], str] = instruction_of) -> None:
        self._script_for = script_for
        self._key_of = key_of

    def __call__(self, body: dict[str, Any], _index: int) -> dict[str, Any] | None:
        steps = self._script_for(self._key_of(body))
        if steps is None:
            return None
        step = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
        return dict(steps[step]) if step < len(steps) else None
