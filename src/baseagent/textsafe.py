"""Text made inert for a terminal: what the model (or a repository, or a server) chose is
shown to a person as it is, never interpreted by the terminal.

A command holding `\\x1b[2K\\x1b[1G  $ git status` drawn raw makes the terminal erase the
line and show `$ git status` while something else runs; a right-to-left override (U+202E)
reverses what follows on screen; a zero-width space hides between letters. `inert` spells
every such character out visibly instead (`\\x1b`, `\\u202e`, `\\u200b`):

- C0 controls (U+0000-U+001F, ESC among them), DEL (U+007F) and C1 controls
  (U+0080-U+009F, CSI among them): `\\xNN` (a carriage return `\\r`);
- Unicode format characters (category Cf: bidi embeddings, overrides and isolates
  U+202A-U+202E and U+2066-U+2069, marks such as U+200E/U+200F, zero-width characters
  U+200B-U+200D and U+2060, the BOM, soft hyphen, tag characters), line and paragraph
  separators (U+2028, U+2029), surrogates and private-use characters: `\\uNNNN` (or
  `\\UNNNNNNNN`).

A newline is kept only where the text is drawn as lines (`multiline=True`: a multi-line
command, an answer, a command's output); where one row is drawn (a header, a file name, a
plan step) it is shown as `\\n` too. A tab is kept (it moves the cursor right, never over
text). A backslash is left as it is: `printf '\\x1b'` reads as typed.

The standard library only: the header (output/header.py) uses it before anything heavy is
imported. The JSONL and the session record carry text as it is (JSON escapes it): this is
for what a person reads on a terminal.
"""
from __future__ import annotations

import re
import unicodedata

# Categories never drawn as themselves: controls, format characters, line and paragraph
# separators, surrogates, private use.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co"})
# What may need spelling out: anything but printable ASCII, tab and (drawn as lines)
# newline. Plain text passes through the regex engine alone, so streamed text redrawn at
# every delta stays cheap.
_SUSPECT = re.compile(r"[^\t\n\x20-\x7e]")
_SUSPECT_IN_A_ROW = re.compile(r"[^\t\x20-\x7e]")
# Controls with a name every reader knows.
_NAMED = {"\r": "\\r", "\n": "\\n"}


def inert(text: str, *, multiline: bool = True) -> str:
    """`text` with every character a terminal would act on (or that would not show)
    spelled out visibly. `multiline`: newlines kept (False: shown as `\\n`)."""
    return (_SUSPECT if multiline else _SUSPECT_IN_A_ROW).sub(_spelled, text)


def inert_line(text: str) -> str:
    """`text` made inert for one row: newlines shown as `\\n` as well."""
    return inert(text, multiline=False)


def _spelled(match: re.Match[str]) -> str:
    return _visible(match.group())


def _visible(char: str) -> str:
    """One character that is not printable ASCII, as it is drawn."""
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"\\x{code:02x}"
    if unicodedata.category(char) not in _HIDDEN_CATEGORIES:
        return char
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
