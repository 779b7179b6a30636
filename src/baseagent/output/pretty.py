"""Terminal renderer: the engine's events (core/events.py) drawn for a person with rich.

Like the Codex mapper (output/codex.py) and AgentB's (output/agentb.py), it reads the
engine's own events (`run_event`, redacted by the Emitter), never the Codex wire: each item
event carries the whole item, so what a tool call shows (its command, its changes, how it
ended) is read from the item and its outcome.

What a person needs that a harness does not:
- a header (thread, model, workspace, sandbox) the moment the command starts, drawn by the
  entry point before the model library is even imported (`header()`);
- a sign of life whenever nothing else moves: a spinner with the elapsed time while the
  model is thinking and while a command runs (a status line redrawn in place, only on a
  terminal, and only while no text line is half written);
- reasoning streamed as it arrives, but never mixed with message text: agent messages are
  held until it is known whether they are interim (a tool call follows) or the final answer,
  which is printed set apart under an `answer` rule;
- failures that say what failed and why: the path and reason of a refused file change, the
  exit code and output of a failed command, the error of a tool call;
- a summary line at the end of each turn: status, turn number, tokens in / cached / out,
  cost and wall time;
- the turn's plan (the todo_list item) as a checklist pinned under the output and redrawn
  in place at each update; when the turn ends it stays on screen in its final state. Off a
  terminal it is printed once, in its final state.

Everything on screen is drawn through `_safely`, which first lifts the pinned plan (and the
spinner line) and afterwards puts it back below what was printed: output is never erased,
and while the plan is pinned streamed text is shown a whole line at a time.

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

from baseagent.core import events as engine
from baseagent.output import events as ev
from baseagent.output.codex import command_status, failure_reason
from baseagent.output.emitter import EventListener

_STATUS_STYLE = {"completed": "green", "failed": "red", "declined": "yellow",
                 "in_progress": "cyan"}
_KIND_MARK = {"add": "A", "delete": "D", "update": "M"}
# Lines of a command's output shown when it ends (the model sees all of it).
OUTPUT_TAIL_LINES = 20
# Lines of a failure reason shown under the item (the JSONL item carries it whole).
REASON_LINES = 4
# Spinner: frames and redraw interval.
FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPIN_INTERVAL_S = 0.1
# Terminal control: back to column 0 and clear the line; one line up and clear it.
CLEAR_LINE = "\r\x1b[2K"
UP_AND_CLEAR = "\x1b[1A\x1b[2K"

# The engine's events the terminal draws (the others, steps and the model's calls, would
# only lift and redraw the pinned plan).
_DRAWN = (engine.ThreadStarted, engine.TurnStarted, engine.ItemStarted, engine.ItemUpdated,
          engine.ItemCompleted, engine.TurnEnded, engine.RunFailed, engine.Notice)

# What an approval question says, by why the command waits (tools/approval.py).
_APPROVAL_WHY = {
    "escalation": "the model asks to run this outside the sandbox",
    "unsafe": "this command is not known to be read-only",
    "retry": "this failed in the sandbox; run it again outside?",
}

UsageFn = Callable[[], Any]  # returns baseagent.agent.Usage (duck-typed: no import cycle)


class _Spinner:
    """A status line redrawn in place on a daemon thread; drawn only while `label` is set."""

    def __init__(self, write: Callable[[str], None], lock: threading.RLock,
                 clock: Callable[[], float]) -> None:
        self._write = write
        self._lock = lock
        self._clock = clock
        self.label: str | None = None
        self.since = 0.0
        self.shown = False
        self._frame = 0
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def set(self, label: str | None, restart: bool = True) -> None:
        """Show `label` (None hides it). `restart` resets the elapsed time."""
        with self._lock:
            if label is not None and (restart or self.label is None):
                self.since = self._clock()
            self.label = label
            if label is None:
                self.clear()
            elif self._thread is None:
                self._thread = threading.Thread(target=self._spin, name="baseagent-spinner",
                                                daemon=True)
                self._thread.start()

    def clear(self) -> None:
        """Erase the status line (call with the lock held, before printing anything)."""
        if self.shown:
            self._write(CLEAR_LINE)
            self.shown = False

    def draw(self) -> None:
        with self._lock:
            if self.label is None:
                return
            elapsed = self._clock() - self.since
            frame = FRAMES[self._frame % len(FRAMES)]
            self._frame += 1
            self._write(f"{CLEAR_LINE}\x1b[36m{frame}\x1b[0m {self.label} "
                        f"\x1b[2m{elapsed:.1f}s · Ctrl-C to cancel\x1b[0m")
            self.shown = True

    def _spin(self) -> None:
        while not self._stop.wait(SPIN_INTERVAL_S):
            try:
                self.draw()
            except (OSError, ValueError):
                return

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self.label = None
            self.clear()


class PrettySink(EventListener):
    """Draws the engine's events on a terminal. `spinner`: None = only when the stream is a
    terminal."""

    run_events = True  # it draws the engine's events, not the Codex ones

    def __init__(self, stream: TextIO | None = None, *, spinner: bool | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._console = Console(file=stream or sys.stdout, highlight=False, soft_wrap=True)
        self._lock = threading.RLock()
        self._clock = clock
        self._spinner: _Spinner | None = None
        if spinner if spinner is not None else self._console.is_terminal:
            self._spinner = _Spinner(self._raw_write, self._lock, clock)
        self._streamed: dict[str, int] = {}  # reasoning item id -> characters printed
        self._midline = False  # a streamed text line is open (the spinner must wait)
        self._held: str | None = None  # a completed agent message whose role is not known yet
        self._headed: str | None = None  # thread id the header was drawn for
        self._usage: UsageFn | None = None
        self._turns = 0
        self._turn_started = 0.0
        self._pending_start: float | None = None
        self._turn_usage: Any = None
        self._gone = False
        # The plan: its checklist lines, whether it is pinned under the output (terminals
        # only), how many of its lines are on screen now, and streamed text of a line not
        # finished yet while it is pinned (only whole lines can be printed above it).
        self._plan: list[Text] = []
        self._pinned = False
        self._plan_drawn = 0
        self._partial = ""

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
                                     resumed_turns=resumed_turns, notes=notes):
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
        self._safely(lambda: self._print(Text(text, style=style)))

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
                self._lift_plan()
                draw()
                self._drop_plan()
                self._flush()
        except (OSError, ValueError):
            self._gone = True

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
        elif isinstance(event, engine.TurnEnded) and event.status == "completed":
            self._status(None)
            self._release_held(final=True)
            self._summary("completed", event.usage, None)
        elif isinstance(event, engine.TurnEnded) and event.status == "requires_action":
            self._status(None)
            self._release_held(final=False)
            calls = ", ".join(f"{c.name} ({c.id})" for c in event.pending)
            self._print(Text.assemble(("waiting for your tools: ", "bold yellow"), calls))
        elif isinstance(event, (engine.TurnEnded, engine.RunFailed)):
            error = event.message if isinstance(event, engine.RunFailed) else event.error
            self._status(None)
            self._release_held(final=False)
            self._summary("failed", None, error or "")
        elif isinstance(event, engine.Notice):
            self._end_line()
            self._print(Text(f"! {event.message}", style="yellow"))

    def _item(self, item: engine.Item, started: bool, done: bool) -> None:
        if isinstance(item, engine.TextItem) and item.kind == "message":
            # Held: whether it is interim or the answer shows with what comes next.
            if done:
                self._release_held(final=False)
                self._held = item.text if item.text.strip() else None
                self._status("thinking")
            elif started:
                self._status("writing")
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
                self._print(Text.assemble(("» sub-agent: ", "bold magenta"), item.task or ""))
                self._status("sub-agent working")
            elif done:
                status = _ended(outcome)
                nested = outcome.data.get("items", ()) if outcome is not None else ()
                self._print(Text(f"« sub-agent {status} after {len(nested)} items",
                                 style=_STATUS_STYLE.get(status, "")))
                self._status("thinking")
        elif done:  # any other tool, shown as Codex shows it: an MCP-style tool call
            status = _ended(outcome)
            args = item.arguments if isinstance(item.arguments, Mapping) else {}
            target = next((str(v) for v in args.values() if v), "")
            label = item.tool if item.server == "baseagent" else f"{item.server}.{item.tool}"
            self._print(Text(f"• {label} {target}".rstrip(),
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
            self._print(Text(f"  $ {item.command}", style="bold"))
            if item.reason:
                self._print(Text(f"  why: {item.reason}", style="dim"))
            prefix = f"[p] allow `{item.prefix}` for this session · " if item.prefix else ""
            self._print(Text(f"  [y] run it once · {prefix}[n] decline (`n NOTE` tells "
                             "the model why)", style="yellow"))
        elif done:
            words = {"approved": ("✓ approved once", "green"),
                     "approved_for_session": (f"✓ approved `{item.prefix}` for this session",
                                              "green"),
                     "denied": ("✗ declined" + (f": {item.note}" if item.note else ""),
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
            self._status(None)
            self._stream_text(item.text[shown:], "dim italic")
            self._streamed[item.id] = len(item.text)
        if done:
            self._streamed.pop(item.id, None)
            self._end_line()
            self._status("thinking")

    def _stream_text(self, text: str, style: str) -> None:
        """Text as it arrives; while the plan is pinned, a whole line at a time."""
        if not self._pinned:
            self._console.print(Text(text, style=style), end="")
            self._midline = not text.endswith("\n")
            return
        *lines, self._partial = (self._partial + text).split("\n")
        for line in lines:
            self._console.print(Text(line, style=style))

    # -- the plan ----------------------------------------------------------------------------

    def _show_plan(self, item: engine.TurnScopedItem, done: bool) -> None:
        self._plan = _checklist(item)
        if self._console.is_terminal:
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
        self._drop_plan()
        self._pinned = False
        self._plan_drawn = 0
        self._plan = []

    def _lift_plan(self) -> None:
        """Take the pinned plan (and the spinner line) off the screen before drawing."""
        if self._spinner is not None:
            self._spinner.clear()
        if self._plan_drawn:
            self._raw_write("\r" + UP_AND_CLEAR * self._plan_drawn)
            self._plan_drawn = 0

    def _drop_plan(self) -> None:
        """Put the pinned plan back under what was printed (with any partial line)."""
        if not self._pinned or self._plan_drawn:
            return
        if self._midline:
            self._console.print()
            self._midline = False
        lines = ([Text(self._partial)] if self._partial else []) + self._plan
        width = max(1, self._console.width - 1)  # never wrap: each line one screen row
        for line in lines:
            self._console.print(line[:width] if len(line) > width else line)
        self._plan_drawn = len(lines)

    def _command(self, item: engine.ToolCallItem, started: bool, done: bool) -> None:
        if started:
            self._print(Text.assemble(("$ ", "bold cyan"), item.command))
            self._status("running")
        elif done:
            outcome = item.outcome
            data = outcome.data if outcome is not None else {}
            output = data.get("aggregated_output", outcome.output if outcome else "")
            out = output.rstrip("\n")
            if out:
                lines = out.splitlines()
                if len(lines) > OUTPUT_TAIL_LINES:
                    self._print(Text(f"  … {len(lines) - OUTPUT_TAIL_LINES} more lines",
                                     style="dim"))
                for line in lines[-OUTPUT_TAIL_LINES:]:
                    self._print(Text(f"  {line}", style="dim"))
            status = command_status(outcome) if outcome is not None else "in_progress"
            exit_code = data.get("exit_code")
            code = "none" if exit_code is None else str(exit_code)
            self._print(Text(f"  exit {code} ({status})", style=_STATUS_STYLE.get(status, "")))
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
                             f"{_short_path(change['path'])}", style=style))
        if failed:
            if not changes:
                self._print(Text("file change failed", style="red"))
            self._reason(failure_reason(outcome.output) if outcome is not None
                         else "no reason given")

    def _reason(self, message: str) -> None:
        lines = message.strip().splitlines() or [""]
        for line in lines[:REASON_LINES]:
            self._print(Text(f"  {line}", style="red"))
        if len(lines) > REASON_LINES:
            self._print(Text(f"  … {len(lines) - REASON_LINES} more lines", style="dim"))

    def _release_held(self, final: bool) -> None:
        text, self._held = self._held, None
        if text is None:
            return
        self._end_line()
        if final:
            self._console.print()
            self._console.rule(Text("answer", style="bold green"), style="green",
                               align="left")
            self._print(Text(text.strip("\n")))
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
            parts.append("cost unknown" if cost is None else f"${cost:.4f}")
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
        self._console.file.write(text)
        self._console.file.flush()

    def _end_line(self) -> None:
        if self._spinner is not None:
            self._spinner.clear()
        if self._partial:
            self._console.print(Text(self._partial))
            self._partial = ""
        if self._midline:
            self._console.print()
            self._midline = False

    def _print(self, text: Text) -> None:
        self._end_line()
        self._console.print(text)

    def _flush(self) -> None:
        self._console.file.flush()

    def detail(self, _item_id: str, text: str) -> None:
        """A unified diff from a file tool: colour the lines a reader scans for."""
        def draw() -> None:
            for line in text.splitlines():
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
        if self._spinner is not None:
            try:
                self._spinner.close()
            except (OSError, ValueError):
                pass
        try:
            with self._lock:
                self._lift_plan()
                self._end_line()
                if self._pinned:  # a turn that never completed its plan: leave it drawn
                    self._drop_plan()
                    self._pinned = False
                    self._plan_drawn = 0
                self._flush()
        except (OSError, ValueError):
            pass


def _checklist(item: engine.TurnScopedItem) -> list[Text]:
    """The plan (update_plan's payload: `items`, each a `text` and whether `completed`)."""
    entries = item.data.get("items", ())
    done = sum(1 for entry in entries if entry.get("completed"))
    lines = [Text(f"Plan ({done}/{len(entries)} done)", style="bold")]
    for entry in entries:
        lines.append(Text(f"  [x] {entry['text']}", style="green") if entry.get("completed")
                     else Text(f"  [ ] {entry['text']}"))
    return lines


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
