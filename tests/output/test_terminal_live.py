"""The live terminal: the engine's events into the renderer on a terminal that can move its
cursor, and the screen a person sees (pyte, a terminal emulator) out.

What moves is drawn in place under the scrollback (output/live.py): a running command's
last lines, the answer while it streams, the open line of reasoning, a retry notice
counting up, the spinner. What is kept is printed once. No colour when the entry point
says so (NO_COLOR), and no word cut in two at the end of a row.
"""
from __future__ import annotations

import dataclasses
import io
import re
import time

import pyte
import pytest

from baseagent.emitting import events as engine
from baseagent.output.header import header_lines
from baseagent.output.pretty import PrettySink
from baseagent.output.term import TerminalCaps, terminal_caps

WIDTH, HEIGHT = 60, 30
SGR = re.compile(r"\x1b\[[0-9;]*m")  # colours and styles (not cursor movement)
TURN = engine.TurnStarted(turn_id="turn_1", thread_id="thread_1")


def sink_on(out: io.StringIO, colors: str | None = "standard", spinner: bool = False,
            live: bool = True) -> PrettySink:
    caps = TerminalCaps(live=live, colors=colors, width=WIDTH, height=HEIGHT)
    return PrettySink(out, caps=caps, spinner=spinner, clock=time.monotonic)


def screen(raw: str) -> list[str]:
    """The rows a terminal shows after `raw` (the tty turns each \\n into \\r\\n)."""
    term = pyte.Screen(WIDTH, HEIGHT)
    pyte.Stream(term).feed(raw.replace("\n", "\r\n"))
    return [row.rstrip() for row in term.display]


def feed(sink: PrettySink, *events: engine.RunEvent) -> None:
    for event in events:
        sink.run_event(event)


def shell(command: str) -> engine.ToolCallItem:
    return engine.ToolCallItem(id="item_1", kind="command_execution", name="shell",
                               server="baseagent", tool="shell", command=command)


def output(*numbers: int) -> str:
    return "".join(f"line {n}\n" for n in numbers)


def message(text: str) -> engine.TextItem:
    return engine.TextItem(id="item_2", kind="message", text=text)


def reasoning(text: str) -> engine.TextItem:
    return engine.TextItem(id="item_3", kind="reasoning", text=text)


def test_a_running_command_shows_its_last_lines_in_place_and_keeps_its_output():
    out = io.StringIO()
    sink = sink_on(out)
    command = shell("make test")
    feed(sink, TURN, engine.ItemStarted(command),
         engine.ItemUpdated(dataclasses.replace(command, progress={
             "aggregated_output": output(*range(1, 9))})))
    rows = screen(out.getvalue())
    assert rows[:6] == ["$ make test", "  line 4", "  line 5", "  line 6", "  line 7",
                        "  line 8"]
    assert "  line 3" not in rows  # bounded: the last five lines only

    feed(sink, engine.ItemUpdated(dataclasses.replace(command, progress={
        "aggregated_output": output(*range(1, 13))})))
    rows = screen(out.getvalue())
    assert rows[:6] == ["$ make test", "  line 8", "  line 9", "  line 10", "  line 11",
                        "  line 12"]  # redrawn in place, not printed again below

    feed(sink, engine.ItemCompleted(dataclasses.replace(command, outcome=engine.ToolOutcome(
        True, output(*range(1, 13)), {"aggregated_output": output(*range(1, 13)),
                                      "exit_code": 0}))))
    sink.close()
    rows = screen(out.getvalue())
    assert rows[:15] == ["$ make test", *[f"  line {n}" for n in range(1, 13)],
                         "  exit 0 (completed)", ""]


