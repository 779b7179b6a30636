"""Retry policy: which failures are worth another try, how long to wait, what to tell the user.

Classification is by exception type and HTTP status code (litellm maps every provider onto
the OpenAI exception hierarchy), never by matching message text. Message text is only read
for a server's timing hint ("try again in 2s") and to print the provider's own words.
Pure functions, so the policy is unit-tested apart from any network.

Facts about litellm 1.105.0 this relies on (checked against a real socket server):
- 403 arrives as BadRequestError(status_code=403), 408/409/413/422 as BadRequestError with
  that status, 504 as Timeout(status_code=504), 529 as a bare APIError(status_code=529).
- A stream that breaks after it started (reset, read timeout, malformed SSE JSON, an error
  event mid-stream) raises MidStreamFallbackError, a ServiceUnavailableError subclass whose
  `original_exception` holds the real cause.
- A stream that simply ends early (clean EOF, no finish_reason, no [DONE]) and an empty 200
  body raise nothing: litellm invents finish_reason "stop". The client detects those itself.

The direct transport (llm/direct.py) raises ProviderError (an HTTP error answer, with the
status the server sent), MidStreamError (litellm's MidStreamFallbackError) or the httpx
exception itself. Nothing here imports litellm or openai: an exception of theirs can only
exist once they are imported, so their types are looked up only then (sys.modules).
"""
from __future__ import annotations

import email.utils
import errno
import http.client
import random
import re
import socket
import ssl
import sys
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterator

from baseagent.llm.provider_errors import (ContextWindowExceededError, MidStreamError,
                                           ProviderError, TransportFailure)

# Server hints above this are capped: a harness would rather retry (or fail) within minutes
# than sleep for an hour on one Retry-After header.
MAX_HINT_SECONDS = 120.0
# Jitter spreads simultaneous clients apart (Codex uses ±10%).
JITTER_FRACTION = 0.1
# Statuses that mean "the server could not answer now": worth the same request again.
# 408 request timeout, 409 conflict (OpenAI's lock contention), 425 too early, 429 rate
# limit, 5xx server errors, Cloudflare's 52x, Anthropic's 529 overloaded.
_RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
# 413: the request is too large: the history must shrink, which is what compaction does.
_OVERFLOW_STATUS = frozenset({413})


class Verdict(Enum):
    RETRY = "retry"
    OVERFLOW = "overflow"  # context window exceeded: compact, then retry
    FATAL = "fatal"


class StreamBroken(Exception):
    """The stream ended before the model finished (connection cut, early EOF): retry."""

    reason = "stream ended early"


class StreamStalled(StreamBroken):
    """No byte arrived for longer than the idle timeout: retry."""

    reason = "stream stalled"


class NoAnswerYet(StreamStalled):
    """No byte of the answer arrived within the first-byte timeout: retry."""

    def __init__(self, waited: float) -> None:
        super().__init__(f"no answer yet after {waited:.0f}s")
        self.reason = f"no answer yet after {waited:.0f} s"


@dataclass(frozen=True)
class ConnectionProblem:
    """A request that never got an HTTP answer: where it went and why it failed.

    litellm reports all of these as `500 InternalServerError: Connection error.` (or a 408
    Timeout), a status no server sent; the exception chain under it holds the URL (on the
    httpx / OpenAI SDK exception) and the real cause (by type: refused, DNS, TLS, timeout).
    """

    url: str | None
    cause: str
    permanent: bool = False  # retrying cannot help (a TLS mismatch, a name that does not exist)

    def __str__(self) -> str:
        where = f" {self.url}" if self.url else " the provider"
        verb = "no answer from" if self.cause.startswith("timed out") else "cannot connect to"
        return f"{verb}{where}: {self.cause}"


def _loaded(name: str) -> Any:
    """An already imported module, or None: its exception types cannot be in play before."""
    return sys.modules.get(name)


def _mid_stream(exc: BaseException) -> bool:
    """A stream that broke after it started: ours, or litellm's wrapper of it."""
    return isinstance(exc, MidStreamError) or type(exc).__name__ == "MidStreamFallbackError"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = (getattr(current, "original_exception", None) if isinstance(
            getattr(current, "original_exception", None), BaseException) else None) \
            or current.__cause__ or current.__context__


def _request_url(exc: BaseException) -> str | None:
    if isinstance(exc, TransportFailure):
        return exc.url
    # httpx exceptions raise RuntimeError from `.request` when none was attached.
    try:
        request = getattr(exc, "request", None)
    except RuntimeError:
        return None
    url = getattr(request, "url", None)
    return str(url) if url is not None else None


