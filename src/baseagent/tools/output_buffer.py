"""Bounded capture of process output and middle truncation for the model.

Commands can print far more than anyone wants to hold (``yes``, a build log): the start usually
says what ran and the end says how it finished, so both ends are kept and the middle dropped.
Everything here is pure (no I/O) so it can be unit tested and shared by every tool.
"""
from __future__ import annotations

import re

# 64 KiB each side: plenty for a build log's head and its final errors, small enough to
# re-decode on every progress update without noticeable cost.
DEFAULT_HEAD_BYTES = 64 * 1024
DEFAULT_TAIL_BYTES = 64 * 1024

# ANSI/VT escape sequences: CSI (colours, cursor moves), OSC (window titles, hyperlinks,
# terminated by BEL or ST), and the remaining two-byte escapes. Models gain nothing from them.
_ANSI_RE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL | ST (tolerate a cut-off one)
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS / SOS / PM / APC strings
    r"|\x1b[@-Z\\-_]"  # other Fe escapes
    r"|\x1b[ -/]*[0-~]"  # nF / Fp / Fs escapes such as ESC ( B, ESC 7
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
# Control characters that would corrupt a transcript; \n and \t survive, \r and \b are
# interpreted first, C1 controls go too.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_BACKSPACE_RE = re.compile(r"[^\x08\n]\x08")


class HeadTailBuffer:
    """Keep the first ``max_head`` and last ``max_tail`` bytes of a stream, count the rest.

    Memory stays bounded however much is written, which is the point: a runaway command must
    not take the agent down with it.
    """

    def __init__(self, max_head: int = DEFAULT_HEAD_BYTES, max_tail: int = DEFAULT_TAIL_BYTES):
        if max_head < 0 or max_tail < 0:
            raise ValueError("buffer sizes must be >= 0")
        self.max_head = max_head
        self.max_tail = max_tail
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0  # bytes written but no longer held
        self.total = 0  # bytes written in all

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self.max_head - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        if len(data) >= self.max_tail:
            # The new chunk alone fills the tail: everything older is dropped in one step.
            self.dropped += len(self._tail) + len(data) - self.max_tail
            self._tail = bytearray(data[len(data) - self.max_tail:])
            return
        self._tail += data
        excess = len(self._tail) - self.max_tail
        if excess > 0:
            del self._tail[:excess]
            self.dropped += excess

    @property
    def head(self) -> bytes:
        return bytes(self._head)

    @property
    def tail(self) -> bytes:
        return bytes(self._tail)

    def texts(self) -> tuple[str, str]:
        """Head and tail decoded lossily; when contiguous, the tail is merged into the head.

        Decoding each side separately would turn a character split across the seam into two
        replacement characters, so the cut edges are trimmed to whole UTF-8 sequences.
        """
        if not self.dropped:
            return decode_lossy(bytes(self._head) + bytes(self._tail)), ""
        return (
            decode_lossy(_trim_partial_end(bytes(self._head))),
            decode_lossy(_trim_partial_start(bytes(self._tail))),
        )

    def last_text(self, max_bytes: int) -> tuple[str, int]:
        """The newest `max_bytes` of the output, decoded, and how many bytes came before them.

        What a live view needs: a command printing continuously must not make every progress
        event carry everything held so far."""
        data = bytes(self._tail) if self.dropped else bytes(self._head) + bytes(self._tail)
        if len(data) > max_bytes:
            data = _trim_partial_start(data[len(data) - max_bytes:])
        return decode_lossy(data), self.total - len(data)

    def text(self) -> str:
        """Whole retained text with a marker where bytes were dropped."""
        head, tail = self.texts()
        if not self.dropped:
            return head
        return head + omission_marker(self.dropped, "bytes") + tail


def decode_lossy(data: bytes) -> str:
    """UTF-8 with U+FFFD for invalid bytes: output is shown, never round-tripped."""
    return data.decode("utf-8", errors="replace")


def _trim_partial_end(data: bytes) -> bytes:
    """Drop an incomplete multi-byte sequence at the end (its rest was cut off)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:  # continuation byte: keep looking for the lead byte
            continue
        if byte >= 0xC0:
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data[:-back] if needed > back else data
        return data
    return data


def _trim_partial_start(data: bytes) -> bytes:
    """Drop continuation bytes at the start (their lead byte was cut off)."""
    start = 0
    while start < min(3, len(data)) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:]


def clean_terminal_text(text: str) -> str:
    """Make terminal output fit for a transcript: no escapes, no control characters.

    ``\\r`` is rendered the way a terminal would (later text overwrites the line from its
    start), so progress bars collapse to their final state instead of hundreds of copies.
    """
    text = _ANSI_RE.sub("", text)
    text = text.replace("\r\n", "\n")
    if "\r" in text:
        text = "\n".join(_overwrite_line(line) for line in text.split("\n"))
    if "\x08" in text:
        text = _BACKSPACE_RE.sub("", text)
    return _CONTROL_RE.sub("", text)


def _overwrite_line(line: str) -> str:
    if "\r" not in line:
        return line
    shown = ""
    for segment in line.split("\r"):
        shown = segment + shown[len(segment):]
    return shown


def omission_marker(count: int, unit: str = "characters") -> str:
    return f"\n[... {count} {unit} truncated ...]\n"


def join_truncated(head: str, tail: str, max_chars: int, omitted: int = 0) -> str:
    """Join two ends of a text known to have lost ``omitted`` characters between them.

    Keeps at most ``max_chars`` characters (half from each end, unused budget moving to the
    other side) and reports everything left out in one marker. ``omitted`` may count bytes
    that were never decoded; for mostly-ASCII output the difference does not matter.
    """
    if max_chars < 0:
        raise ValueError("max_chars must be >= 0")
    if not omitted and len(head) + len(tail) <= max_chars:
        return head + tail
    head_keep = min(len(head), max_chars // 2)
    tail_keep = min(len(tail), max_chars - head_keep)
    head_keep = min(len(head), max_chars - tail_keep)
    cut = omitted + (len(head) - head_keep) + (len(tail) - tail_keep)
    if not cut:
        return head + tail
    kept_tail = tail[len(tail) - tail_keep:] if tail_keep else ""
    return head[:head_keep] + omission_marker(cut) + kept_tail


def truncate_middle(text: str, max_chars: int) -> str:
    """Cut ``text`` to ``max_chars`` characters by removing its middle, with a marker."""
    mid = len(text) // 2
    return join_truncated(text[:mid], text[mid:], max_chars)
