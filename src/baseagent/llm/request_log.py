"""The verbose log: every model request and response, redacted, as DEBUG records.

`verbose = true` (`--verbose`, `Agent(verbose=True)`, hermes' `verbose_logging=True`)
gives the run's model client one of these. Each call writes a `request` record (the
messages as the history holds them, the tool names, the parameters), then a `response`
record (text, reasoning, tool calls, finish reason, usage, seconds) or one `error` record
per failed attempt. Every record is one line of JSON, redacted with the run's Redactor
before it is formatted, on the `baseagent.model` logger: the library only logs, the entry
point decides where it goes (the CLI: stderr; hermes.AIAgent: stderr unless the logger
already has a handler; your program: any handler you attach). Nothing goes to stdout.
"""
from __future__ import annotations

import json
import logging
import time
from typing import Any, Callable

LOGGER_NAME = "baseagent.model"


class RequestLog:
    """One run's verbose log: `redact` is the run's Redactor.data, applied to every record."""

    def __init__(self, redact: Callable[[Any], Any], thread_id: str,
                 logger: logging.Logger | None = None) -> None:
        self._redact = redact
        self._thread_id = thread_id
        self._logger = logger or logging.getLogger(LOGGER_NAME)
        if self._logger.level == logging.NOTSET:
            # A verbose agent logs at DEBUG: a handler of the caller's alone receives the
            # records (a logger left unset would drop them at the root's WARNING). A level
            # the caller set is theirs.
            self._logger.setLevel(logging.DEBUG)
        self._started = 0.0
        self._calls = 0

    def request(self, *, model: str, api_base: str | None, transport: str,
                messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                params: dict[str, Any]) -> None:
        self._calls += 1
        self._started = time.monotonic()
        names = [str((t.get("function") or {}).get("name", "")) for t in tools or []]
        self._write({"event": "request", "call": self._calls, "model": model,
                     "api_base": api_base, "transport": transport,
                     "params": {k: v for k, v in params.items() if v is not None},
                     "tools": names, "messages": messages})

    def response(self, message: dict[str, Any], finish_reason: str | None,
                 usage: Any) -> None:
        self._write({"event": "response", "call": self._calls,
                     "seconds": round(time.monotonic() - self._started, 3),
                     "finish_reason": finish_reason, "message": message,
                     "usage": {"input_tokens": usage.input_tokens,
                               "cached_input_tokens": usage.cached_input_tokens,
                               "output_tokens": usage.output_tokens,
                               "cost_usd": usage.cost_usd}})

    def error(self, description: str, *, retrying: bool) -> None:
        self._write({"event": "error", "call": self._calls, "error": description,
                     "retrying": retrying,
                     "seconds": round(time.monotonic() - self._started, 3)})

    def _write(self, record: dict[str, Any]) -> None:
        if not self._logger.isEnabledFor(logging.DEBUG):
            return
        record = {"thread_id": self._thread_id, **record}
        self._logger.debug("%s", json.dumps(self._redact(record), ensure_ascii=False,
                                            default=str))


def stderr_handler(stream: Any) -> logging.Handler:
    """The handler an entry point attaches for `--verbose`: one line per record, as the
    rest of baseagent's stderr (`baseagent: verbose: {...}`)."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("baseagent: verbose: %(message)s"))
    handler.setLevel(logging.DEBUG)
    return handler


def attach(handler: logging.Handler) -> logging.Logger:
    """Send the verbose log to `handler` (an entry point's choice; process-wide, as every
    logging handler is)."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    return logger
