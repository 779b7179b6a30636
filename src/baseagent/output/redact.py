"""Keep secrets out of everything the agent writes: events, the session record, stderr.

The secrets are the values the agent itself holds: environment variables whose names look
like credentials (the same patterns that keep them out of shell commands) and the API key
from the configuration. Matching is by value, so a key echoed back by a tool (`cat .env`,
`env`), quoted by a provider's error message or logged by a library is caught wherever it
appears. Structure is never touched: redaction works on string values, not on serialised
JSON, so a line stays valid JSON whatever the secret looks like.
"""
from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from baseagent.credentials import DEFAULT_STRIP_PATTERNS, secret_values

MARK = "[REDACTED]"
# Shorter values are not treated as secrets: redacting "true" or "1234" everywhere would
# mangle ordinary output, and real keys and tokens are far longer.
MIN_SECRET_LENGTH = 8


class Redactor:
    """Replaces every known secret value in text (and in nested JSON-like data) by MARK."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        found = {s for s in secrets if isinstance(s, str) and len(s.strip()) >= MIN_SECRET_LENGTH}
        # A secret with quotes or backslashes also appears JSON-escaped in serialised text.
        found |= {json.dumps(s)[1:-1] for s in found} - {""}
        # Longest first, so a secret that contains another is replaced whole.
        self._secrets = sorted(found, key=len, reverse=True)

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
        return text

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
