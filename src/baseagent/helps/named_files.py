"""Files a task names, and their content shown with the task (the compact profile).

A small model asked to change `hamming.py` often writes a new file without reading the old
one, and loses the function names the tests call. Aider shows the files in play inside the
prompt; the compact prompt profile does the same: the files the instruction names that
exist in the workspace, small text files only, follow the instruction in its message, so
the first reply can already be the edit. The model still reads anything else with its tools.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from baseagent.helps.contract import Message, TurnContext, TurnHelp

# A path-like word with an extension: `hamming.py`, `src/app/main.go`, `./notes.txt`.
FILE_NAME = re.compile(r"[\w./-]*\w\.[A-Za-z0-9]{1,8}")
# The extensions a file a task names but the workspace lacks yet may have: source, build,
# config, docs and data files. An issue's `furl(...).path.isdir` matches FILE_NAME too, and
# a code block after it was once written to a new file `.path.isdir` (furl at 1a80f63).
NEW_FILE_SUFFIXES = frozenset(
    "." + ext for ext in (
        "py pyi pyx ipynb js mjs cjs jsx ts tsx go rs java kt kts scala rb php pl lua swift c h "
        "cc cpp cxx hpp hh cs fs ex exs erl hs ml clj dart r jl zig nim v sol sh bash zsh fish "
        "ps1 bat sql graphql proto html htm css scss sass less vue svelte json jsonl yaml yml "
        "toml ini cfg conf env xml csv tsv md rst txt adoc tex svg mk cmake gradle lock "
        "dockerfile tf hcl nix").split())
# What is shown: files up to this size, this much in all (a few thousand tokens).
MAX_FILE_BYTES = 16 * 1024
MAX_TOTAL_BYTES = 32 * 1024

SECTION = "\n\nThe files named above, as they are now:\n{files}"


def named_in(text: str) -> list[str]:
    """The file names `text` mentions, in order, each once (without a leading `./`).
    Names that cannot be inside the workspace are left out: absolute ones and any with a
    `..` part (`../x.py`, `src/../../x.py`); a name may still lead out through a symlink,
    which only the file system can tell (`inside`)."""
    names: list[str] = []
    for match in FILE_NAME.finditer(text):
        name = match.group(0)
        if match.start() > 0 and text[match.start() - 1] in "./":
            continue  # the tail of a longer name the pattern cannot take (`../x.py`)
        while name.startswith("./"):
            name = name[2:]
        parts = name.split("/")
        if not name or name.startswith("/") or ".." in parts:
            continue
        if name not in names:
            names.append(name)
    return names


def could_be_new_file(name: str) -> bool:
    """Whether `name`, which a task mentions and the workspace lacks, may be a file to
    create: its extension is one a file has (NEW_FILE_SUFFIXES), not an attribute's name
    (`f.path.isdir`, `self.items.append`)."""
    return Path(name).suffix.lower() in NEW_FILE_SUFFIXES


def inside(cwd: Path, name: str) -> bool:
    """Whether the workspace-relative `name`, resolved (symlinks followed, `..` folded),
    stays in the workspace `cwd`: what the loop writes from an answer (core/prose_code.py)
    must, in every sandbox mode, danger-full-access included."""
    root = Path(os.path.realpath(cwd))
    if Path(name).is_absolute():
        return False
    path = Path(os.path.realpath(root / name))
    return root in path.parents


def named_file_texts(text: str, cwd: Path) -> dict[str, str]:
    """Each file `text` names that exists under `cwd` and is small UTF-8 text, by name, in
    the order named (shown with the task, and the whole-file probe's: helps/probe.py)."""
    found: dict[str, str] = {}
    root = cwd.resolve()
    for name in named_in(text):
        path = (cwd / name).resolve()
        if root not in path.parents or not path.is_file():
            continue  # outside the workspace, or not a file: never shown
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            found[name] = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return found


def render_files(files: dict[str, str], section: str = SECTION,
                 max_bytes: int = MAX_TOTAL_BYTES) -> str:
    """Files as fenced blocks under their names in `section` (after an instruction), up to
    `max_bytes` in all; "" when none fits."""
    blocks: list[str] = []
    total = 0
    for name, content in files.items():
        if total + len(content) > max_bytes:
            break
        total += len(content)
        fence = "````" if "```" in content else "```"
        language = Path(name).suffix.lstrip(".")
        body = content if content.endswith("\n") else content + "\n"
        blocks.append(f"\n{name}\n{fence}{language}\n{body}{fence}\n")
    return section.format(files="".join(blocks)) if blocks else ""


class NamedFiles(TurnHelp):
    """Shows the files the task names with it (the compact profile)."""

    def start_turn(self, ctx: TurnContext, message: Message) -> Message:
        if not isinstance(message, str):
            return message
        return message + render_files(named_file_texts(ctx.task, ctx.cwd))