# getaddrinfo errors that mean "this name does not exist", as opposed to EAI_AGAIN
# ("temporary failure in name resolution"), which is worth another try.
_NO_SUCH_NAME = frozenset(getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA")
                          if hasattr(socket, name))
_UNREACHABLE = frozenset({errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN})


def _cause_of(error: BaseException) -> tuple[str, bool] | None:
    """(cause, permanent) for one exception of the chain, by type (and errno)."""
    if isinstance(error, TransportFailure):  # the direct transport's, around the OS error
        cause = error.__cause__
        if isinstance(cause, TimeoutError):
            return ("timed out connecting" if error.stage == "connect"
                    else "timed out waiting for the response"), False
        if isinstance(cause, http.client.HTTPException):
            return f"the server broke the HTTP exchange ({cause})", False
        return None
    if isinstance(error, ssl.SSLCertVerificationError):
        detail = getattr(error, "verify_message", None) or error.strerror or error
        return f"TLS certificate verification failed ({detail})", True
    if isinstance(error, ssl.SSLError):
        detail = getattr(error, "reason", None) or error.strerror or error
        return f"TLS handshake failed ({detail}; is it an https URL for an " \
               "http server, or the other way round?)", True
    if isinstance(error, socket.gaierror):
        permanent = error.errno in _NO_SUCH_NAME
        return f"DNS lookup failed ({error.strerror or error})", permanent
    if isinstance(error, ConnectionRefusedError):
        return "connection refused (nothing listening on that host and port?)", False
    if isinstance(error, ConnectionResetError):
        return "connection reset by the server", False
    if isinstance(error, OSError) and error.errno in _UNREACHABLE:
        return f"network unreachable ({error.strerror})", False
    httpx = _loaded("httpx")
    if httpx is None:
        return None
    if isinstance(error, httpx.ConnectTimeout):
        return "timed out connecting", False
    if isinstance(error, (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout)):
        return "timed out waiting for the response", False
    if isinstance(error, httpx.RemoteProtocolError):
        return f"the server broke the HTTP exchange ({error})", False
    return None


def connection_problem(exc: BaseException) -> ConnectionProblem | None:
    """What went wrong below HTTP, if that is what this error is; None for an HTTP answer
    (a status code), a broken stream we detected ourselves, or anything else."""
    if _mid_stream(exc):
        return None  # connected and answered; the stream broke later (see describe)
    httpx, openai = _loaded("httpx"), _loaded("openai")
    transport = ((TransportFailure,) + ((httpx.TransportError,) if httpx else ())
                 + ((openai.APIConnectionError,) if openai else ()))
    chain = list(_chain(exc))
    if not any(isinstance(e, transport) for e in chain) or wire_status(exc) is not None:
        return None
    # Only the transport's own exceptions: litellm attaches a placeholder request to its own.
    url = next((u for e in reversed(chain)
                if isinstance(e, transport) and (u := _request_url(e))), None)
    for error in reversed(chain):  # the deepest cause is the most precise
        found = _cause_of(error)
        if found is not None:
            return ConnectionProblem(url, found[0], found[1])
    deepest = chain[-1]
    return ConnectionProblem(url, f"{type(deepest).__name__}: {deepest}".rstrip(": "))


def classify(exc: BaseException) -> Verdict:
    """Decide by the HTTP status the server sent, else by exception type; unknown errors are
    fatal (never loop)."""
    if isinstance(exc, (StreamBroken, MidStreamError)):
        return Verdict.RETRY
    problem = connection_problem(exc)
    if problem is not None:
        return Verdict.FATAL if problem.permanent else Verdict.RETRY
    litellm = _loaded("litellm")
    le = getattr(litellm, "exceptions", None) if litellm is not None else None
    if isinstance(exc, ContextWindowExceededError) or (
            le is not None and isinstance(exc, le.ContextWindowExceededError)):
        return Verdict.OVERFLOW
    wire = wire_status(exc)
    if wire is not None and wire >= 400:
        if wire in _OVERFLOW_STATUS:
            return Verdict.OVERFLOW
        if wire in _RETRYABLE_STATUS and not is_quota(exc):
            return Verdict.RETRY
        return Verdict.FATAL
    if le is None:  # neither litellm's nor an HTTP answer: by type alone
        return _verdict_of_type(exc)
    if isinstance(exc, (le.ContentPolicyViolationError, le.UnsupportedParamsError,
                        le.AuthenticationError, le.PermissionDeniedError, le.NotFoundError,
                        le.BudgetExceededError)):
        return Verdict.FATAL
    if is_quota(exc):
        return Verdict.FATAL
    openai = _loaded("openai")
    if isinstance(exc, (le.RateLimitError, le.Timeout, le.APIConnectionError,
                        le.InternalServerError, le.ServiceUnavailableError,
                        le.BadGatewayError)) or (openai is not None and isinstance(
                            exc, (openai.APIConnectionError, openai.APITimeoutError))):
        return Verdict.RETRY
    return _verdict_of_type(exc)


