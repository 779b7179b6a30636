"""Terminal renderer: the same events as the JSONL stream, drawn for a person with rich.

Streaming text is printed as deltas arrive; commands show their exit code; file changes
show their paths; the run ends with a usage line. The turn's plan (the todo_list item) is a
checklist pinned under the output and redrawn in place at each update (rich's Live), until
the turn ends and it stays on screen in its final state.
"""
from __future__ import annotations

import sys
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.text import Text

from baseagent.output import events as ev

_STATUS_STYLE = {"completed": "green", "failed": "red", "declined": "yellow",
                 "in_progress": "cyan"}
_KIND_MARK = {"add": "A", "delete": "D", "update": "M"}


class PrettySink:
    def __init__(self, stream: TextIO | None = None) -> None:
        self._console = Console(file=stream or sys.stdout, highlight=False, soft_wrap=True)
        self._streamed: dict[str, int] = {}  # item id -> characters of text already printed
        self._gone = False
        # While the plan is pinned: the live region, its checklist, and the streamed text of
        # a line not finished yet (shown above the checklist until its newline arrives: only
        # whole lines can be printed above a live region).
        self._live: Live | None = None
        self._checklist: RenderableType = Text()
        self._partial = Text()
        self._mid_line = False  # the last thing printed was streamed text without its newline

    def emit(self, event: ev.ThreadEvent) -> None:
        """Draw one event; once the terminal is gone (a hangup, a closed pipe), draw nothing
        more: the run itself and its session record must not fail because of it."""
        if self._gone:
            return
        try:
            self._render(event)
        except (OSError, ValueError):
            self._gone = True

    def _render(self, event: ev.ThreadEvent) -> None:
        if isinstance(event, ev.ThreadStarted):
            self._line(f"[dim]thread {event.thread_id}[/dim]")
        elif isinstance(event, (ev.ItemStarted, ev.ItemUpdated, ev.ItemCompleted)):
            self._item(event)
        elif isinstance(event, ev.TurnCompleted):
            u = event.usage
            self._line(f"[dim]tokens: {u.input_tokens} in ({u.cached_input_tokens} cached), "
                       f"{u.output_tokens} out[/dim]")
        elif isinstance(event, ev.TurnFailed):
            self._line(f"[bold red]failed:[/bold red] {escape(event.error.message)}")
        elif isinstance(event, ev.ErrorEvent):
            self._line(f"[yellow]! {escape(event.message)}[/yellow]")

    def _stream_text(self, item_id: str, text: str, style: str, done: bool) -> None:
        shown = self._streamed.get(item_id, 0)
        if len(text) > shown:
            self._write(text[shown:], style)
            self._streamed[item_id] = len(text)
        if done:
            self._write("\n", "")

    def _write(self, text: str, style: str) -> None:
        """Streamed text, as it comes; above the pinned plan, line by line."""
        if self._live is None:
            self._console.print(escape(text), style=style, end="")
            self._mid_line = not text.endswith("\n")
            return
        self._partial.append(text, style=style or None)
        *lines, self._partial = self._partial.split("\n", allow_blank=True)
        for line in lines:
            self._console.print(line)
        self._live.update(self._pinned(), refresh=True)

    def _line(self, markup: str, **kwargs: Any) -> None:
        """One whole line of output (above the pinned plan, if there is one)."""
        self._flush_partial()
        if self._mid_line:
            self._console.print()
            self._mid_line = False
        self._console.print(markup, **kwargs)

    def _flush_partial(self) -> None:
        if self._live is not None and self._partial.plain:
            self._console.print(self._partial)
            self._partial = Text()
            self._live.update(self._pinned(), refresh=True)

    # -- the plan ---------------------------------------------------------------------------

    def _plan(self, item: ev.TodoListItem, done: bool) -> None:
        self._checklist = _checklist(item)
        if self._live is None:
            if self._mid_line:  # the live region starts on a line of its own
                self._console.print()
                self._mid_line = False
            self._live = Live(self._pinned(), console=self._console, auto_refresh=False,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start(refresh=True)
            # A run killed outright must not leave the person's terminal without a cursor.
            self._console.show_cursor(True)
        else:
            self._live.update(self._pinned(), refresh=True)
        if done:
            self._unpin()

    def _pinned(self) -> RenderableType:
        return Group(self._partial, self._checklist) if self._partial.plain else self._checklist

    def _unpin(self) -> None:
        """The checklist stays where it is, in its last state; output goes on below it."""
        if self._live is None:
            return
        self._flush_partial()
        live, self._live = self._live, None
        live.stop()
        if not self._console.is_terminal:  # rich ends the line itself only on terminals
            self._console.print()

    def _item(self, event: ev.ItemStarted | ev.ItemUpdated | ev.ItemCompleted) -> None:
        item = event.item
        done = isinstance(event, ev.ItemCompleted)
        if isinstance(item, ev.AgentMessageItem):
            self._stream_text(item.id, item.text, "", done)
        elif isinstance(item, ev.ReasoningItem):
            self._stream_text(item.id, item.text, "dim italic", done)
        elif isinstance(item, ev.CommandExecutionItem):
            if isinstance(event, ev.ItemStarted):
                self._line(f"[bold cyan]$[/bold cyan] {escape(item.command)}")
            elif done:
                out = item.aggregated_output.rstrip("\n")
                if out:
                    lines = out.splitlines()
                    tail = lines[-20:]
                    if len(lines) > 20:
                        self._line(f"[dim]  … {len(lines) - 20} more lines[/dim]")
                    for line in tail:
                        self._line(f"[dim]  {escape(line)}[/dim]")
                style = _STATUS_STYLE.get(item.status, "")
                self._line(f"[{style}]  exit {item.exit_code} ({item.status})[/{style}]")
        elif isinstance(item, ev.FileChangeItem) and done:
            style = _STATUS_STYLE.get(item.status, "")
            for change in item.changes:
                self._line(f"[{style}]{_KIND_MARK[change.kind]} {escape(change.path)}[/{style}]")
            if item.status == "failed":
                self._line("[red]  patch failed[/red]")
        elif isinstance(item, ev.McpToolCallItem) and done:
            style = _STATUS_STYLE.get(item.status, "")
            args = item.arguments if isinstance(item.arguments, dict) else {}
            target = next((str(v) for v in args.values() if v), "")
            self._line(f"[{style}]• {item.tool} {escape(target)}[/{style}]")
            if item.error:
                self._line(f"[red]  {escape(item.error.message)}[/red]")
        elif isinstance(item, ev.TodoListItem):
            self._plan(item, done)
        elif isinstance(item, ev.ErrorItem) and done:
            self._line(f"[yellow]! {escape(item.message)}[/yellow]")

    def detail(self, _item_id: str, text: str) -> None:
        """A unified diff from a file tool: colour the lines a reader scans for."""
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
            self._line(f"  {escape(line)}", style=style, highlight=False)

    def close(self) -> None:
        try:
            self._unpin()
            self._console.file.flush()
        except (OSError, ValueError):
            self._gone = True


def _checklist(item: ev.TodoListItem) -> Text:
    done = sum(1 for entry in item.items if entry.completed)
    text = Text()
    text.append(f"Plan ({done}/{len(item.items)} done)", style="bold")
    for entry in item.items:
        text.append("\n")
        if entry.completed:
            text.append(f"  [x] {entry.text}", style="green")
        else:
            text.append(f"  [ ] {entry.text}")
    return text
