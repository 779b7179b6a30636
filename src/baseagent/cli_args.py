"""The command line as people type it, rewritten into the form click parses.

Two conventions click cannot express on a group with subcommands, handled here before click
sees the argv (cli.main, the only caller):

- A positional task, as `codex "task"`: `baseagent "fix the test"` is `baseagent -i "fix
  the test"`. A first word that names a command keeps its meaning (`baseagent sessions`
  lists threads); `baseagent -- sessions` sends the word as the task. A one-word task that
  is a near miss of a command (`baseagent sesions`) is refused with the suggestion rather
  than sent to the model, which would cost a run.
- Global options after a subcommand: `baseagent mcp list --config F` works as `baseagent
  --config F mcp list`. Only the options the subcommands read from the root (GLOBAL) move,
  and only where the subcommand does not define the option itself.

Pure functions of the click command tree and the argv: table-driven tests in
tests/cli/test_cli_args.py.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

# Root options a subcommand reads from the root (cli.py: `ctx.find_root().params`), and so
# may be given after the subcommand too.
GLOBAL = frozenset({"--config", "--profile", "-p"})
# The hidden root option the positional task becomes (cli.main_command reads it).
PROMPT_OPTION = "--prompt"
# click's help option, which is no parameter of the command.
HELP = frozenset({"--help", "-h"})
# How close a one-word task may be to a command name before it is taken for a typo.
NEAR_MISS = 0.8


class ArgvError(ValueError):
    """An argv that cannot mean anything: one line for the usage error."""


@dataclass(frozen=True)
class Options:
    """The option strings of one command: whether each takes a value."""

    takes_value: dict[str, bool]

    @classmethod
    def of(cls, command: Any) -> "Options":
        table: dict[str, bool] = {}
        for param in getattr(command, "params", []):
            if getattr(param, "param_type_name", "") != "option":
                continue
            flag = bool(getattr(param, "is_flag", False) or getattr(param, "count", False))
            for name in [*param.opts, *param.secondary_opts]:
                table[name] = not flag
        return cls(table)

    def knows(self, arg: str) -> bool:
        return self._name(arg) in self.takes_value

    def width(self, arg: str) -> int:
        """How many argv entries the option at `arg` spans: 2 when its value follows it."""
        name = self._name(arg)
        if not self.takes_value.get(name, False):
            return 1
        attached = "=" in arg if arg.startswith("--") else len(arg) > 2
        return 1 if attached else 2

    @staticmethod
    def _name(arg: str) -> str:
        if arg.startswith("--"):
            return arg.split("=", 1)[0]
        return arg[:2]  # `-mfoo`: the short option -m with its value attached


def _is_option(arg: str) -> bool:
    return arg.startswith("-") and arg not in ("-", "--")


def _positionals(options: Options, args: list[str]) -> list[int]:
    """Indexes of the positional entries of `args` under these options (after `--`, every
    entry is one)."""
    found, index = [], 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return found + list(range(index + 1, len(args)))
        if _is_option(arg):
            index += options.width(arg)
            continue
        found.append(index)
        index += 1
    return found


def rewrite(root: Any, args: list[str]) -> list[str]:
    """The argv click should parse for what the person typed (see the module docstring).
    Raises ArgvError for a positional task that cannot be one."""
    options = Options.of(root)
    commands: dict[str, Any] = dict(getattr(root, "commands", {}))
    positions = _positionals(options, args)
    first = positions[0] if positions else len(args)
    after_dashes = "--" in args[:first]
    names_command = bool(positions) and not after_dashes and args[first] in commands
    # The root's own part of the argv (before a command, or all of it around a task): an
    # option it does not know is named, rather than its value being taken for the task.
    _refuse_unknown(options, args[:first] if names_command else args)
    if not positions:
        return args
    if names_command:
        head, rest = args[: first + 1], args[first + 1:]
        return _hoist_globals(options, commands[args[first]], head, rest)
    task = args[first]
    extra = [args[i] for i in positions[1:]]
    if extra:
        raise ArgvError(f"unexpected argument {extra[0]!r} after the task: quote the task "
                        f"as one argument (baseagent \"fix the failing test\")")
    if not after_dashes:
        _refuse_near_miss(task, commands)
    rest = [a for i, a in enumerate(args) if i != first and a != "--"]
    return [PROMPT_OPTION, task, *rest]


def _refuse_unknown(options: Options, args: list[str]) -> None:
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return
        if not _is_option(arg):
            index += 1
            continue
        if not options.knows(arg) and arg not in HELP:
            name = Options._name(arg)
            longs = sorted(o for o in options.takes_value if o.startswith("--"))
            near = [o for o in longs if len(name) > 3 and o.startswith(name)] or \
                difflib.get_close_matches(name, longs, n=1, cutoff=0.75)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise ArgvError(f"no such option: {name}{hint} (see --help)")
        index += options.width(arg)


def _refuse_near_miss(task: str, commands: dict[str, Any]) -> None:
    words = task.split()
    if len(words) != 1:
        return
    near = difflib.get_close_matches(task.lower(), list(commands), n=1, cutoff=NEAR_MISS)
    if near:
        raise ArgvError(f"no command {task!r} (did you mean {near[0]!r}? to send it as the "
                        f"task: baseagent -- {task})")


def _hoist_globals(root_options: Options, command: Any, head: list[str],
                   rest: list[str]) -> list[str]:
    """Move the GLOBAL options found after the subcommand in front of it, unless the
    subcommand (or one below it) defines the same option itself."""
    settings = getattr(command, "context_settings", None) or {}
    if getattr(command, "ignore_unknown_options", False) \
            or settings.get("ignore_unknown_options"):
        return [*head, *rest]  # a command that parses its own argv (exec) gets it whole
    own = _own_options(command)
    moved: list[str] = []
    kept: list[str] = []
    index = 0
    while index < len(rest):
        arg = rest[index]
        if arg == "--":
            kept.extend(rest[index:])
            break
        if _is_option(arg) and not own.knows(arg) and root_options.knows(arg) \
                and Options._name(arg) in GLOBAL:
            span = root_options.width(arg)
            moved.extend(rest[index: index + span])
            index += span
            continue
        span = own.width(arg) if _is_option(arg) and own.knows(arg) else 1
        kept.extend(rest[index: index + span])
        index += span
    return [*moved, *head, *kept]


def _own_options(command: Any) -> Options:
    """Every option the command and its subcommands define (a group's and its leaves')."""
    table = dict(Options.of(command).takes_value)
    for sub in getattr(command, "commands", {}).values():
        for name, value in _own_options(sub).takes_value.items():
            table.setdefault(name, value)
    return Options(table)
