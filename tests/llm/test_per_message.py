"""PerMessage (llm/per_message.py): work on a history once per message, not once per call."""
from __future__ import annotations

from baseagent.llm.per_message import PerMessage


def counting():
    seen: list[str] = []

    def fn(message: dict) -> str:
        seen.append(message["content"])
        return message["content"].upper()

    return PerMessage(fn), seen


def test_a_growing_history_computes_only_its_new_messages():
    per, seen = counting()
    history = [{"content": c} for c in "abc"]
    assert per(history) == ["A", "B", "C"] and seen == ["a", "b", "c"]
    history.append({"content": "d"})
    assert per(history) == ["A", "B", "C", "D"] and seen[3:] == ["d"]


def test_marked_copies_and_rewrites_are_computed_again():
    per, seen = counting()
    history = [{"content": c} for c in "abcd"]
    per(history)
    seen.clear()
    # the system message and the last one replaced by copies (cache markers), one appended
    marked = [{**history[0]}, history[1], history[2], {**history[3]}, {"content": "e"}]
    assert per(marked) == ["A", "B", "C", "D", "E"] and seen == ["a", "d", "e"]
    seen.clear()
    assert per(history[2:]) == ["C", "D"] and seen == ["c", "d"]  # compacted: all moved
