"""The terminal renderer on its own: the engine's events in, text out (no terminal, no
spinner)."""
from __future__ import annotations

import dataclasses
import io

from baseagent.emitting import events as engine
from baseagent.output.pretty import PrettySink


def render(events: list[engine.RunEvent]) -> str:
    out = io.StringIO()
    sink = PrettySink(out, spinner=False)
    for event in events:
        sink.run_event(event)
    sink.close()
    return out.getvalue()


def started(item: engine.Item) -> engine.ItemStarted:
    return engine.ItemStarted(item=item)


def updated(item: engine.Item) -> engine.ItemUpdated:
    return engine.ItemUpdated(item=item)


def completed(item: engine.Item) -> engine.ItemCompleted:
    return engine.ItemCompleted(item=item)


def reasoning(text: str) -> engine.TextItem:
    return engine.TextItem(id="r", kind="reasoning", text=text)


def message(text: str, item_id: str = "m") -> engine.TextItem:
    return engine.TextItem(id=item_id, kind="message", text=text)


def turn_started() -> engine.TurnStarted:
    return engine.TurnStarted(turn_id="turn", thread_id="thread")


def test_reasoning_and_message_text_never_interleave():
    # the provider streams both at once: reasoning and message deltas alternate
    text = render([
        turn_started(),
        started(reasoning("Let me")), started(message("The ans")),
        updated(reasoning("Let me think")), updated(message("The answer is")),
        updated(reasoning("Let me think about it.")),
        completed(reasoning("Let me think about it.")), completed(message("The answer is 42.")),
        engine.TurnEnded("completed", usage={"input_tokens": 10, "output_tokens": 2}),
    ])
    assert "Let me think about it.\n" in text
    assert text.index("Let me think about it.") < text.index("The answer is 42.")
    assert "The ans" not in text.replace("The answer is 42.", "")  # no partial message


def test_interim_messages_come_before_their_tool_and_the_answer_is_set_apart():
    command = engine.ToolCallItem(id="c", kind="command_execution", name="shell",
                                  server="baseagent", tool="shell", command="ls")
    text = render([
        turn_started(),
        completed(message("Looking first.", "m1")),
        started(command),
        completed(dataclasses.replace(command, outcome=engine.ToolOutcome(
            True, "a.txt\n", {"aggregated_output": "a.txt\n", "exit_code": 0}))),
        completed(message("Done: one file.", "m2")),
        engine.TurnEnded("completed", usage={"input_tokens": 1200, "cached_input_tokens": 200,
                                             "output_tokens": 30}),
    ])
    lines = text.splitlines()
    assert lines.index("Looking first.") < lines.index("$ ls")
    answer = lines.index("Done: one file.")
    assert lines[answer - 1].startswith("answer ─") and lines[answer + 1].startswith("─")
    assert lines[answer + 2].startswith(
        "✓ completed · turn 1 · 1,200 in (200 cached) · 30 out · ")


def test_failed_items_show_path_and_reason():
    change = engine.ToolCallItem(id="f", kind="file_change", name="apply_patch",
                                 server="baseagent", tool="apply_patch",
                                 changes=({"path": "a.py", "kind": "update"},))
    failed = engine.ToolOutcome(False, "Error: Failed to find expected lines in a.py:\nold line")
    text = render([turn_started(), started(change),
                   completed(dataclasses.replace(change, outcome=failed)),
                   engine.TurnEnded("failed", error="model call failed: cannot connect to "
                                                    "http://h/v1/chat/completions: connection "
                                                    "refused")])
    assert "M not written: a.py\n  Failed to find expected lines in a.py:\n  old line\n" in text
    assert "patch failed" not in text
    assert "✗ failed · turn 1" in text
    assert "  model call failed: cannot connect to http://h/v1/chat/completions" in text


def test_an_interrupted_turn_says_so():
    text = render([turn_started(),
                   engine.TurnEnded("interrupted", error="interrupted (received SIGINT)")])
    assert "■ interrupted · turn 1" in text and "interrupted (received SIGINT)" in text
