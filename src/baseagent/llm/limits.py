"""How much of a model's answer the client reads before it gives the attempt up.

Everything a model server sends is attack surface: a broken or hostile server (or a proxy
in front of one) can send an endless error body, one endless server-sent-events line, an
event that never ends, or deltas that never stop. Each is capped here, from the run's
output cap (`max_tokens`), so no reply a real model can write is refused and no answer can
take unbounded memory or time:

- `reply`: the characters assembled into one turn (text, reasoning, every tool call's
  arguments, reasoning blocks): `max_tokens` times REPLY_CHARS_PER_TOKEN (a token is a few
  characters; eight times the usual four leaves room for long tokens), at least REPLY_FLOOR.
  Checked by the client's chunk loop, whichever transport served the call;
- `event` and `line`: the bytes of one event's data and of one line on the wire (the direct
  transport, llm/direct.py): room for the whole reply in one event, every character
  escaped (`\\uXXXX`, six bytes), plus its envelope;
- `body`: the bytes of one streamed body (every event with its envelope, a few hundred
  bytes per token on OpenAI's wire);
- `error_body`: the bytes of an error answer read for its message (the status decides what
  happens next; the rest is dropped and the connection closed).

Past a cap the attempt ends with `StreamLimitExceeded`, a ModelError: the turn fails with a
message naming the cap, and the call is not retried, since the same request to the same
server gets the same answer (a server that ignores `max_tokens`, or one that is broken)
and each retry would read as much again. The error body is the exception: it is cut, not
refused, and its status is read as any other (a 500 is retried).
"""
from __future__ import annotations

from dataclasses import dataclass

from baseagent.llm.errors import ModelError

ERROR_BODY_BYTES = 64 * 1024
REPLY_CHARS_PER_TOKEN = 32
# Characters, at the least: twice the registry's cap on one call's arguments
# (tools/registry.py MAX_ARGUMENT_CHARS), so a call too large to run still arrives whole and
# is refused with a tool result the model can act on, rather than failing the turn.
REPLY_FLOOR = 2 << 20
# A client given no output cap (a library caller's ModelClient; the CLI always sets one)
# reads as if the cap were this many tokens.
DEFAULT_OUTPUT_TOKENS = 128 * 1024
ESCAPED_BYTES_PER_CHAR = 6
ENVELOPE_BYTES = 64 * 1024
BODY_BYTES_PER_CHAR = 16


class StreamLimitExceeded(ModelError):
    """The answer went past one of the caps: the attempt is given up, and not retried."""

    def __init__(self, what: str, limit: int, unit: str = "bytes") -> None:
        super().__init__(
            f"the model server sent {what} over {limit:,} {unit} (a cap derived from the "
            "output limit, llm/limits.py); the answer was dropped and the call is not "
            "retried: a server that ignores max_tokens, or a broken one")
        self.what = what
        self.limit = limit


@dataclass(frozen=True)
class StreamLimits:
    reply: int  # characters assembled into one turn
    event: int  # bytes of one event's data
    line: int  # bytes of one line on the wire
    body: int  # bytes of one streamed body
    error_body: int = ERROR_BODY_BYTES

    @classmethod
    def for_output(cls, max_tokens: int | None) -> "StreamLimits":
        tokens = max_tokens if isinstance(max_tokens, int) and max_tokens > 0 \
            else DEFAULT_OUTPUT_TOKENS
        reply = max(REPLY_FLOOR, tokens * REPLY_CHARS_PER_TOKEN)
        event = reply * ESCAPED_BYTES_PER_CHAR + ENVELOPE_BYTES
        return cls(reply=reply, event=event, line=event, body=reply * BODY_BYTES_PER_CHAR)
