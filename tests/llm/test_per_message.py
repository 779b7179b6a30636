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
    marked = [{**history[0], "mark": 1}, history[1], history[2], {**history[3], "mark": 1},
              {"content": "e"}]
    assert per(marked) == ["A", "B", "C", "D", "E"] and seen == ["a", "d", "e"]
    seen.clear()
    # the next call marks the same messages: equal copies, nothing to compute again
    again = [{**history[0], "mark": 1}, history[1], history[2], {**history[3], "mark": 1},
             marked[4], {"content": "f"}]
    assert per(again) == ["A", "B", "C", "D", "E", "F"] and seen == ["f"]
    seen.clear()
    assert per(history[2:]) == ["C", "D"] and seen == ["c", "d"]  # compacted: all moved


def test_changed_positions_are_found_wherever_they_are():
    from baseagent.llm.per_message import changed_positions
    old = [{"n": i} for i in range(1000)]
    for spots in ([], [0], [999], [0, 1, 500, 998], list(range(0, 1000, 7))):
        new = list(old)
        for i in spots:
            new[i] = {"n": -i - 1}
        assert changed_positions(new, old, len(old)) == spots
    assert changed_positions(old[:10], old, 10) == []
