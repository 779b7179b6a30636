"""Terminal renderer: the engine's events (emitting/events.py) drawn for a person with rich.

Like the Codex mapper (output/codex.py) and AgentB's (output/agentb.py), it reads the
engine's own events (`run_event`, redacted by the Emitter), never the Codex wire: each item
event carries the whole item, so what a tool call shows (its command, its changes, how it
ended) is read from the item and its outcome.

What a person needs that a harness does not:
- a header (thread, model, workspace, sandbox) the moment the command starts, drawn by the
  entry point before the model library is even imported (`header()`);
- a sign of life whenever nothing else moves: a spinner with the elapsed time while the
  model is thinking and while a command runs (a status line redrawn in place, on a row of
  its own under everything else, so it never writes over text);
- work as it happens: reasoning streamed as it arrives; a running command's last lines
  (COMMAND_TAIL_LINES), redrawn in place as its output grows, then its output when it ends;
  the answer visible as it streams;
- reasoning never mixed with message text: agent messages are held until it is known
  whether they are interim (a tool call follows) or the final answer, which is printed set
  apart under an `answer` rule, rendered as Markdown (output/answer.py); while held (and
  while they stream) they are shown in the live block, not printed;
- failures that say what failed and why: the path and reason of a refused file change, the
  exit code and output of a failed command, the error of a tool call;
- a summary line at the end of each turn: status, turn number, tokens in / cached / out,
  cost and wall time;
- the turn's plan (the todo_list item) as a checklist pinned under the output and redrawn
  in place at each update; when the turn ends it stays on screen in its final state. Off a
  terminal it is printed once, in its final state;
- a retry notice that counts (`Reconnecting... 3/5`) replaces itself in place; the last
  state stays, one line.

On a live terminal (output/term.py: a TTY that is not TERM=dumb) what is still changing is
the live block (output/live.py) under the scrollback: the open line of streamed reasoning,
the streaming or held message, running commands' last lines, a counting notice, the plan,
then the spinner. Everything on screen is drawn through `_safely`, which lifts the block,
prints, draws the block again below what was printed and writes the whole frame at once:
output is never erased, and streamed text reaches the scrollback a whole row at a time,
broken between words. Off a live terminal there is no block and no spinner: lines are
printed once, as they are known. Colour only when the entry point's TerminalCaps say so
(NO_COLOR, TERM=dumb, not a terminal: none); nothing here reads the environment.

The sink only renders; the entry point hands it to `Agent.from_settings(..., sinks=[...])`
and tells it where usage comes from (`bind_usage`), so the library stays free of terminals.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any, Callable, TextIO

from rich.console import Console
from rich.text import Text

from baseagent.emitting import events as engine
from baseagent.cost_text import cost_text
from baseagent.output import events as ev
from baseagent.output import live
from baseagent.output.answer import print_markdown
from baseagent.output.codex import command_status, failure_reason
from baseagent.emitting.interface import EventListener
from baseagent.output.live import UP_AND_CLEAR, Frame, Spinner
from baseagent.output.term import TerminalCaps
from baseagent.textsafe import inert, inert_line

_STATUS_STYLE = {"completed": "green", "failed": "red", "declined": "yellow",
                 "in_progress": "cyan"}
_KIND_MARK = {"add": "A", "delete": "D", "update": "M"}
# Lines of a command's output shown when it ends (the model sees all of it).
OUTPUT_TAIL_LINES = 20
# Lines of a running command's output shown live, redrawn as it grows.
COMMAND_TAIL_LINES = 5
# Rows of a streaming (or held) message shown live; the whole of it is printed once known.
MESSAGE_ROWS = 12
# Rows of the screen the live block leaves alone (the spinner's, and one to spare).
SCREEN_MARGIN = 2
# Lines of a failure reason shown under the item (the JSONL item carries it whole).
REASON_LINES = 4
# The engine's events the terminal draws (the others, steps and the model's calls, would
# only lift and redraw the pinned plan).
_DRAWN = (engine.ThreadStarted, engine.TurnStarted, engine.ItemStarted, engine.ItemUpdated,
          engine.ItemCompleted, engine.TurnEnded, engine.RunFailed, engine.Notice)

# What an approval question says, by why the command waits (tools/approval.py).
_APPROVAL_WHY = {
    "escalation": "the model asks to run this outside the sandbox",
    "unsafe": "this command is not known to be read-only",
    "retry": "this failed in the sandbox; run it again outside?",
    "write": "a file tool would write outside the workspace or into .git",
}

UsageFn = Callable[[], Any]  # returns baseagent.agent.Usage (duck-typed: no import cycle)


class PrettySink(EventListener):
    """Draws the engine's events on a terminal. `caps`: what the stream can do, decided by
    the entry point (output/term.py; None: a terminal with colour if the stream is a TTY,
    plain lines otherwise). `spinner`: None = when the terminal is live."""

    run_events = True  # it draws the engine's events, not the Codex ones

    def __init__(self, stream: TextIO | None = None, *, caps: TerminalCaps | None = None,
                 spinner: bool | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        stream = stream or sys.stdout
        if caps is None:
            tty = _isatty(stream)
            caps = TerminalCaps(live=tty, colors="standard" if tty else None)
        self._caps = caps
        self._live = caps.live
        self._frame = Frame(stream)
        # Word-wrapped to the width (never cut mid-word by the terminal); the environment
        # is not read (_environ): the caps say what the terminal can do.
        self._console = Console(file=self._frame, highlight=False, soft_wrap=False,
                                force_terminal=caps.live, color_system=caps.colors,
                                no_color=not caps.color, width=caps.width,
                                height=caps.height, emoji=False, markup=False, _environ={})
        self._lock = threading.RLock()
        self._clock = clock
        self._spinner: Spinner | None = None
        if spinner if spinner is not None else caps.live:
            self._spinner = Spinner(self._raw_write, self._tick, clock, caps.color)
        self._streamed: dict[str, int] = {}  # reasoning item id -> characters printed
        self._held: str | None = None  # a completed agent message whose role is not known yet
        self._writing: str | None = None  # the message streaming now (shown live)
        self._running: dict[str, tuple[str, str]] = {}  # command item id -> (command, output)
        self._counting: tuple[str, str] | None = None  # a counting notice: (identity, text)
        self._headed: str | None = None  # thread id the header was drawn for
        self._usage: UsageFn | None = None
        self._turns = 0
        self._turn_started = 0.0
        self._pending_start: float | None = None
        self._turn_usage: Any = None
        self._gone = False
        # The plan: its checklist lines and whether it is pinned under the output (live
        # terminals only); the rows of the live block on screen now; streamed text of a
        # row not finished yet (live terminals: only whole rows reach the scrollback).
        self._plan: list[Text] = []
        self._pinned = False
        self._drawn = 0
        self._partial = ""
        self._partial_style = "dim italic"

    # -- set up by the entry point -----------------------------------------------------------

    def bind_usage(self, usage: UsageFn, turns_before: int = 0) -> None:
        """Where the summary line reads tokens and cost (the Agent's `usage`), and how many
        turns the thread had before this sink saw it (a resumed thread)."""
        self._usage = usage
        self._turns = turns_before

    def header(self, *, thread_id: str, model: str, cwd: str, sandbox: str,
               api_base: str | None = None, resumed_turns: int | None = None,
               notes: list[str] | tuple[str, ...] = ()) -> None:
        """What the session is about to work with (output/header.py draws it; entry points
        that must show it before importing this module call that directly, then
        `headed()`)."""
        from baseagent import __version__
        from baseagent.output.header import header_lines

        def draw() -> None:
            self._headed = thread_id
            self._end_line()
            for line in header_lines(version=__version__, thread_id=thread_id, model=model,
                                     cwd=cwd, sandbox=sandbox, api_base=api_base,
                                     resumed_turns=resumed_turns, notes=notes,
                                     color=self._caps.color,
                                     width=self._console.width):
                self._raw_write(line + "\n")
        self._safely(draw)

    def waiting(self, label: str = "starting") -> None:
        """A turn was asked for but has not started (the model client is still loading):
        show the spinner now; the turn's wall time counts from here."""
        def draw() -> None:
            self._pending_start = self._clock()
            self._status(label)
        self._safely(draw)

    def stop_waiting(self) -> None:
        """The turn asked for never started (cancelled while loading, a bad model)."""
        def draw() -> None:
            self._pending_start = None
            self._status(None)
        self._safely(draw)

    @property
    def turns(self) -> int:
        """Turns of the thread so far (those before this sink, and those it drew)."""
        return self._turns

    def headed(self, thread_id: str) -> None:
        """The header of this thread is already on screen: no `thread ...` line for it."""
        self._headed = thread_id

    def message(self, text: str, style: str = "dim") -> None:
        """A line from the entry point (interactive commands' answers)."""
        self._safely(lambda: self._print(Text(inert(text), style=style)))

    # -- events ------------------------------------------------------------------------------

    def emit(self, event: ev.ThreadEvent) -> None:
        """The Codex events: the terminal draws the engine's (`run_event`)."""

    def run_event(self, event: engine.RunEvent) -> None:
        """Draw one engine event; once the terminal is gone (a hangup, a closed pipe), draw
        nothing more: the run itself and its session record must not fail because of it."""
        if isinstance(event, _DRAWN):
            self._safely(lambda: self._render(event))

    def _safely(self, draw: Callable[[], None]) -> None:
        if self._gone:
            return
        try:
            with self._lock:
                self._lift()
                draw()
                self._drop()
                if self._spinner is not None:
                    self._spinner.draw(self._row_width())
                self._frame.commit()
        except (OSError, ValueError):
            self._gone = True

    def _tick(self) -> None:
        """The spinner's redraw (its thread): the status line only, in one write."""
        if self._gone or self._spinner is None:
            return
        with self._lock:
            try:
                self._spinner.draw(self._row_width())
                self._frame.commit()
            except (OSError, ValueError):
                self._gone = True
                raise

    def _render(self, event: engine.RunEvent) -> None:
        if isinstance(event, (engine.ItemStarted, engine.ItemUpdated, engine.ItemCompleted)):
            self._item(event.item, started=isinstance(event, engine.ItemStarted),
                       done=isinstance(event, engine.ItemCompleted))
        elif isinstance(event, engine.ThreadStarted):
            if self._headed != event.thread_id:
                self._print(Text(f"thread {event.thread_id}", style="dim"))
        elif isinstance(event, engine.TurnStarted):
            self._turns += 1
            self._turn_started = self._pending_start or self._clock()
            self._pending_start = None
            self._turn_usage = self._usage() if self._usage is not None else None
            self._status("thinking")
        elif isinstance(event, (engine.TurnEnded, engine.RunFailed)):
            self._writing = None  # nothing streams or runs past the end of a turn
            self._running.clear()
            self._turn_ended(event)
        elif isinstance(event, engine.Notice):
            self._notice(event.message)

    def _turn_ended(self, event: engine.TurnEnded | engine.RunFailed) -> None:
        if isinstance(event, engine.TurnEnded) and event.status == "completed":
            self._status(None)
            self._release_held(final=True)
            self._summary("completed", event.usage, None)
        elif isinstance(event, engine.TurnEnded) and event.status == "requires_action":
            self._status(None)
            self._release_held(final=False)
            calls = ", ".join(f"{inert_line(c.name)} ({inert_line(c.id)})"
                              for c in event.pending)
            self._print(Text.assemble(("waiting for your tools: ", "bold yellow"), calls))
        elif isinstance(event, (engine.TurnEnded, engine.RunFailed)):
            error = event.message if isinstance(event, engine.RunFailed) else event.error
            self._status(None)
            self._release_held(final=False)
            self._summary("failed", None, error or "")

    def _notice(self, message: str) -> None:
        """A notice; on a live terminal one that counts (`Reconnecting... 3/5`) stays in
        the live block, replaced by its next count, until something else is printed."""
        message = inert(message)
        identity = live.counted(message) if self._live else None
        if identity is None:
            self._print(Text(f"! {message}", style="yellow"))
            return
        if self._partial or (self._counting is not None and self._counting[0] != identity):
            # what came before stays as it was: text streamed since, another notice
            self._end_line()
        self._counting = (identity, message)

    def _item(self, item: engine.Item, started: bool, done: bool) -> None:
        if isinstance(item, engine.TextItem) and item.kind == "message":
            # Held: whether it is interim or the answer shows with what comes next. On a
            # live terminal it shows (its last rows) while it streams and while held.
            if done:
                self._writing = None
                self._release_held(final=False)
                self._held = item.text if item.text.strip() else None
                self._status("thinking")
            else:
                if started:
                    self._release_held(final=False)  # another message follows: interim
                    self._status("writing")
                self._writing = item.text
            return
        if isinstance(item, engine.TextItem):
            self._reasoning(item, done)
        elif isinstance(item, engine.TurnScopedItem) and item.kind == "todo_list":
            self._show_plan(item, done)
        elif isinstance(item, engine.ApprovalItem):
            self._approval(item, started, done)
        elif isinstance(item, engine.ToolCallItem):
            if started or done:
                self._release_held(final=False)  # something follows the message: interim
            self._tool_call(item, started, done)

    def _tool_call(self, item: engine.ToolCallItem, started: bool, done: bool) -> None:
        outcome = item.outcome
        if item.kind == "command_execution":
            self._command(item, started, done)
        elif item.kind == "file_change" and done:
            self._file_change(item)
            self._status("thinking")
        elif item.kind == "collab_tool_call":
            if started:
                who = (f"» sub-agent {inert_line(item.specialist)}: " if item.specialist
                       else "» sub-agent: ")
                self._print(Text.assemble((who, "bold magenta"), inert(item.task or "")))
                self._status("sub-agent working")
            elif done:
                status = _ended(outcome)
                nested = outcome.data.get("items", ()) if outcome is not None else ()
                who = f"sub-agent {inert_line(item.specialist)}" if item.specialist \
                    else "sub-agent"
                self._print(Text(f"« {who} {status} after {len(nested)} items",
                                 style=_STATUS_STYLE.get(status, "")))
                self._status("thinking")
        elif done:  # any other tool, shown as Codex shows it: an MCP-style tool call
            status = _ended(outcome)
            args = item.arguments if isinstance(item.arguments, Mapping) else {}
            target = next((str(v) for v in args.values() if v), "")
            label = item.tool if item.server == "baseagent" else f"{item.server}.{item.tool}"
            self._print(Text(inert_line(f"• {label} {target}".rstrip()),
                             style=_STATUS_STYLE.get(status, "")))
            if outcome is not None and not outcome.success:
                self._reason(outcome.output)
            self._status("thinking")

    def _approval(self, item: engine.ApprovalItem, started: bool, done: bool) -> None:
        """The question a command waits on (the terminal's approver then reads the
        answer: interactive/approver.py), and the answer once given."""
        if started:
            self._status(None)
            self._release_held(final=False)
            self._end_line()
            self._print(Text.assemble(("? approval needed: ", "bold yellow"),
                                      _APPROVAL_WHY.get(item.kind, item.kind)))
            for line in _command_lines(item.command, "  $ ", "    "):
                self._print(Text(line, style="bold"))
            if item.reason:
                self._print(Text(f"  why: {inert(item.reason)}", style="dim"))
            prefix = (f"[p] allow `{inert_line(item.prefix)}` for this session · "
                      if item.prefix else "")
            self._print(Text(f"  [y] run it once · {prefix}[n] decline (`n NOTE` tells "
                             "the model why)", style="yellow"))
        elif done:
            words = {"approved": ("✓ approved once", "green"),
                     "approved_for_session": (f"✓ approved `{inert_line(item.prefix)}` for "
                                              "this session", "green"),
                     "denied": ("✗ declined" + (f": {inert(item.note)}" if item.note else ""),
                                "red")}
            text, style = words.get(item.decision or "", (str(item.decision), ""))
            self._print(Text(f"  {text}", style=style))
            self._status("running")

    def _reasoning(self, item: engine.TextItem, done: bool) -> None:
        shown = self._streamed.get(item.id, 0)
        if len(item.text) < shown:  # a retried stream starts its text afresh
            self._end_line()
            shown = 0
        if len(item.text) > shown:
            self._stream_text(inert(item.text[shown:]), "dim italic")
            self._streamed[item.id] = len(item.text)
        if done:
            self._streamed.pop(item.id, None)
            self._end_line()
            self._status("thinking")

    def _stream_text(self, text: str, style: str) -> None:
        """Text as it arrives, a whole row at a time, broken between words: the open row
        waits (on a live terminal it shows in the live block), so nothing half written is
        left where the spinner or the block would erase it, and no terminal cuts a word."""
        self._partial_style = style
        *lines, self._partial = (self._partial + text).split("\n")
        rows: list[str] = []
        for line in lines:
            rows.extend(live.wrap(line, self._row_width()))
        done, self._partial = live.full_rows(self._partial, self._row_width())
        rows.extend(done)
        if rows:
            self._end_line(keep_partial=True)
            for row in rows:
                self._console.print(Text(row, style=style))

    # -- the plan ----------------------------------------------------------------------------

    def _show_plan(self, item: engine.TurnScopedItem, done: bool) -> None:
        self._plan = _checklist(item)
        if self._live:
            self._pinned = True  # drawn (again) under the output by _safely
            if done:
                self._unpin()
        elif done:  # no cursor to move back with: the final state, once
            for line in self._plan:
                self._print(line)
            self._plan = []

    def _unpin(self) -> None:
        """The checklist stays where it is, in its last state; output goes on below it."""
        if not self._pinned:
            return
        self._lift()
        self._end_line()
        for line in self._plan:
            self._print(line)
        self._pinned = False
        self._plan = []

    # -- the live block ----------------------------------------------------------------------

    def _lift(self) -> None:
        """Take the live block (and the spinner line) off the screen before drawing."""
        if self._spinner is not None:
            self._spinner.clear()
        if self._drawn:
            self._raw_write("\r" + UP_AND_CLEAR * self._drawn)
            self._drawn = 0

    def _drop(self) -> None:
        """Draw the live block again under what was printed: one screen row per line,
        never more rows than the screen has (the oldest are left out)."""
        if not self._live or self._drawn:
            return
        rows = self._block()
        room = max(1, self._console.height - SCREEN_MARGIN)
        width = self._row_width()
        for row in rows[-room:]:
            self._console.print(row if row.cell_len <= width else
                                Text(live.fit(row.plain, width), style=row.style),
                                overflow="crop", no_wrap=True)
        self._drawn = len(rows[-room:])

    def _block(self) -> list[Text]:
        """What is still changing, top to bottom (see the module docstring)."""
        width = self._row_width()
        rows: list[Text] = []
        if self._counting is not None:  # older than any open row (see _notice)
            rows.append(Text(f"! {self._counting[1]}", style="yellow"))
        if self._partial:
            rows.append(Text(self._partial, style=self._partial_style))
        message = self._held or self._writing
        if message:  # its last rows: lines wrapped from the end until there are enough
            text_rows: list[str] = []
            for line in reversed(message.strip("\n").split("\n")):
                text_rows[:0] = live.wrap(inert_line(line), width)
                if len(text_rows) >= MESSAGE_ROWS:
                    break
            rows.extend(Text(row) for row in text_rows[-MESSAGE_ROWS:])
        for command, output in self._running.values():
            if len(self._running) > 1:
                rows.append(Text(f"$ {inert_line(command)}", style="dim"))
            rows.extend(Text(f"  {inert_line(line)}", style="dim")
                        for line in live.tail_lines(output, COMMAND_TAIL_LINES))
        if self._pinned:
            rows.extend(self._plan)
        return rows

    def _row_width(self) -> int:
        """Columns a row of the live block may take: one less than the screen, so the
        cursor never sits in the margin where terminals disagree on wrapping."""
        return max(1, self._console.width - 1)

    def _command(self, item: engine.ToolCallItem, started: bool, done: bool) -> None:
        if started:
            first, *rest = _command_lines(item.command, "", "  ")
            self._print(Text.assemble(("$ ", "bold cyan"), first))
            for line in rest:
                self._print(Text(line))
            self._status("running")
            if self._live:
                self._running[item.id] = (item.command, "")
        elif not done:  # its output so far (tools/shell.py progress): the last lines, live
            progress = item.progress or {}
            if self._live and item.id in self._running:
                self._running[item.id] = (item.command,
                                          str(progress.get("aggregated_output", "")))
        else:
            self._running.pop(item.id, None)
            outcome = item.outcome
            data = outcome.data if outcome is not None else {}
            output = data.get("aggregated_output", outcome.output if outcome else "")
            out = inert(output.rstrip("\n"))
            if out:
                lines = out.splitlines()
                if len(lines) > OUTPUT_TAIL_LINES:
                    self._print(Text(f"  … {len(lines) - OUTPUT_TAIL_LINES} more lines",
                                     style="dim"))
                for line in lines[-OUTPUT_TAIL_LINES:]:
                    self._print(Text(f"  {line}", style="dim"))
            status = command_status(outcome) if outcome is not None else "in_progress"
            exit_code = data.get("exit_code")
            if status == "declined":  # no exit code to speak of: stopped, or never ran
                word = "stopped" if outcome is not None and outcome.interrupted else "declined"
                self._print(Text(f"  {word}", style=_STATUS_STYLE["declined"]))
            else:
                code = "none" if exit_code is None else str(exit_code)
                self._print(Text(f"  exit {code} ({status})",
                                 style=_STATUS_STYLE.get(status, "")))
            self._status("thinking")

    def _file_change(self, item: engine.ToolCallItem) -> None:
        outcome = item.outcome
        status = _ended(outcome)
        failed = status == "failed"
        if outcome is None:
            changes = item.changes
        elif outcome.success:
            changes = tuple(outcome.data.get("changes", ()))
        else:  # nothing changed: the files the call was about
            changes = item.changes or outcome.named
        style = _STATUS_STYLE.get(status, "")
        for change in changes:
            verb = "not written: " if failed else ""
            self._print(Text(f"{_KIND_MARK[change['kind']]} {verb}"
                             f"{inert_line(_short_path(change['path']))}", style=style))
        if failed:
            if not changes:
                self._print(Text("file change failed", style="red"))
            self._reason(failure_reason(outcome.output) if outcome is not None
                         else "no reason given")

    def _reason(self, message: str) -> None:
        lines = inert(message.strip()).splitlines() or [""]
        for line in lines[:REASON_LINES]:
            self._print(Text(f"  {line}", style="red"))
        if len(lines) > REASON_LINES:
            self._print(Text(f"  … {len(lines) - REASON_LINES} more lines", style="dim"))

    def _release_held(self, final: bool) -> None:
        text, self._held = self._held, None
        if text is None:
            return
        text = inert(text)
        self._end_line()
        if final:
            self._console.print()
            self._console.rule(Text("answer", style="bold green"), style="green",
                               align="left")
            print_markdown(self._console, text.strip("\n"))
            self._console.rule(style="green")
        else:
            self._print(Text(text.strip("\n")))

    def _summary(self, status: str, usage: Mapping[str, int] | None,
                 error: str | None) -> None:
        parts = [f"turn {self._turns}"]
        spent = self._spent(usage)
        if spent is not None:
            tokens_in, cached, tokens_out, cost = spent
            parts.append(f"{tokens_in:,} in ({cached:,} cached) · {tokens_out:,} out")
            parts.append(cost_text(cost))
        if self._turn_started:
            parts.append(f"{self._clock() - self._turn_started:.1f}s")
        mark, style = ("✓", "green") if status == "completed" else ("✗", "red")
        if error is not None and error.startswith("interrupted"):
            mark, style, status = "■", "yellow", "interrupted"
        self._print(Text.assemble((f"{mark} {status}", f"bold {style}"),
                                  (" · " + " · ".join(parts), "dim")))
        if error is not None and status != "interrupted":
            self._reason(error)
        elif error is not None:
            self._print(Text(f"  {error}", style="yellow"))

    def _spent(self, usage: Mapping[str, int] | None
               ) -> tuple[int, int, int, float | None] | None:
        """This turn's tokens and cost: from the bound usage, else the event's totals."""
        if self._usage is not None and self._turn_usage is not None:
            now = self._usage().minus(self._turn_usage)
            return now.input_tokens, now.cached_input_tokens, now.output_tokens, now.cost_usd
        if usage is not None:
            return (usage.get("input_tokens", 0), usage.get("cached_input_tokens", 0),
                    usage.get("output_tokens", 0), None)
        return None

    # -- drawing -----------------------------------------------------------------------------

    def _status(self, label: str | None) -> None:
        if self._spinner is not None:
            self._spinner.set(label, restart=label != self._spinner.label)

    def _raw_write(self, text: str) -> None:
        self._frame.write(text)

    def _end_line(self, keep_partial: bool = False) -> None:
        """Before anything is printed: the counting notice stays in its last state
        (printed), the open line ends, the spinner line is cleared."""
        if self._spinner is not None:
            self._spinner.clear()
        if self._counting is not None:
            counting, self._counting = self._counting, None
            self._console.print(Text(f"! {counting[1]}", style="yellow"))
        if self._partial and not keep_partial:
            self._console.print(Text(self._partial, style=self._partial_style))
            self._partial = ""

    def _print(self, text: Text) -> None:
        self._end_line()
        self._console.print(text)

    def detail(self, _item_id: str, text: str) -> None:
        """A unified diff from a file tool: colour the lines a reader scans for."""
        def draw() -> None:
            for line in inert(text).splitlines():
                if line.startswith(("+++", "---")):
                    style = "bold"
                elif line.startswith("+"):
                    style = "green"
                elif line.startswith("-"):
                    style = "red"
                elif line.startswith("@@"):
                    style = "cyan"
                else:
                    style = "dim"
                self._print(Text(f"  {line}", style=style))
        self._safely(draw)

    def close(self) -> None:
        try:
            with self._lock:
                if self._spinner is not None:
                    self._spinner.stop()
                self._lift()
                self._writing = None
                self._running.clear()
                self._release_held(final=False)
                self._end_line()
                if self._pinned:  # a turn that never completed its plan: leave it drawn
                    for line in self._plan:
                        self._console.print(line)
                    self._pinned = False
                self._frame.commit()
        except (OSError, ValueError):
            pass


def _checklist(item: engine.TurnScopedItem) -> list[Text]:
    """The plan (update_plan's payload: `items`, each a `text` and whether `completed`)."""
    entries = item.data.get("items", ())
    done = sum(1 for entry in entries if entry.get("completed"))
    lines = [Text(f"Plan ({done}/{len(entries)} done)", style="bold")]
    for entry in entries:
        step = inert_line(str(entry['text']))
        lines.append(Text(f"  [x] {step}", style="green") if entry.get("completed")
                     else Text(f"  [ ] {step}"))
    return lines


def _command_lines(command: str, first: str, rest: str) -> list[str]:
    """A command as a person reads it: made inert (textsafe.py), its first line after
    `first`, each further line of a multi-line command after `rest`."""
    head, *tail = inert(command).split("\n")
    return [first + head, *(rest + line for line in tail)]


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _ended(outcome: engine.ToolOutcome | None) -> str:
    """How a tool call that is not a command ended, as its item says."""
    if outcome is None:
        return "in_progress"
    return "completed" if outcome.success else "failed"


def _short_path(path: str) -> str:
    """Event paths are absolute (as Codex's are); a person reads them relative to where
    they started the agent when the file is under it."""
    try:
        here = os.getcwd()
    except OSError:
        return path
    if os.path.isabs(path) and os.path.commonpath([here, path]) == here and path != here:
        return os.path.relpath(path, here)
    return path