def test_the_answer_shows_while_it_streams_and_is_rendered_as_markdown_when_complete():
    out = io.StringIO()
    sink = sink_on(out)
    feed(sink, TURN, engine.ItemStarted(message("The **ans")),
         engine.ItemUpdated(message("The **answer** is:\n\n```py\nx = 4")))
    rows = screen(out.getvalue())
    assert rows[:4] == ["The **answer** is:", "", "```py", "x = 4"]  # as it stands, raw

    answer = "The **answer** is:\n\n```py\nx = 42\n```\n- one\n- two\n\nsee `x`\nthen go"
    feed(sink, engine.ItemCompleted(message(answer)),
         engine.TurnEnded("completed", usage={"input_tokens": 1, "output_tokens": 1}))
    sink.close()
    rows = screen(out.getvalue())
    text = "\n".join(rows)
    assert rows[0] == "" and rows[1].startswith("answer ─")  # the preview made way
    assert "The answer is:" in rows and "**" not in text and "```" not in text
    assert any(row.strip() == "x = 42" for row in rows)
    assert [row for row in rows if row.startswith(" • ")] == [" • one", " • two"]
    # a single newline stays a line break (CommonMark would join these lines)
    assert rows.index("see x") + 1 == rows.index("then go")
    assert rows[rows.index("then go") + 1].startswith("─")


def test_the_spinner_never_writes_over_reasoning_or_a_half_written_line():
    out = io.StringIO()
    sink = sink_on(out, spinner=True)
    try:
        feed(sink, TURN, engine.ItemStarted(reasoning("Let me think about th")),
             engine.ItemStarted(message("Wri")))  # the spinner says "writing" at once
        time.sleep(0.35)  # and redraws a few times on its own thread
        rows = screen(out.getvalue())
    finally:
        sink.close()
    assert rows[0] == "Let me think about th"
    assert rows[1] == "Wri"
    assert re.match(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] writing \d+\.\ds · Ctrl-C to cancel$", rows[2]), rows


def test_retry_notices_count_up_in_place_and_the_last_one_stays():
    events = [TURN, *[engine.Notice(f"Reconnecting... {n}/5 after a timeout (waiting 1.0s)")
                      for n in (1, 2, 3)],
              engine.ItemCompleted(reasoning("Back.\n")),
              engine.TurnEnded("failed", error="stopped")]
    out = io.StringIO()
    sink = sink_on(out)
    feed(sink, *events)
    sink.close()
    rows = screen(out.getvalue())
    assert [row for row in rows if "Reconnecting" in row] == [
        "! Reconnecting... 3/5 after a timeout (waiting 1.0s)"]
    assert rows.index("Back.") == 1
    # off a live terminal (TERM=dumb, a pipe) each notice is its own line, as before
    plain = io.StringIO()
    sink = sink_on(plain, colors=None, live=False)
    feed(sink, *events)
    sink.close()
    assert plain.getvalue().count("! Reconnecting...") == 3


def _a_busy_turn(sink: PrettySink) -> None:
    command = shell("make")
    feed(sink, TURN, engine.ItemStarted(reasoning("Thinking it over")),
         engine.ItemCompleted(reasoning("Thinking it over.\n")),
         engine.ItemStarted(command),
         engine.ItemUpdated(dataclasses.replace(command, progress={"aggregated_output": "a\n"})),
         engine.ItemCompleted(dataclasses.replace(command, outcome=engine.ToolOutcome(
             False, "a\nb\n", {"aggregated_output": "a\nb\n", "exit_code": 2}))),
         engine.ItemStarted(message("**Do")),
         engine.ItemCompleted(message("**Done** with `make`.")),
         engine.TurnEnded("completed"))
    sink.close()


def test_no_color_means_no_colour_codes_and_the_cursor_still_moves():
    out = io.StringIO()
    _a_busy_turn(sink_on(out, colors=None, spinner=True))
    raw = out.getvalue()
    assert not SGR.search(raw), raw
    assert "\x1b[1A" in raw  # still a live terminal: the block is redrawn in place
    assert "Done with make." in screen(raw)
    coloured = io.StringIO()
    _a_busy_turn(sink_on(coloured, spinner=True))
    assert SGR.search(coloured.getvalue())  # the same turn with colour has them


def test_a_dumb_terminal_gets_plain_lines_and_no_cursor_movement():
    out = io.StringIO()
    _a_busy_turn(sink_on(out, colors=None, live=False))
    raw = out.getvalue()
    assert "\x1b" not in raw and "\r" not in raw
    assert raw.splitlines()[:5] == ["Thinking it over.", "$ make", "  a", "  b",
                                    "  exit 2 (failed)"]


