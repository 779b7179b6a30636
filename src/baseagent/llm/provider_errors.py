"""What a direct transport (llm/direct.py) raises when a provider answers with an error.

The retry policy (llm/retry.py) reads an error by its HTTP status, its body and a few
names, never by importing litellm. litellm maps a provider's error onto a class by status
and, for some wordings, by text (a 401 that mentions a rate limit becomes RateLimitError;
"prompt is too long" a ContextWindowExceededError); these classes carry the same names
and `error_class` makes the same choice for the two wires the direct path speaks, so a
retry notice, a verdict and a failure message read the same whichever path served the
call (tests/llm/test_direct_parity.py holds the two to each other on every scripted fault).
Unlike litellm's, `status_code` is always the status the server sent.
"""
from __future__ import annotations

import re
from typing import Any, Callable


class ProviderError(Exception):
    """An HTTP error answer: the status the server sent, its parsed body, the response."""

    def __init__(self, message: str, status_code: int, body: Any = None,
                 response: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.body = body
        self.response = response  # the httpx.Response (headers: Retry-After and friends)


class BadRequestError(ProviderError):
    pass


class ContextWindowExceededError(BadRequestError):
    pass


class ContentPolicyViolationError(BadRequestError):
    pass


class AuthenticationError(ProviderError):
    pass


class PermissionDeniedError(ProviderError):
    pass


class NotFoundError(ProviderError):
    pass


class Timeout(ProviderError):  # noqa: N818 - litellm's name, which retry notices show
    pass


class RateLimitError(ProviderError):
    pass


class InternalServerError(ProviderError):
    pass


class BadGatewayError(ProviderError):
    pass


class ServiceUnavailableError(ProviderError):
    pass


class APIError(ProviderError):
    pass


class TransportFailure(Exception):
    """A request that got no HTTP answer (what httpx calls a TransportError): where it went,
    at which stage ("connect", "send", "answer") and, as its cause, the OS error."""

    def __init__(self, url: str, stage: str, cause: BaseException) -> None:
        super().__init__(str(cause) or type(cause).__name__)
        self.url = url
        self.stage = stage
        self.__cause__ = cause


class MidStreamError(Exception):
    """The stream broke after it had started (reset, read timeout, an unreadable event, an
    error event): always worth another try, like litellm's MidStreamFallbackError, and
    described by its `original_exception`."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(str(original))
        self.original_exception = original


# litellm's ExceptionCheckers (1.105.0), the parts the two wires reach.
_CONTEXT_WINDOW = ("exceed context limit", "this model's maximum context length is",
                   "string too long. expected a string with maximum length",
                   "model's maximum context limit", "is longer than the model's context length",
                   "input tokens exceed the configured limit",
                   "`inputs` tokens + `max_new_tokens` must be",
                   "exceeds the available context size",
                   "exceeds the maximum number of tokens allowed")
_CONTENT_POLICY = ("request was rejected as a result of the safety system",)
_OPENAI_STATUS = {400: BadRequestError, 401: AuthenticationError, 404: NotFoundError,
                  408: Timeout, 422: BadRequestError, 429: RateLimitError,
                  500: InternalServerError, 502: BadGatewayError,
                  503: ServiceUnavailableError, 504: Timeout}
_ANTHROPIC_STATUS = {401: AuthenticationError, 403: PermissionDeniedError,
                     400: BadRequestError, 413: BadRequestError, 404: NotFoundError,
                     408: Timeout, 429: RateLimitError, 500: InternalServerError,
                     529: InternalServerError, 502: BadGatewayError,
                     503: ServiceUnavailableError, 504: Timeout}


def _rate_limit_text(text: str, status: int) -> bool:
    if re.search(r"\b429\b", text) and status == 429:
        return True
    lower = text.lower()
    return bool(re.search(r"rate[\s_\-]*limit", lower)) \
        or "service tier capacity exceeded" in lower


def context_window_text(text: str) -> bool:
    lower = text.lower()
    if "string_above_max_length" in lower:
        return False
    if "invalid 'user'" in lower and "string too long" in lower:
        return False
    if any(s in lower for s in _CONTEXT_WINDOW):
        return True
    if "current length is" in lower and "while limit is" in lower:
        return True
    return "maximum input length is" in lower and "tokens" in lower


def _any(*needles: str) -> Callable[[str], bool]:
    return lambda text: any(n in text for n in needles)


def _all(*needles: str) -> Callable[[str], bool]:
    return lambda text: all(n in text for n in needles)


# (test of the error text, class), in litellm's order, for each wire.
_ANTHROPIC_RULES: tuple[tuple[Callable[[str], bool], type[ProviderError]], ...] = (
    (lambda t: _any("prompt is too long", "prompt: length")(t) or context_window_text(t),
     ContextWindowExceededError),
    (_any("overloaded_error", "Overloaded"), InternalServerError),
    (_any("Invalid API Key"), AuthenticationError),
    (_any("content filtering policy"), ContentPolicyViolationError),
)
_OPENAI_RULES: tuple[tuple[Callable[[str], bool], type[ProviderError]], ...] = (
    (context_window_text, ContextWindowExceededError),
    (_all("invalid_request_error", "model_not_found"), NotFoundError),
    (_any("A timeout occurred"), Timeout),
    (lambda t: _all("invalid_request_error", "content_policy_violation")(t)
     or _all("Invalid prompt", "violating our usage policy")(t)
     or _any(*_CONTENT_POLICY)(t.lower()), ContentPolicyViolationError),
    (_any("invalid_encrypted_content", "could not be verified"), BadRequestError),
    (lambda t: "invalid_request_error" in t and "Incorrect API key provided" not in t,
     BadRequestError),
    (_any("Web server is returning an unknown error",
          "The server had an error processing your request."), InternalServerError),
    (_any("Request too large"), RateLimitError),
)
_TIMEOUT_TEXT = _any("Request Timeout Error", "Request timed out",
                     "Timed out generating response", "The read operation timed out")


def error_class(wire: str, status: int, text: str) -> type[ProviderError]:
    """The class litellm 1.105.0 raises for this answer (`text`: the error as litellm reads
    it, "Error code: <status> - <body>")."""
    if _TIMEOUT_TEXT(text):
        return Timeout
    if wire == "anthropic":
        found = next((cls for test, cls in _ANTHROPIC_RULES if test(text)), None)
        return found or _ANTHROPIC_STATUS.get(status, BadRequestError if status < 500
                                              else APIError)
    if _rate_limit_text(text, status):
        return RateLimitError
    found = next((cls for test, cls in _OPENAI_RULES if test(text)), None)
    return found or _OPENAI_STATUS.get(status, APIError)


def provider_error(wire: str, status: int, body: Any, raw: str,
                   response: Any = None) -> ProviderError:
    """The error for an HTTP answer: `body` the parsed JSON (None if it was not JSON),
    `raw` its text. The message is openai-python's ("Error code: 429 - {...}", or the raw
    text of a body that is not JSON), which is what litellm reads."""
    if body is not None:
        text = f"Error code: {status} - {body}"
    else:
        text = raw.strip() or f"Error code: {status}"
    cls = error_class(wire, status, text)
    return cls(text, status, body, response)
