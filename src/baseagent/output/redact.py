"""Keep secrets out of everything the agent writes: events, the session record, stderr.

The secrets are the values the agent itself holds: environment variables whose names look
like credentials (the same patterns that keep them out of shell commands) and the API key
from the configuration. Matching is by value, so a key echoed back by a tool (`cat .env`,
`env`), quoted by a provider's error message or logged by a library is caught wherever it
appears. Structure is never touched: redaction works on string values, not on serialised
JSON, so a line stays valid JSON whatever the secret looks like.
"""
from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from baseagent.credentials import DEFAULT_STRIP_PATTERNS, secret_values

MARK = "[REDACTED]"
# Shorter values are not treated as secrets: redacting "true" or "1234" everywhere would
# mangle ordinary output, and real keys and tokens are far longer.
MIN_SECRET_LENGTH = 8


# A run of at least this many characters of a secret, anywhere, is masked: a key printed in
# pieces (split across lines, two prints with a sleep between) or cut by a truncation.
MIN_FRAGMENT = 12
# At the very start or end of a text a shorter piece is masked too (down to this): that is
# where a value being streamed (growing prefixes) or a cut output shows one. Not shorter:
# the first few characters of a key are often its public vendor prefix (`github_pat_`,
# `sk-proj-`), and names equal to one (an MCP server called `github`) must stay readable.
MIN_EDGE_FRAGMENT = 8
# Length of the anchors used to find fragments fast (str.find), every (MIN_FRAGMENT -
# _ANCHOR + 1) characters of a secret: every fragment of MIN_FRAGMENT holds one of them.
_ANCHOR = 6


class Redactor:
    """Replaces every known secret value in text (and in nested JSON-like data) by MARK.

    What is caught: each value whole, JSON-escaped, reversed, base64-encoded (at all three
    alignments, standard and URL-safe) and hex-encoded; any run of MIN_FRAGMENT characters
    of a value; and a shorter piece of one (MIN_EDGE_FRAGMENT or more) at the start or end
    of a text, which is how a value appears while it is being streamed. What is not: pieces
    shorter than that in the middle of a text, other encodings, and anything computed from a
    value (see docs/RELIABILITY.md). The real defence is that commands never get the values.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._index(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        """Know these secrets too (a run's tool sources name theirs after the redactor is
        already guarding stderr); the tables are rebuilt and swapped in."""
        extra = [s for s in secrets if isinstance(s, str)]
        if extra:
            self._index([*self._values, *extra])

    def _index(self, secrets: Iterable[str]) -> None:
        """Build the lookup tables, then assign them (a writer on another thread sees the
        old tables or the new ones)."""
        found = {s for s in secrets if isinstance(s, str) and len(s.strip()) >= MIN_SECRET_LENGTH}
        values = sorted(found, key=len, reverse=True)
        variants = set(found)
        for value in found:
            variants |= _transformed(value)
        # A secret with quotes or backslashes also appears JSON-escaped in serialised text.
        variants |= {json.dumps(s)[1:-1] for s in variants} - {""}
        step = MIN_FRAGMENT - _ANCHOR + 1
        anchors = [(value[p:p + _ANCHOR], value, p) for value in values
                   for p in range(0, len(value) - _ANCHOR + 1, step)]
        # Longest first, so a secret that contains another is replaced whole.
        self._secrets: list[str] = sorted(variants, key=len, reverse=True)
        self._values: list[str] = values
        self._anchors: list[tuple[str, str, int]] = anchors

    @classmethod
    def from_environment(cls, environ: Mapping[str, str],
                         strip_patterns: Iterable[str] = DEFAULT_STRIP_PATTERNS,
                         extra: Iterable[str | None] = ()) -> "Redactor":
        """Secrets = values of credential-named variables, plus explicit ones (api_key)."""
        return cls(secret_values(environ, strip_patterns, extra))

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def text(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MARK)
        if not self._values or not text:
            return text
        spans = self._fragments(text)
        if not spans:
            return text
        out, last = [], 0
        for start, end in spans:
            out.append(text[last:start])
            out.append(MARK)
            last = end
        out.append(text[last:])
        return "".join(out)

    def _fragments(self, text: str) -> list[tuple[int, int]]:
        """Merged (start, end) spans of `text` that are pieces of a secret (see the class)."""
        spans: list[tuple[int, int]] = []
        for anchor, value, offset in self._anchors:
            at = text.find(anchor)
            while at >= 0:
                start, end = _extend(text, at, value, offset)
                if end - start >= MIN_FRAGMENT:
                    spans.append((start, end))
                at = text.find(anchor, at + 1)
        for value in self._values:
            tail = _edge(text, value, at_end=True)
            if tail:
                spans.append((len(text) - tail, len(text)))
            head = _edge(text, value, at_end=False)
            if head:
                spans.append((0, head))
        if not spans:
            return []
        spans.sort()
        merged = [spans[0]]
        for start, end in spans[1:]:
            if start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged

    __call__ = text

    def data(self, value: Any) -> Any:
        """Redact the strings inside dicts/lists; returns the same object if nothing changed
        (so a caller can skip re-validating an event that held no secret)."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            changed = False
            out: dict[Any, Any] = {}
            for key, item in value.items():
                new = self.data(item)
                changed = changed or new is not item
                out[key] = new
            return out if changed else value
        if isinstance(value, list):
            items = [self.data(item) for item in value]
            if any(new is not old for new, old in zip(items, value)):
                return items
            return value
        return value


