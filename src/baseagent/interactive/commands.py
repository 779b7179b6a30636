"""The slash commands of the interactive session: parsing and their help text.

Kept apart from the session so the table of commands (what /help prints, what the README
lists) is one piece of data.
"""
from __future__ import annotations

from dataclasses import dataclass

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (arguments, what it does)
    "/new": ("", "start a new thread (same model and workspace)"),
    "/resume": ("[ID]", "continue a recorded thread (an id or a unique prefix) with its "
                        "model and workspace; alone: pick from this workspace's recent ones"),
    "/model": ("NAME", "go on with this thread using another model (a litellm model string)"),
    "/cost": ("", "tokens and cost of this thread so far"),
    "/diff": ("[session]", "what the last turn changed (session: every turn of this thread)"),
    "/undo": ("", "put the workspace back as it was before the last turn that changed it"),
    "/compact": ("", "summarise this thread so far, to free the context (the thread goes on)"),
    "/clear": ("", "clear the screen and start a new thread"),
    "/init": ("", "have the agent write an AGENTS.md for this workspace"),
    "/status": ("", "model, workspace, sandbox, approvals, tokens and context left"),
    "/approvals": ("[POLICY]", "when you are asked before a command runs, for this session: "
                               "untrusted | on-failure | on-request | never"),
    "/help": ("", "this list"),
    "/exit": ("", "leave (also /quit, or Ctrl-D)"),
}
ALIASES = {"/quit": "/exit", "/q": "/exit", "/?": "/help"}
KEYS = "Enter sends · Esc Enter: new line · Ctrl-C cancels a turn · Ctrl-D leaves"


@dataclass(frozen=True)
class Command:
    name: str
    argument: str


class UnknownCommand(ValueError):
    """A line that starts with / but names no command."""


def parse(line: str) -> Command | None:
    """The command on this line, None for an instruction. `//text` sends `/text` as an
    instruction (an escape for instructions that start with a slash)."""
    text = line.strip()
    if not text.startswith("/") or text.startswith("//"):
        return None
    name, _, argument = text.partition(" ")
    name = ALIASES.get(name.lower(), name.lower())
    if name not in COMMANDS:
        raise UnknownCommand(f"unknown command {name} (type /help for the list)")
    arguments = COMMANDS[name][0]
    argument = argument.strip()
    if arguments.startswith("["):  # optional: "[ID]"
        return Command(name, argument)
    if arguments and not argument:
        raise UnknownCommand(f"{name} needs {arguments}: {name} {arguments}")
    if not arguments and argument:
        raise UnknownCommand(f"{name} takes no argument")
    return Command(name, argument)


def instruction_text(line: str) -> str:
    """What an instruction line sends (`//x` sends `/x`)."""
    text = line.strip()
    return text[1:] if text.startswith("//") else line


def help_lines() -> list[str]:
    width = max(len(f"{name} {args}".strip()) for name, (args, _) in COMMANDS.items())
    lines = [f"  {f'{name} {args}'.strip():<{width}}  {what}"
             for name, (args, what) in COMMANDS.items()]
    lines.append("  anything else is an instruction for the agent (start it with // to send "
                 "a leading /)")
    lines.append(f"  {KEYS}")
    return lines
