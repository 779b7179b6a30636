"""A recorded thread as the events a transcript is drawn from (static/render.js): the Codex
events of its session record, each turn's instruction as a `turn.input` after its
`turn.started`. Needs nothing but the record: the page uses it for threads that are not
live, and a report of a batch can use it for each task's thread.
"""
from __future__ import annotations

from typing import Any


def recorded_events(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from baseagent.records.messages import content_text

    out: list[dict[str, Any]] = []
    after_start = False
    for record in records:
        kind = record.get("kind")
        if kind == "event" and isinstance(record.get("event"), dict):
            out.append(record["event"])
            after_start = record["event"].get("type") == "turn.started"
        elif kind == "message" and after_start:
            message = record.get("message") or {}
            if message.get("role") == "user":
                out.append({"type": "turn.input", "text": content_text(message.get("content"))})
            after_start = False
    return out
