"""Prompt profiles: how much prompt, which tools and which edit format a model gets.

`full` is for hosted models: the whole system prompt, every built-in tool with its full
description, apply_patch for edits. Its system prompt and tool schemas are ~2,500 tokens,
a large share of a small local model's context window and attention; such models follow a
short prompt better, fail at patch formats, and edit best by writing whole files (Aider
chooses the "whole" edit format for weak models for the same reason).

`compact`: a short system prompt, three tools (shell, read_file, write_file) with one-line
descriptions and no parameter prose, and whole-file edits; code the model leaves in its
answer for a file is written with write_file (helps/prose_code.py), and the files the task
names are shown with it (helps/named_files.py), as Aider shows the files in play. About 600
tokens, plus those files. Before the conversation, the task and those files are sent
without tools, asking for whole files (Aider's way), then with the tests shown, then in
repair rounds with the best attempt and one failing test (helps/probe.py): kept if the
tests then pass, undone if not.

`auto` (the default) picks `compact` for local models (`--oss`, or a local provider such
as ollama/ or lm_studio/) and `full` for everything else. An API base on this machine
alone does not decide it: it may be a proxy to a hosted model, or a large local model that
does well with the full prompt (`--prompt-profile compact` says so). Toolsets the user
names (`--tools`) win over the profile's choice of tools.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from baseagent.prompts.system import SYSTEM_PROMPT

ProfileName = Literal["full", "compact"]
# Providers whose models run on the user's machine.
LOCAL_PROVIDERS = ("ollama", "ollama_chat", "lm_studio", "llamafile", "local")

COMPACT_SYSTEM_PROMPT = """\
You are a coding agent working in a terminal on the user's machine. Nobody will answer
questions: do the task yourself, step by step.
- To change a file, write its path on a line of its own, then a code block with the
  file's whole new content:

path/to/file.py
```python
the entire content of the file
```

  It is written for you, and the task's tests are run on it. (write_file does the same.)
- Run commands (tests, the program) with the shell tool; read_file reads a file.
- Keep the names of existing functions and classes. Do not change tests unless asked to.
When the tests pass, reply with a short summary and no code block.
"""

# One line each: what the tool does, in the words a small model needs.
COMPACT_DESCRIPTIONS = {
    "shell": "Run a bash command in the workspace and return its exit code and output.",
    "read_file": "Read a text file; returns its lines numbered.",
    "write_file": "Write the whole content of a file (creates or replaces it).",
    "list_dir": "List the files of a directory.",
    "grep_files": "Find files whose content matches a regular expression.",
    "apply_patch": "Edit files with a patch (*** Begin Patch ... *** End Patch).",
    "update_plan": "Keep a short plan of steps and their status.",
}
COMPACT_TOOLS = ("shell", "read_file", "write_file")


@dataclass(frozen=True)
class PromptProfile:
    name: ProfileName
    system_prompt: str
    # Built-in tools offered when the user names no toolsets (None: all of them).
    tools: tuple[str, ...] | None
    # What an answer with a file's code and no tool call leads to (helps/prose_code.py).
    prose_code: Literal["apply", "tell"]
    descriptions: dict[str, str] = field(default_factory=dict)
    # The files the instruction names are shown after it (helps/named_files.py).
    show_named_files: bool = False
    # Once a turn, before the conversation, the task alone answered with whole files, kept
    # if its files pass the tests (helps/probe.py).
    probe: bool = False
    # A task that names no file: the code its names lead to shown with it
    # (helps/localised_code.py).
    localise: bool = False

    def shape(self, spec: dict[str, Any]) -> dict[str, Any]:
        """A tool spec as this profile sends it: compact ones keep names and types, with a
        one-line description and no parameter prose or optional-null unions."""
        if self.name == "full":
            return spec
        function = dict(spec["function"])
        name = function["name"]
        if name in self.descriptions:
            function["description"] = self.descriptions[name]
        function["parameters"] = _plain(function.get("parameters") or {})
        return {**spec, "function": function}


FULL = PromptProfile("full", SYSTEM_PROMPT, None, "tell")
COMPACT = PromptProfile("compact", COMPACT_SYSTEM_PROMPT, COMPACT_TOOLS, "apply",
                        COMPACT_DESCRIPTIONS, show_named_files=True, probe=True,
                        localise=True)
PROFILES = {"full": FULL, "compact": COMPACT}


def choose(setting: str, model: str, oss: bool = False) -> PromptProfile:
    """The profile for `setting` (auto | full | compact)."""
    if setting in PROFILES:
        return PROFILES[setting]
    return COMPACT if oss or model.split("/", 1)[0] in LOCAL_PROVIDERS else FULL


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema without descriptions, and `anyOf [T, null]` as T."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("description", "title"):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _plain(_non_null(prop)) for name, prop in value.items()}
        elif isinstance(value, dict):
            out[key] = _plain(value)
        elif isinstance(value, list):
            out[key] = [_plain(v) if isinstance(v, dict) else v for v in value]
        else:
            out[key] = value
    return out


def _non_null(prop: Any) -> Any:
    if isinstance(prop, dict) and isinstance(prop.get("anyOf"), list):
        kinds = [k for k in prop["anyOf"] if k != {"type": "null"}]
        if len(kinds) == 1 and isinstance(kinds[0], dict):
            rest = {k: v for k, v in prop.items() if k != "anyOf"}
            return {**kinds[0], **rest}
    return prop
