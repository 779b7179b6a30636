"""Terminal renderer: the same events as the JSONL stream, drawn for a person with rich.

Streaming text is printed as deltas arrive; commands show their exit code; file changes
show their paths; the run ends with a usage line.
"""
from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console
from rich.markup import escape

from baseagent.output import events as ev

_STATUS_STYLE = {"completed": "green", "failed": "red", "declined": "yellow",
                 "in_progress": "cyan"}
_KIND_MARK = {"add": "A", "delete": "D", "update": "M"}


class PrettySink:
    def __init__(self, stream: TextIO | None = None) -> None:
        self._console = Console(file=stream or sys.stdout, highlight=False, soft_wrap=True)
        self._streamed: dict[str, int] = {}  # item id -> characters of text already printed
        self._gone = False

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
        c = self._console
        if isinstance(event, ev.ThreadStarted):
            c.print(f"[dim]thread {event.thread_id}[/dim]")
        elif isinstance(event, (ev.ItemStarted, ev.ItemUpdated, ev.ItemCompleted)):
            self._item(event)
        elif isinstance(event, ev.TurnCompleted):
            u = event.usage
            c.print(f"[dim]tokens: {u.input_tokens} in ({u.cached_input_tokens} cached), "
                    f"{u.output_tokens} out[/dim]")
        elif isinstance(event, ev.TurnFailed):
            c.print(f"[bold red]failed:[/bold red] {escape(event.error.message)}")
        elif isinstance(event, ev.ErrorEvent):
            c.print(f"[yellow]! {escape(event.message)}[/yellow]")

    def _stream_text(self, item_id: str, text: str, style: str, done: bool) -> None:
        shown = self._streamed.get(item_id, 0)
        if len(text) > shown:
            self._console.print(escape(text[shown:]), style=style, end="")
            self._streamed[item_id] = len(text)
        if done:
            self._console.print()

    def _item(self, event: ev.ItemStarted | ev.ItemUpdated | ev.ItemCompleted) -> None:
        item, c = event.item, self._console
        done = isinstance(event, ev.ItemCompleted)
        if isinstance(item, ev.AgentMessageItem):
            self._stream_text(item.id, item.text, "", done)
        elif isinstance(item, ev.ReasoningItem):
            self._stream_text(item.id, item.text, "dim italic", done)
        elif isinstance(item, ev.CommandExecutionItem):
            if isinstance(event, ev.ItemStarted):
                c.print(f"[bold cyan]$[/bold cyan] {escape(item.command)}")
            elif done:
                out = item.aggregated_output.rstrip("\n")
                if out:
                    lines = out.splitlines()
                    tail = lines[-20:]
                    if len(lines) > 20:
                        c.print(f"[dim]  … {len(lines) - 20} more lines[/dim]")
                    for line in tail:
                        c.print(f"[dim]  {escape(line)}[/dim]")
                style = _STATUS_STYLE.get(item.status, "")
                c.print(f"[{style}]  exit {item.exit_code} ({item.status})[/{style}]")
        elif isinstance(item, ev.FileChangeItem) and done:
            style = _STATUS_STYLE.get(item.status, "")
            for change in item.changes:
                c.print(f"[{style}]{_KIND_MARK[change.kind]} {escape(change.path)}[/{style}]")
            if item.status == "failed":
                c.print("[red]  patch failed[/red]")
        elif isinstance(item, ev.McpToolCallItem) and done:
            style = _STATUS_STYLE.get(item.status, "")
            args = item.arguments if isinstance(item.arguments, dict) else {}
            target = next((str(v) for v in args.values() if v), "")
            label = item.tool if item.server == "baseagent" else f"{item.server}.{item.tool}"
            c.print(f"[{style}]• {escape(label)} {escape(target)}[/{style}]")
            if item.error:
                c.print(f"[red]  {escape(item.error.message)}[/red]")
        elif isinstance(item, ev.TodoListItem) and done:
            for entry in item.items:
                c.print(f"  [{'x' if entry.completed else ' '}] {escape(entry.text)}")
        elif isinstance(item, ev.ErrorItem) and done:
            c.print(f"[yellow]! {escape(item.message)}[/yellow]")

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
            self._console.print(f"  {escape(line)}", style=style, highlight=False)

    def close(self) -> None:
        self._console.file.flush()
