"""The terminal as a mapper over the engine's events: engine events into an Emitter (as the
loop sends them: redacted, fanned out), the exact screen text out. No terminal, no spinner,
a clock that stands still (so the summary shows no wall time)."""
from __future__ import annotations

import dataclasses
import io

from baseagent.emitting import events as engine
from baseagent.output.emitter import Emitter
from baseagent.output.events import ErrorEvent
from baseagent.output.pretty import PrettySink
from baseagent.output.redact import Redactor

SECRET = "sk-proj-terminalSECRET0123456789abcdef"
RULE = "─" * 80


def screen(events: list[engine.RunEvent], details: dict[str, str] | None = None) -> str:
    out = io.StringIO()
    sink = PrettySink(out, spinner=False, clock=lambda: 0.0)
    emitter = Emitter([sink], redact=Redactor([SECRET]))
    for event in events:
        emitter.send(event)
        item = getattr(event, "item", None)
        if isinstance(event, engine.ItemCompleted) and item.id in (details or {}):
            emitter.detail(item.id, details[item.id])
    sink.close()
    return out.getvalue()


def call(item_id: str, kind: str, tool: str, **fields) -> engine.ToolCallItem:
    return engine.ToolCallItem(id=item_id, kind=kind, name=tool, server="baseagent", tool=tool,
                               **fields)


def ran(item: engine.ToolCallItem, success: bool, output: str, **data) -> engine.ItemCompleted:
    return engine.ItemCompleted(dataclasses.replace(
        item, outcome=engine.ToolOutcome(success, output, data)))


def text(item_id: str, kind: str, value: str) -> engine.TextItem:
    return engine.TextItem(id=item_id, kind=kind, text=value)


TURN = engine.TurnStarted(turn_id="turn_1", thread_id="thread_1", instruction="go")
STEP = engine.StepStarted(turn_id="turn_1", number=1)


def test_a_command_and_the_answer():
    shell = call("item_1", "command_execution", "shell", command=f"ls; echo {SECRET}")
    got = screen([
        engine.ThreadStarted("thread_1"), TURN, STEP,
        engine.ItemStarted(text("item_0", "reasoning", "Let me")),
        engine.ItemUpdated(text("item_0", "reasoning", "Let me look.")),
        engine.ItemCompleted(text("item_0", "reasoning", "Let me look.")),
        engine.ItemCompleted(text("item_2", "message", "Looking first.")),
        engine.ModelResponded("Looking first.", (engine.CallRequest("c1", "shell", "{}"),)),
        engine.ToolStarted("c1", "shell", "item_1"),
        engine.ItemStarted(shell),
        ran(shell, True, "a.py\n", aggregated_output=f"a.py\n{SECRET}\n", exit_code=0),
        engine.ToolFinished("c1", "shell", "item_1", True, "a.py\n"),
        STEP,
        engine.ItemStarted(text("item_3", "message", "Do")),
        engine.ItemCompleted(text("item_3", "message", f"Done: {SECRET}")),
        engine.TurnEnded("completed", usage={"input_tokens": 1200, "cached_input_tokens": 200,
                                             "output_tokens": 30}),
    ])
    assert got == (
        "thread thread_1\n"
        "Let me look.\n"
        "Looking first.\n"
        "$ ls; echo [REDACTED]\n"
        "  a.py\n"
        "  [REDACTED]\n"
        "  exit 0 (completed)\n"
        "\n"
        "answer " + "─" * 73 + "\n"
        "Done: [REDACTED]\n"
        + RULE + "\n"
        "✓ completed · turn 1 · 1,200 in (200 cached) · 30 out · cost unknown\n")


def test_a_patch_with_its_diff():
    patch = call("item_0", "file_change", "apply_patch",
                 changes=({"path": "a.py", "kind": "update"},))
    got = screen([
        TURN, engine.ItemStarted(patch),
        ran(patch, True, "Done.", changes=[{"path": "a.py", "kind": "update"},
                                           {"path": "b.py", "kind": "add"}]),
        engine.TurnEnded("completed"),
    ], details={"item_0": "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-two\n+TWO"})
    assert got == ("M a.py\n"
                   "A b.py\n"
                   "  --- a/a.py\n"
                   "  +++ b/a.py\n"
                   "  @@ -1 +1 @@\n"
                   "  -two\n"
                   "  +TWO\n"
                   "✓ completed · turn 1 · 0 in (0 cached) · 0 out · cost unknown\n")


