"""The terminal renderer on its own: events in, text out (no terminal, no spinner)."""
from __future__ import annotations

import io

from baseagent.output import events as ev
from baseagent.output.pretty import PrettySink


def render(events: list[ev.ThreadEvent]) -> str:
    out = io.StringIO()
    sink = PrettySink(out, spinner=False)
    for event in events:
        sink.emit(event)
    sink.close()
    return out.getvalue()


def started(item: ev.ThreadItem) -> ev.ItemStarted:
    return ev.ItemStarted(item=item)


def updated(item: ev.ThreadItem) -> ev.ItemUpdated:
    return ev.ItemUpdated(item=item)


def completed(item: ev.ThreadItem) -> ev.ItemCompleted:
    return ev.ItemCompleted(item=item)


def reasoning(text: str) -> ev.ReasoningItem:
    return ev.ReasoningItem(id="r", text=text)


def message(text: str, item_id: str = "m") -> ev.AgentMessageItem:
    return ev.AgentMessageItem(id=item_id, text=text)


def test_reasoning_and_message_text_never_interleave():
    # the provider streams both at once: reasoning and message deltas alternate
    text = render([
        ev.TurnStarted(),
        started(reasoning("Let me")), started(message("The ans")),
        updated(reasoning("Let me think")), updated(message("The answer is")),
        updated(reasoning("Let me think about it.")),
        completed(reasoning("Let me think about it.")), completed(message("The answer is 42.")),
        ev.TurnCompleted(usage=ev.Usage(input_tokens=10, output_tokens=2)),
    ])
    assert "Let me think about it.\n" in text
    assert text.index("Let me think about it.") < text.index("The answer is 42.")
    assert "The ans" not in text.replace("The answer is 42.", "")  # no partial message


def test_interim_messages_come_before_their_tool_and_the_answer_is_set_apart():
    command = ev.CommandExecutionItem(id="c", command="ls")
    text = render([
        ev.TurnStarted(),
        completed(message("Looking first.", "m1")),
        started(command),
        completed(command.model_copy(update={"aggregated_output": "a.txt\n", "exit_code": 0,
                                             "status": "completed"})),
        completed(message("Done: one file.", "m2")),
        ev.TurnCompleted(usage=ev.Usage(input_tokens=1200, cached_input_tokens=200,
                                        output_tokens=30)),
    ])
    lines = text.splitlines()
    assert lines.index("Looking first.") < lines.index("$ ls")
    answer = lines.index("Done: one file.")
    assert lines[answer - 1].startswith("answer ─") and lines[answer + 1].startswith("─")
    assert lines[answer + 2].startswith(
        "✓ completed · turn 1 · 1,200 in (200 cached) · 30 out · ")


def test_failed_items_show_path_and_reason():
    change = ev.FileChangeItem(id="f", changes=[ev.FileUpdateChange(path="a.py", kind="update")],
                               status="failed",
                               error=ev.ItemError(message="Failed to find expected lines in "
                                                          "a.py:\nold line"))
    text = render([ev.TurnStarted(), started(change.model_copy(update={
        "status": "in_progress", "error": None})), completed(change),
        ev.TurnFailed(error=ev.ThreadError(message="model call failed: cannot connect to "
                                                   "http://h/v1/chat/completions: connection "
                                                   "refused"))])
    assert "M not written: a.py\n  Failed to find expected lines in a.py:\n  old line\n" in text
    assert "patch failed" not in text
    assert "✗ failed · turn 1" in text
    assert "  model call failed: cannot connect to http://h/v1/chat/completions" in text


def test_an_interrupted_turn_says_so():
    text = render([ev.TurnStarted(),
                   ev.TurnFailed(error=ev.ThreadError(message="interrupted (received SIGINT)"))])
    assert "■ interrupted · turn 1" in text and "interrupted (received SIGINT)" in text
