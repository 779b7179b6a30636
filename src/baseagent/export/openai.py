"""The raw OpenAI chat messages of a thread: what a replay or an eval harness consumes."""
from __future__ import annotations

from typing import Any

from baseagent.export.log import SessionLog, linear_messages


def to_openai(log: SessionLog) -> list[dict[str, Any]]:
    """The messages list exactly as sent to the model (system, user, assistant with
    tool_calls, tool results), across every turn of the thread."""
    return linear_messages(log)