@pytest.mark.parametrize("live", [True, False])
def test_long_lines_wrap_between_words(live):
    words = [f"word{n:02d}" for n in range(40)]
    text = " ".join(words)
    out = io.StringIO()
    sink = sink_on(out, live=live, colors="standard" if live else None)
    feed(sink, TURN, engine.ItemStarted(reasoning(text[:50])),
         engine.ItemUpdated(reasoning(text[:130])),
         engine.ItemCompleted(reasoning(text)),
         engine.ItemCompleted(message(text)),
         engine.TurnEnded("completed"))
    sink.close()
    rows = [row for row in screen(out.getvalue()) if row.startswith("word")]
    assert len(rows) >= 2 * 5  # reasoning and answer, each over several rows
    assert all(token in words for row in rows for token in row.split()), rows


def test_the_header_without_colour_has_no_escape_codes():
    fields = dict(version="1", thread_id="t", model="m", cwd="/w", sandbox="s",
                  notes=["a note"])
    assert not any("\x1b" in line for line in header_lines(**fields, color=False))
    assert header_lines(**fields, color=False)[0] == "baseagent 1  thread t (new thread)"
    assert all("\x1b[" in line for line in header_lines(**fields, color=True))


def test_a_header_wider_than_the_terminal_breaks_between_its_fields():
    lines = header_lines(version="0.1.0", thread_id="0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
                         model="openai/gpt-4.1", cwd="/home/someone/projects/thing",
                         sandbox="workspace-write", api_base="http://127.0.0.1:8080/v1",
                         color=False, width=50)
    assert lines == ["baseagent 0.1.0",
                     "thread 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b (new thread)",
                     "model openai/gpt-4.1  api http://127.0.0.1:8080/v1",
                     "workspace /home/someone/projects/thing",
                     "sandbox workspace-write"]
    coloured = header_lines(version="0.1.0", thread_id="t", model="m", cwd="/w", sandbox="s",
                            width=50)  # escape codes take no columns
    assert len(coloured) == 2 and SGR.sub("", coloured[1]) == "model m  workspace /w  sandbox s"


@pytest.mark.parametrize("env,tty,expected", [
    ({"TERM": "xterm-256color"}, True, TerminalCaps(live=True, colors="256")),
    ({"TERM": "xterm", "COLORTERM": "truecolor"}, True, TerminalCaps(True, "truecolor")),
    ({"TERM": "xterm"}, True, TerminalCaps(live=True, colors="standard")),
    ({"TERM": "xterm", "NO_COLOR": "1"}, True, TerminalCaps(live=True, colors=None)),
    ({"TERM": "xterm", "NO_COLOR": ""}, True, TerminalCaps(live=True, colors="standard")),
    ({"TERM": "dumb"}, True, TerminalCaps(live=False, colors=None)),
    ({"TERM": "xterm-256color"}, False, TerminalCaps(live=False, colors=None)),
    ({"TERM": "xterm", "COLUMNS": "100", "LINES": "x"}, True,
     TerminalCaps(live=True, colors="standard", width=100)),
])
def test_terminal_caps_from_the_environment(env, tty, expected):
    assert terminal_caps(env, tty) == expected


def test_a_long_message_shows_only_its_last_rows_while_it_streams():
    out = io.StringIO()
    sink = sink_on(out)
    lines = [f"m{n:02d}" for n in range(1, 41)]
    feed(sink, TURN, engine.ItemStarted(message("m01")),
         engine.ItemUpdated(message("\n".join(lines))))
    rows = screen(out.getvalue())
    assert rows[:13] == [*lines[-12:], ""]  # bounded: the whole of it is printed once known
    feed(sink, engine.ItemCompleted(message("\n".join(lines))), engine.TurnEnded("completed"))
    sink.close()
    plain = re.sub(r"\x1b\[[0-9;]*[A-Za-z]|\r", "", out.getvalue())
    assert "\n".join(lines) in plain[plain.index("answer"):]  # then all of it, once