def _transformed(value: str) -> set[str]:
    """Encoded forms of a secret worth catching whole: reversed, base64 and hex.

    base64 encodes 3 bytes as 4 characters, so a value embedded in longer data encodes
    differently at each of its three alignments; the characters that depend only on the
    value itself are kept for each (what CI systems mask for the same reason)."""
    raw = value.encode("utf-8")
    forms = {value[::-1], raw.hex()}
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        start = (shift * 4 + 2) // 3  # first character made of the value's bits only
        end = (shift + len(raw)) * 8 // 6  # past the last one
        core = encoded[start:end]
        if len(core) >= MIN_SECRET_LENGTH:
            forms.add(core)
            forms.add(core.replace("+", "-").replace("/", "_"))
    return forms


def _extend(text: str, at: int, value: str, offset: int) -> tuple[int, int]:
    """Grow the match of value[offset:] at text[at:] in both directions while they agree."""
    start, vstart = at, offset
    while start > 0 and vstart > 0 and text[start - 1] == value[vstart - 1]:
        start -= 1
        vstart -= 1
    end, vend = at + _ANCHOR, offset + _ANCHOR
    while end < len(text) and vend < len(value) and text[end] == value[vend]:
        end += 1
        vend += 1
    return start, end


def _edge(text: str, value: str, at_end: bool) -> int:
    """Length of the longest proper piece of `value` that `text` ends with (a prefix of the
    value, as streaming shows it) or starts with (a suffix, as a cut shows it); 0 if shorter
    than MIN_EDGE_FRAGMENT."""
    for size in range(min(len(value) - 1, len(text)), MIN_EDGE_FRAGMENT - 1, -1):
        if at_end and text.endswith(value[:size]):
            return size
        if not at_end and text.startswith(value[-size:]):
            return size
    return 0


class RedactingStream(io.TextIOBase):
    """A text stream (for sys.stderr) that redacts each write before passing it on.

    Python-level writers (logging handlers, warnings, tracebacks, print) all write whole
    messages per call, so a secret is never split across two writes in practice.
    """

    def __init__(self, target: TextIO, redactor: Redactor) -> None:
        self._target = target
        self._redactor = redactor

    def write(self, text: str) -> int:  # type: ignore[override]
        self._target.write(self._redactor.text(text))
        return len(text)

    def flush(self) -> None:
        self._target.flush()

    def isatty(self) -> bool:
        return self._target.isatty()

    def fileno(self) -> int:
        return self._target.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._target, "encoding", "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self._target, "errors", None)

    def writable(self) -> bool:
        return True


def install_stderr(redactor: Redactor) -> None:
    """Route Python's stderr through the redactor (before litellm creates its log handler)."""
    import sys

    if redactor and not isinstance(sys.stderr, RedactingStream) and sys.stderr is not None:
        sys.stderr = RedactingStream(sys.stderr, redactor)
