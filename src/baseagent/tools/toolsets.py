"""Toolsets: which built-in tools a run offers, by tool name or by group.

`--tools read,shell` keeps only those; `--disable-tools edit` leaves those out (the
enabled set first, then the disabled one removed, as Codex does for a server's tools).
Names are checked when the settings are validated, so a typo is one clear error before
anything runs. Tools added from outside (Python functions, MCP servers, OpenAPI documents,
tools the caller runs) are not toolsets: they are offered because they were added.

A named toolset of the configuration (`[toolsets.NAME]`, config/toolsets.py) stands for
its own list of names (built-in ones, tool sources, SOURCE:TAG): `expand_named` opens it
wherever a list of names is read (`tools`, a specialist's tools), so there is one
vocabulary (core/delegation/specialists.py says what each name means).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from baseagent.tools.registry import BUILTIN_TOOLS, DEFAULT_TOOLS

# Named groups of built-in tools (hermes-style toolsets).
GROUPS: dict[str, tuple[str, ...]] = {
    "read": ("read_file", "grep_files", "list_dir"),
    "edit": ("write_file", "apply_patch"),
    "shell": ("shell",),
    "plan": ("update_plan",),
}
# An explicit empty selection (`--tools none`): no built-in tool at all.
NONE = "none"
TOOL_CHOICE_MODES = ("auto", "required", "none")


def vocabulary() -> list[str]:
    """Every name a toolset list may use: the groups, then each built-in tool."""
    return [*GROUPS, *(name for name in BUILTIN_TOOLS if name not in GROUPS), NONE]


def check_toolsets(names: Iterable[str], named: Iterable[str] = ()) -> list[str]:
    """The names, trimmed; ValueError naming the first unknown one. `named`: the names of
    the configuration's `[toolsets.NAME]`, also known here."""
    cleaned = [n.strip() for n in names if n and n.strip()]
    named = list(named)
    known = set(vocabulary()) | set(named)
    for name in cleaned:
        if name not in known:
            raise ValueError(f"unknown tool or toolset {name!r} (choose from "
                             f"{', '.join([*vocabulary(), *named])})")
    return cleaned


def expand_named(names: Iterable[str], named: Mapping[str, Sequence[str]]) -> list[str]:
    """`names` with each named toolset replaced by its own names, in order (toolsets do not
    nest: the settings refuse one naming another)."""
    out: list[str] = []
    for name in names:
        out.extend(named[name] if name in named else (name,))
    return out


def builtin_part(names: Iterable[str], named: Mapping[str, Sequence[str]]) -> list[str]:
    """The built-in names `names` stand for once named toolsets are opened (the tool
    sources, tags and other names a toolset lists are left out)."""
    known = set(vocabulary())
    return [name for name in expand_named(names, named) if name in known]


def expand(names: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for name in names:
        out.update(GROUPS.get(name, (name,)) if name != NONE else ())
    return out


def builtin_names(enabled: Iterable[str] | None, disabled: Iterable[str] = (),
                  optional: Iterable[str] = ()) -> list[str]:
    """The built-in tools a run offers, in the registry's fixed order: the named ones, or
    the default ones and the `optional` ones that apply to the run (view_image for a model
    that sees images)."""
    chosen = {*DEFAULT_TOOLS, *optional} if enabled is None else expand(enabled)
    chosen -= expand(disabled)
    return [name for name in BUILTIN_TOOLS if name in chosen]


def check_tool_choice(value: str) -> str:
    """auto | required | none, or a tool's name (checked against the tools once they are
    known); anything else is a ValueError."""
    value = value.strip()
    if not value:
        raise ValueError("tool_choice is empty (use auto, required, none or a tool name)")
    if value in TOOL_CHOICE_MODES:
        return value
    if not all(c.isalnum() or c in "_-." for c in value):
        raise ValueError(f"tool_choice {value!r} is neither auto, required, none nor a tool name")
    return value