def test_failures_say_what_failed_and_why():
    patch = call("item_0", "file_change", "apply_patch",
                 changes=({"path": "a.py", "kind": "update"},))
    refused = call("item_1", "file_change", "write_file")  # refused before it planned
    shell = call("item_2", "command_execution", "shell", command="make")
    read = call("item_3", "mcp_tool_call", "read_file", arguments={"file_path": "x.txt"})
    got = screen([
        TURN,
        engine.ItemStarted(patch),
        ran(patch, False, "Error: Failed to find expected lines in a.py:\nold line"),
        engine.ItemStarted(refused),
        engine.ItemCompleted(dataclasses.replace(refused, outcome=engine.ToolOutcome(
            False, "Error: sandbox is read-only", named=({"path": "n.txt", "kind": "add"},)))),
        engine.ItemStarted(shell),
        ran(shell, True, "boom\n", aggregated_output="boom\n", exit_code=2),
        engine.ItemStarted(read),
        ran(read, False, "Error: file not found: x.txt"),
        engine.Notice("retrying the model call (1/3)"),
        engine.TurnEnded("failed", error="model call failed: connection refused"),
    ])
    assert got == ("M not written: a.py\n"
                   "  Failed to find expected lines in a.py:\n"
                   "  old line\n"
                   "A not written: n.txt\n"
                   "  sandbox is read-only\n"
                   "$ make\n"
                   "  boom\n"
                   "  exit 2 (failed)\n"
                   "• read_file x.txt\n"
                   "  Error: file not found: x.txt\n"
                   "! retrying the model call (1/3)\n"
                   "✗ failed · turn 1\n"
                   "  model call failed: connection refused\n")


def test_an_interrupted_command_a_plan_a_sub_agent_and_a_pause():
    plan = engine.TurnScopedItem("item_0", "todo_list", {"items": [
        {"text": "read", "completed": True}, {"text": "fix", "completed": False}]})
    child = call("item_1", "collab_tool_call", "delegate", task="look around",
                 thread_id="thread_1")
    shell = call("item_2", "command_execution", "shell", command="sleep 9")
    got = screen([
        TURN, engine.ItemStarted(plan), engine.ItemStarted(child),
        ran(child, True, "found it", items=[text("item_1.item_0", "message", "found it")]),
        engine.ItemStarted(shell),
        engine.ItemCompleted(dataclasses.replace(shell, outcome=engine.ToolOutcome(
            False, "interrupted", interrupted=True))),
        engine.ItemCompleted(plan),
        engine.TurnEnded("requires_action", pending=(
            engine.PendingTool("call_9", "lookup", {"q": "x"}, "item_3"),)),
        engine.TurnStarted(turn_id="turn_1", thread_id="thread_1", continued=True),
        engine.TurnEnded("interrupted", error="interrupted (received SIGINT)"),
    ])
    assert got == ("» sub-agent: look around\n"
                   "« sub-agent completed after 1 items\n"
                   "$ sleep 9\n"
                   "  interrupted\n"  # no output of its own: the text the model got
                   "  stopped\n"
                   "Plan (1/2 done)\n"
                   "  [x] read\n"
                   "  [ ] fix\n"
                   "waiting for your tools: lookup (call_9)\n"
                   "■ interrupted · turn 2\n"
                   "  interrupted (received SIGINT)\n")


def test_a_named_specialist_is_shown_by_its_name():
    child = call("item_0", "collab_tool_call", "delegate_to_specialist", task="read a.txt",
                 thread_id="thread_1", specialist="reader")
    got = screen([TURN, engine.ItemStarted(child),
                  ran(child, False, "Error: the sub-agent did not finish", items=[])])
    assert got.startswith("» sub-agent reader: read a.txt\n"
                          "« sub-agent reader failed after 0 items\n")


def test_the_terminal_reads_the_engine_events_not_the_codex_ones():
    out = io.StringIO()
    sink = PrettySink(out, spinner=False)
    assert sink.run_events
    sink.emit(ErrorEvent(message="not drawn"))  # the Codex form of a Notice
    sink.run_event(engine.Notice("drawn"))
    assert out.getvalue() == "! drawn\n"


def test_an_approval_question_of_a_multi_line_command_and_a_declined_command():
    """Issue 40, item 8: a multi-line command's later lines sit under its first; [p] is
    offered only with a prefix; a declined command says `declined`, with no exit code."""
    TURN = engine.TurnStarted(turn_id="turn_0", thread_id="thread_1")
    question = engine.ApprovalItem(id="a", command="git add -A\ngit commit -m x", cwd="/w",
                                   kind="unsafe")
    shell = call("item_1", "command_execution", "shell", command="git add -A\ngit commit -m x")
    got = screen([
        TURN, engine.ItemStarted(question),
        engine.ItemCompleted(dataclasses.replace(question, decision="denied")),
        engine.ItemStarted(shell),
        ran(shell, False, "declined", status="declined", exit_code=None),
    ])
    lines = got.splitlines()
    assert lines[1:3] == ["  $ git add -A", "    git commit -m x"], got
    assert "[p]" not in got and "  [y] run it once · [n] decline" in got
    assert "  ✗ declined" in lines and "  declined" in lines and "exit none" not in got
