"""A session record as the events the transcript is drawn from (serve/transcript.py)."""
from __future__ import annotations

from baseagent.serve.transcript import recorded_events


def test_events_and_each_turns_instruction() -> None:
    records = [
        {"kind": "meta", "model": "m"},
        {"kind": "message", "message": {"role": "system", "content": "sys"}},
        {"kind": "event", "event": {"type": "thread.started", "thread_id": "t"}},
        {"kind": "event", "event": {"type": "turn.started"}},
        {"kind": "message", "message": {"role": "user", "content": [
            {"type": "text", "text": "fix it"}]}},
        {"kind": "event", "event": {"type": "item.completed", "item": {
            "id": "item_0", "type": "agent_message", "text": "done"}}},
        {"kind": "message", "message": {"role": "assistant", "content": "done"}},
        {"kind": "event", "event": {"type": "turn.completed", "usage": {}}},
        # a paused turn's continuation starts again with tool messages, no instruction
        {"kind": "event", "event": {"type": "turn.started"}},
        {"kind": "message", "message": {"role": "tool", "content": "42"}},
        {"kind": "event", "event": "not an event"},
        {"kind": "usage"},
    ]
    assert [e["type"] for e in recorded_events(records)] == [
        "thread.started", "turn.started", "turn.input", "item.completed", "turn.completed",
        "turn.started"]
    assert recorded_events(records)[2] == {"type": "turn.input", "text": "fix it"}