def _verdict_of_type(exc: BaseException) -> Verdict:
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return Verdict.RETRY
    status = status_of(exc)
    if status in _RETRYABLE_STATUS:
        return Verdict.RETRY
    if status in _OVERFLOW_STATUS:
        return Verdict.OVERFLOW
    return Verdict.FATAL


def wire_status(exc: BaseException) -> int | None:
    """The HTTP status the server really sent, found down the exception chain.

    litellm re-maps provider errors partly by their text: any message that mentions a rate
    limit becomes RateLimitError with status_code 429, whatever the server answered (a 401
    included). The httpx and OpenAI SDK exceptions it was raised from still hold the real
    status, so that is what the policy reads.
    """
    httpx, openai = _loaded("httpx"), _loaded("openai")
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ProviderError):
            return current.status_code
        if httpx is not None and isinstance(current, httpx.HTTPStatusError):
            return current.response.status_code
        if (openai is not None and isinstance(current, openai.APIStatusError)
                and type(current).__module__.split(".")[0] == "openai"):
            return current.status_code
        current = current.__cause__ or current.__context__
    return None


def status_of(exc: BaseException) -> int | None:
    """The status to report: the real one from the wire, else the one litellm assigned."""
    wire = wire_status(exc)
    if wire is not None:
        return wire
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def is_quota(exc: BaseException) -> bool:
    """OpenAI signals an exhausted quota as a 429 with code `insufficient_quota`: no retry."""
    body = getattr(exc, "body", None)
    if not isinstance(body, dict):
        return False
    inner = body.get("error") if isinstance(body.get("error"), dict) else body
    return inner.get("code") == "insufficient_quota" or inner.get("type") == "insufficient_quota"


def _headers(exc: BaseException) -> dict[str, str]:
    found: dict[str, str] = {}
    for source in (getattr(exc, "litellm_response_headers", None),
                   getattr(getattr(exc, "response", None), "headers", None)):
        try:
            if source:
                found.update({str(k).lower(): str(v) for k, v in dict(source).items()})
        except Exception:  # noqa: BLE001 - headers of a half-built response; ignore
            continue
    return found


# "try again in 1.5s", "in 120ms", "in 6m0s", "in 20 seconds" (OpenAI's wordings).
_TRY_AGAIN = re.compile(r"try again in\s+((?:[0-9.]+\s*(?:ms|h|m|s))+(?![a-z])|[0-9.]+\s*"
                        r"(?:seconds?|secs?)?\b)", re.IGNORECASE)
_DURATION_PART = re.compile(r"([0-9.]+)\s*(ms|h|m|s|seconds?|secs?)?", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "h": 3600.0, "m": 60.0, "s": 1.0}


def _parse_duration(text: str) -> float | None:
    total, seen = 0.0, False
    for number, unit in _DURATION_PART.findall(text):
        try:
            value = float(number)
        except ValueError:
            return None
        unit = (unit or "s").lower()
        total += value * _UNIT_SECONDS.get(unit if unit == "ms" else unit[0], 1.0)
        seen = True
    return total if seen else None


def retry_hint(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (retry-after-ms, Retry-After, 'try again in N s')."""
    headers = _headers(exc)
    if "retry-after-ms" in headers:
        try:
            return max(0.0, float(headers["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    if "retry-after" in headers:
        value = headers["retry-after"].strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                parsed = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                parsed = None
            if parsed is not None:
                return max(0.0, parsed.timestamp() - time.time())
    # The wording is a server hint about timing, not a classification: reading it is safe.
    match = _TRY_AGAIN.search(str(getattr(exc, "message", "") or exc))
    if match:
        return _parse_duration(match.group(1))
    return None


def backoff_delay(attempt: int, base: float, cap: float, hint: float | None = None,
                  factor: float = 2.0, rng: Any = random) -> float:
    """base * factor^(attempt-1), capped, with ±10% jitter; a server hint wins if larger."""
    delay = min(cap, base * (factor ** max(0, attempt - 1)))
    delay *= 1.0 + rng.uniform(-JITTER_FRACTION, JITTER_FRACTION)
    if hint is not None:
        delay = max(delay, min(hint, MAX_HINT_SECONDS))
    return max(0.0, delay)


@dataclass(frozen=True)
class RetrySchedule:
    """How long retry n of a model call waits (the settings' RetryOptions).

    `exponential` (Codex): base * factor^(n-1), capped at `cap`, ±10% jitter (backoff_delay).
    `linear` (BaseAgent): `step` * n seconds, no jitter (10 s, 20 s, 30 s, ...). Either
    way a server's hint (Retry-After, "try again in N s") wins when it is longer, and
    `max_total_wait` bounds all the waits of one call: a retry that would pass it is not
    made (the call fails, saying so)."""

    kind: str = "exponential"
    base: float = 0.2
    factor: float = 2.0
    cap: float = 30.0
    step: float = 10.0
    max_total_wait: float | None = None

    def delay(self, attempt: int, hint: float | None = None, rng: Any = random) -> float:
        if self.kind == "linear":
            delay = self.step * max(1, attempt)
            if hint is not None:
                delay = max(delay, min(hint, MAX_HINT_SECONDS))
            return max(0.0, delay)
        return backoff_delay(attempt, self.base, self.cap, hint, self.factor, rng)

    def allows(self, waited: float, delay: float) -> bool:
        """Whether one more wait of `delay` keeps the call's waits within the total cap."""
        return self.max_total_wait is None or waited + delay <= self.max_total_wait


def root_cause(exc: BaseException) -> BaseException:
    """MidStreamFallbackError wraps the real failure; report that one."""
    return getattr(exc, "original_exception", None) or exc


def describe(exc: BaseException) -> str:
    """A short reason for a retry notice: `429`, `503 ServiceUnavailableError`, `stream
    error: Connection reset by peer`, `stream stalled`... never a stack or a help text."""
    if isinstance(exc, StreamBroken):
        return exc.reason
    problem = connection_problem(exc)
    if problem is not None:
        return str(problem)
    if _mid_stream(exc):
        return f"stream error: {provider_message(root_cause(exc), limit=120)}"
    status = status_of(exc)
    name = type(exc).__name__
    return f"{status} {name}" if status is not None else name


# litellm prefixes messages with its class names ("litellm.RateLimitError: RateLimitError:
# OpenAIException - ...", "litellm.Timeout: Timeout Error: ..."): strip them so the
# provider's own sentence comes first.
_PREFIX = re.compile(
    r"^(?:\s*(?:litellm\.)?[A-Za-z]*(?:Error|Exception|Timeout)(?: Error)?(?::| -)\s*)+")


def provider_message(exc: BaseException, limit: int = 500) -> str:
    """The provider's message on one line, without litellm's prefixes and help suffix."""
    body = getattr(exc, "body", None)
    inner = body.get("error") if isinstance(body, dict) and isinstance(
        body.get("error"), dict) else body
    text = inner.get("message") if isinstance(inner, dict) else None
    if not isinstance(text, str) or not text.strip():
        text = str(getattr(exc, "message", None) or exc)
    text = _PREFIX.sub("", text.strip())
    text = text.split(" Original exception:", 1)[0]
    first = text.splitlines()[0].strip() if text.strip() else type(exc).__name__
    return first[:limit]


_FATAL_KINDS: tuple[tuple[str, str], ...] = (
    ("AuthenticationError", "authentication failed (check the API key)"),
    ("PermissionDeniedError", "permission denied"),
    ("NotFoundError", "model or endpoint not found"),
    ("ContentPolicyViolationError", "refused by the provider's content policy"),
    ("UnsupportedParamsError", "unsupported parameter"),
    ("BudgetExceededError", "budget exceeded"),
)


def failure_message(exc: BaseException) -> str:
    """One clear line for an error that will not be retried."""
    problem = connection_problem(exc)
    if problem is not None:
        return str(problem)
    status = status_of(exc)
    names = {cls.__name__ for cls in type(exc).__mro__}
    kind = next((label for name, label in _FATAL_KINDS if name in names), None)
    if kind is None and is_quota(exc):
        kind = "quota exceeded (check the plan and billing)"
    if kind is None and status == 401:
        kind = "authentication failed (check the API key)"
    if kind is None and status == 403:
        kind = "permission denied"
    if kind is None and status is not None and 400 <= status < 500:
        kind = "invalid request"
    if kind is None:
        kind = type(exc).__name__
    where = f" ({status})" if status is not None else ""
    return f"{kind}{where}: {provider_message(exc)}"


def last_error(exc: BaseException) -> str:
    """The reason of the last failed attempt, plus what the server or stream said."""
    summary = describe(exc)
    if connection_problem(exc) is not None:
        return summary  # already says where and why
    if isinstance(exc, StreamBroken):
        detail = str(exc) or exc.reason
    else:
        detail = provider_message(root_cause(exc))
    return summary if not detail or detail in summary else f"{summary}: {detail}"
