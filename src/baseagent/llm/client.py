"""The only module that talks to litellm: streaming calls, retries, usage and cost.

litellm is imported lazily (it costs seconds and, without LITELLM_LOCAL_MODEL_COST_MAP,
reaches for the network), silenced (it would print help text to stdout and corrupt the
JSONL), and called with num_retries=0 because the retry loop lives here. Beside it: what a
request carries (llm/request.py), how its stream is read (llm/stream_read.py), and which
failures are retried and how they are told (llm/retry.py).
"""
from __future__ import annotations

import atexit
import logging
import threading
import time
import warnings
from typing import Any, Callable

from baseagent.cancellation import NEVER, CancelToken
from baseagent.errors import ConfigError
from baseagent.scoped_env import scoped_environ
from baseagent.llm.errors import (ContextOverflowError, CostLimitError, ModelError,
                                  ModelInterrupted)
from baseagent.llm.limits import StreamLimits
from baseagent.llm.retry import (Verdict, RetrySchedule, classify, describe, failure_message,
                                 last_error, provider_message, retry_hint)
from baseagent.llm.per_message import PerMessage
from baseagent.llm.reasoning import dropped_reasoning_keys, kept_reasoning_keys, without_keys
from baseagent.llm.lenient_json import strict_form_hint
from baseagent.llm.request import litellm_params, second_body, wire_params
from baseagent.llm.stream_read import POLL_SECONDS, read_stream
from baseagent.llm.surrogates import scrub_surrogates
from baseagent.llm.text_tool_calls import parse_tool_calls
from baseagent.llm.types import (CallUsage, ModelTurn, ProgressFn, ToolCall, UsageTotals,
                                 no_progress)

NoticeFn = Callable[[str], None]

# Silence tolerated beyond stream_idle_timeout before the client gives up on an attempt by
# itself: httpx's per-read timeout normally fires first; this covers a transport that does
# not time out (or keeps the socket busy with bytes that never make a chunk).
IDLE_GRACE_SECONDS = 5.0
# How long a process ending mid-import waits for the background litellm import.
PRELOAD_EXIT_WAIT_SECONDS = 60.0

# Read by litellm at import time only (checked in 1.105.0): the price map comes from the
# bundled file, never the network; logging stays quiet; and LITELLM_MODE other than "DEV"
# stops litellm loading a `.env` file found above its install directory into os.environ
# (a venv inside a project would pick up that project's .env).
IMPORT_ENVIRONMENT = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
                      "LITELLM_MODE": "PRODUCTION"}

_import_lock = threading.Lock()
_litellm_module: Any = None


def load_litellm() -> Any:
    """Import and configure litellm once; safe to call from several threads."""
    global _litellm_module
    with _import_lock:
        if _litellm_module is None:
            # litellm trips pydantic deprecation warnings on every call: noise on stderr.
            warnings.filterwarnings("ignore", module=r"litellm(\..*)?$")
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"pydantic")
            with scoped_environ(IMPORT_ENVIRONMENT):
                import litellm

            litellm.suppress_debug_info = True
            litellm.set_verbose = False
            litellm.drop_params = True  # a param a provider lacks is dropped, not fatal
            # Per-chunk success logging rebuilds the whole response and prices it on a
            # thread pool after every chunk; we price usage ourselves, so it is pure cost
            # (measured: per-step overhead at 100 steps 89 -> 41 ms).
            litellm.disable_streaming_logging = True
            # litellm prices every streamed response as it opens by token-counting the whole
            # prompt (loading a ~40 MB encoding, and O(history) per step); usage comes from
            # the provider and core/context/tokens.py counts for budgeting, so its counter is off.
            litellm.disable_token_counter = True
            # litellm fails a stream after 100 identical chunks in a row ("The model is
            # repeating the same chunk"), which the retry policy would then resend as it
            # is; llm/repetition.py cuts a looping answer instead and the loop tells the
            # model, on both paths alike.
            litellm.REPEATED_STREAMING_CHUNK_LIMIT = 10**9
            from baseagent.llm import openai_fastpath

            openai_fastpath.install()
            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
                logging.getLogger(name).setLevel(logging.ERROR)
            _litellm_module = litellm
        return _litellm_module


def preload_in_background() -> threading.Thread:
    """Start importing litellm while the caller builds context (overlaps the slow import).

    A process that ends while the import is still running (an early error, a paused turn)
    waits for it at exit: a daemon thread stopped by the interpreter's shutdown in the
    middle of loading a compiled extension can abort the process ("FATAL: exception not
    rethrown", exit -6) instead of leaving with its own exit code.
    """
    thread = threading.Thread(target=_quiet_preload, name="litellm-preload", daemon=True)
    thread.start()
    atexit.register(thread.join, PRELOAD_EXIT_WAIT_SECONDS)
    return thread


def _quiet_preload() -> None:
    try:
        load_litellm()
    except Exception:  # noqa: BLE001 - the real call will import again and report properly
        pass


def check_model(model: str, api_base: str | None, api_key: str | None) -> None:
    """Fail fast, before any work, on an unknown provider or a missing API key."""
    litellm = load_litellm()
    try:
        _, provider, _, _ = litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception:  # noqa: BLE001 - litellm raises BadRequestError with a long help text
        raise ConfigError(
            f"unknown model or provider: {model!r} (use a litellm model string such as "
            "openai/gpt-4.1 or anthropic/claude-sonnet-4-5)") from None
    if api_key:
        return
    missing = missing_key_variables(litellm, model, provider, api_base)
    if missing is not None:
        names = ", ".join(missing) if missing else "the provider's API key variable"
        raise ConfigError(
            f"missing API key for {provider}: set {names} (or api_key in config)")


def missing_key_variables(litellm: Any, model: str, provider: str,
                          api_base: str | None) -> list[str] | None:
    """The variables to set when `model` needs a key that the environment does not hold
    (an empty list when the provider needs one but litellm does not name it); None when
    nothing is missing.

    Three sources, because litellm's `validate_environment` knows only the providers it
    was written for: it, then the JSON-configured OpenAI-compatible providers
    (`chutes`, `poe`, ... each with its `api_key_env`), then any provider whose default
    endpoint is a remote URL and for which litellm resolves no key at all (with a key it
    would have found one, as it does for local servers that need none).
    """
    check = litellm.validate_environment(model=model, api_base=api_base)
    missing = list(check.get("missing_keys") or [])
    if not check.get("keys_in_environment") and missing:
        return missing
    env_name = _json_provider_key_env(provider)
    if env_name is not None:
        from litellm.secret_managers.main import get_secret_str  # how litellm reads it

        return None if get_secret_str(env_name) else [env_name]
    if api_base:  # the user's own endpoint: a local server or proxy may need no key
        return None
    try:
        _, _, key, default_base = litellm.get_llm_provider(model=model)
    except Exception:  # noqa: BLE001 - already resolved once by the caller
        return None
    if key or not default_base or not _is_remote(default_base):
        return None
    return []


def _json_provider_key_env(provider: str) -> str | None:
    """`api_key_env` of a provider litellm configures from its providers.json, if any."""
    try:
        from litellm.llms.openai_like.json_loader import JSONProviderRegistry
    except ImportError:  # a litellm without JSON providers
        return None
    config = JSONProviderRegistry.get(provider) if JSONProviderRegistry.exists(provider) \
        else None
    return getattr(config, "api_key_env", None) or None


def _is_remote(url: str) -> bool:
    from urllib.parse import urlparse

    host = (urlparse(url).hostname or "").lower()
    return bool(host) and host not in ("localhost", "0.0.0.0", "::1") \
        and not host.startswith("127.")


def model_limits(model: str, context_window: int | None, max_tokens: int | None,
                 default_window: int, default_output: int) -> tuple[int, int]:
    """(context window, max output tokens): explicit settings, else litellm's model info."""
    window, output = context_window, max_tokens
    if window is None or output is None:
        try:
            info = load_litellm().get_model_info(model)
        except Exception:  # noqa: BLE001 - unmapped model: documented defaults
            info = {}
        window = window or info.get("max_input_tokens") or default_window
        output = output or info.get("max_output_tokens") or default_output
    return int(window), int(min(output, window // 4))


class ModelClient:
    """Calls the model with streaming and tools; owns retries, usage totals and cost limit."""

    def __init__(self, *, model: str, api_base: str | None = None, api_key: str | None = None,
                 temperature: float | None = None, max_tokens: int | None = None,
                 max_retries: int = 5, retry_base_delay: float = 0.2,
                 retry_max_delay: float = 30.0, retry_backoff_factor: float = 2.0,
                 request_timeout: float = 600.0,
                 stream_idle_timeout: float = 300.0, first_byte_timeout: float | None = None,
                 cost_limit: float | None = None,
                 extra_params: dict[str, Any] | None = None,
                 reasoning_effort: str | None = None,
                 tool_call_parser: str = "auto",
                 on_notice: NoticeFn = lambda _m: None,
                 cancelled: CancelToken = NEVER,
                 sleep: Callable[[float], None] = time.sleep,
                 route: Any = None, request_log: Any = None,
                 retry_schedule: RetrySchedule | None = None) -> None:
        """`route` (llm/route.Route): serve the calls over the direct path instead of
        litellm (None: litellm, as the model string says). `request_log`
        (llm/request_log.RequestLog): the verbose log of every request and response."""
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self.retry_backoff_factor = retry_backoff_factor
        # How long each retry waits (llm/retry.py): given, or Codex's exponential backoff
        # from the delays above.
        self.retry_schedule = retry_schedule or RetrySchedule(
            base=retry_base_delay, factor=retry_backoff_factor, cap=retry_max_delay)
        self.request_timeout = request_timeout
        self.stream_idle_timeout = stream_idle_timeout
        # The wait for an answer's first byte (a local server reading a long prompt says
        # nothing for minutes): None, the idle timeout, as between chunks
        self.first_byte_timeout = first_byte_timeout or stream_idle_timeout
        self.cost_limit = cost_limit
        self.extra_params = dict(extra_params or {})
        self.reasoning_effort = reasoning_effort
        self.tool_call_parser = tool_call_parser
        self._text_calls_noticed = False
        self.on_notice = on_notice
        self.cancelled = cancelled
        self._sleep = sleep
        self.totals = UsageTotals()
        self.route = route
        self.request_log = request_log
        # What one answer may hold (llm/limits.py), from the output cap
        self.limits = StreamLimits.for_output(max_tokens)
        self._direct: Any = None
        if route is not None:
            from baseagent.llm.direct import DirectTransport, wire_for

            self._direct = DirectTransport(
                wire_for(route, kept_reasoning_keys(model, route.api_base)), route,
                self.limits)
        # What litellm is handed: each history message without the reasoning keys its
        # provider does not take and without lone surrogates, worked out once per message.
        drop = dropped_reasoning_keys(model, api_base)
        self._wire_history = PerMessage(lambda m: scrub_surrogates(without_keys(m, drop)))

    def close(self) -> None:
        """Close the direct path's connection (litellm keeps its own)."""
        if self._direct is not None:
            self._direct.close()

    # -- public ------------------------------------------------------------------------------

    def bind_cancel(self, cancelled: CancelToken) -> None:
        """The run's cancellation (the composition root binds it): a call in flight is
        abandoned, a retry wait cut short, once it is set."""
        self.cancelled = cancelled

    def complete(self, messages: list[dict], tools: list[dict] | None = None,
                 on_progress: ProgressFn = no_progress,
                 estimated_input_tokens: int = 0, tool_choice: Any = None,
                 temperature: float | None = None) -> ModelTurn:
        """One model call with retries; usage is added to the totals only on success.
        `temperature`: this call's, instead of the client's (a sampled repair candidate).

        A retried call sends the same request again and its text replaces (never extends)
        what the broken attempt streamed: only the successful attempt reaches the history.
        """
        self._check_cost_limit(estimated_input_tokens)
        log = self.request_log
        if log is not None:
            log.request(model=self.model, api_base=self.api_base,
                        transport="direct" if self._direct is not None else "litellm",
                        messages=self._wire_history(messages), tools=tools,
                        params=self._wire_params(tools, tool_choice, temperature))
        attempt = 0
        waited = 0.0  # seconds this call has spent waiting to retry
        while True:
            if self.cancelled():
                raise ModelInterrupted("interrupted")
            try:
                turn = self._call_once(messages, tools, on_progress, estimated_input_tokens,
                                       tool_choice, temperature)
            except ModelError as exc:
                if log is not None:
                    log.error(str(exc), retrying=False)
                raise
            except Exception as exc:  # noqa: BLE001 - classified below; nothing escapes raw
                if self.cancelled():
                    raise ModelInterrupted("interrupted") from None
                verdict = classify(exc)
                if log is not None:
                    log.error(describe(exc), retrying=verdict is not Verdict.OVERFLOW
                              and verdict is not Verdict.FATAL
                              and attempt < self.max_retries)
                if verdict is Verdict.OVERFLOW:
                    raise ContextOverflowError(provider_message(exc)) from None
                if verdict is Verdict.FATAL:
                    raise ModelError(f"model call failed: {failure_message(exc)}") from None
                attempt += 1
                if attempt > self.max_retries:
                    raise ModelError(f"model call failed after {self.max_retries} retries: "
                                     f"{last_error(exc)}") from None
                schedule = self.retry_schedule
                delay = schedule.delay(attempt, retry_hint(exc))
                if not schedule.allows(waited, delay):
                    raise ModelError(
                        f"model call failed after {attempt - 1} retries: waiting "
                        f"{delay:.1f}s more would pass retry_max_total_wait "
                        f"({schedule.max_total_wait:g}s, {waited:.1f}s waited): "
                        f"{last_error(exc)}") from None
                waited += delay
                self.on_notice(f"Reconnecting... {attempt}/{self.max_retries} after "
                               f"{describe(exc)} (waiting {delay:.1f}s)")
                self._wait(delay)
                on_progress("", "")  # the retried stream starts its text afresh
                continue
            self.totals.add(turn.usage)
            turn = self._take_text_tool_calls(turn, tools)
            if log is not None:
                log.response(turn.assistant_message(), turn.finish_reason, turn.usage)
            return turn

    # -- internals ---------------------------------------------------------------------------

    def _take_text_tool_calls(self, turn: ModelTurn, tools: list[dict] | None) -> ModelTurn:
        """Calls written in the text become tool calls (setting tool_call_parser: `auto`
        when the turn has no native call, `text` always, `native` never); the first time
        in a run it happens, an `error` notice says so."""
        mode = self.tool_call_parser
        if mode == "native" or not tools or (turn.tool_calls and mode != "text"):
            return turn
        parsed = parse_tool_calls(turn.text, tools)
        if not parsed.calls:
            turn.malformed_calls = parsed.malformed
            return turn
        if not self._text_calls_noticed:
            self._text_calls_noticed = True
            self.on_notice(f"the model wrote {len(parsed.calls)} tool call(s) as text; running "
                           f"them as tool calls (tool_call_parser={mode}); further ones are "
                           "run without this notice")
        turn.tool_calls = turn.tool_calls + [ToolCall(
            id="", name=c.name, arguments=c.arguments,
            note=f"Note: {c.repair}. {strict_form_hint()}." if c.repair else "")
                                             for c in parsed.calls]
        turn.text = parsed.text
        return turn

    def _wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.cancelled():
                raise ModelInterrupted("interrupted")
            self._sleep(min(left, POLL_SECONDS))

    def _check_cost_limit(self, estimated_input_tokens: int) -> None:
        if self.cost_limit is None or not self.totals.cost_known:
            return
        next_cost = self._estimate_input_cost(estimated_input_tokens)
        if self.totals.cost_usd + next_cost > self.cost_limit:
            raise CostLimitError(
                f"cost limit reached: spent ${self.totals.cost_usd:.4f} of "
                f"${self.cost_limit:.4f}; the next call would cost about ${next_cost:.4f} more")

    def _estimate_input_cost(self, tokens: int) -> float:
        if tokens <= 0:
            return 0.0
        return self._price(tokens, 0, None) or 0.0

    def _price(self, prompt: int, completion: int, usage_obj: Any) -> float | None:
        """USD for a call, None when the model is unpriced: the direct route prices from
        litellm's map (llm/pricing.py), litellm's path asks litellm."""
        if self.route is not None:
            from baseagent.llm.pricing import price

            cached, written, reasoning = _cache_and_reasoning_tokens(usage_obj)
            return price(self.route.info, prompt, completion, cached, written, reasoning)
        try:
            p_cost, c_cost = load_litellm().cost_per_token(
                model=self.model, prompt_tokens=prompt, completion_tokens=completion,
                usage_object=usage_obj)
        except Exception:  # noqa: BLE001 - unpriced model: tokens still count, cost unknown
            return None
        return float(p_cost) + float(c_cost)

    def _wire_params(self, tools: list[dict] | None, tool_choice: Any = None,
                     temperature: float | None = None) -> dict[str, Any]:
        """The request's parameters as OpenAI names them (llm/request.py); `temperature`:
        the call's own, else the client's."""
        return wire_params(tools, tool_choice,
                           temperature=self.temperature if temperature is None else temperature,
                           max_tokens=self.max_tokens, reasoning_effort=self.reasoning_effort,
                           extra_params=self.extra_params)

    def _request_params(self, messages: list[dict], tools: list[dict] | None,
                        tool_choice: Any = None,
                        temperature: float | None = None) -> dict[str, Any]:
        """litellm.completion's keyword arguments (llm/request.py)."""
        return litellm_params(self.model, self._wire_history(messages), tools,
                              api_base=self.api_base, api_key=self._api_key,
                              timeout=self._transport_timeout(),
                              wire=self._wire_params(tools, tool_choice, temperature))

    def _opener(self, messages: list[dict], tools: list[dict] | None, tool_choice: Any,
                temperature: float | None = None) -> tuple[Callable[[], Any], Callable[[], None] | None]:
        """What opens this attempt's stream (the direct transport when the run has a route
        and the wire can build this request, else litellm), and what gives the attempt up
        from another thread (the direct path's: its socket is shut), if anything."""
        if self._direct is not None:
            from baseagent.llm.direct import Attempt
            from baseagent.llm.wire_openai import Unsupported

            params = self._wire_params(tools, tool_choice, temperature)
            timeout = float(params.pop("timeout", self._transport_timeout()))
            try:
                body = self._direct.wire.body(messages, params, tools)
            except Unsupported:
                pass  # this one request goes through litellm
            else:
                attempt = Attempt()
                wire = self._direct.wire
                return (lambda: self._direct.open(body, timeout, lambda exc: second_body(
                    wire, exc, messages, params, tools), attempt), attempt.abort)
        litellm = load_litellm()
        params = self._request_params(messages, tools, tool_choice, temperature)
        return lambda: _unlogged(litellm, litellm.completion(**params)), None

    def _transport_timeout(self) -> float:
        """The transport's per-read timeout: the longer of the two silences allowed (a read
        cannot tell the first byte from the next); the idle clock in `read_stream` ends a
        stall mid-stream sooner when the first-byte wait is the longer."""
        return max(self.stream_idle_timeout, self.first_byte_timeout)

    def _call_once(self, messages: list[dict], tools: list[dict] | None,
                   on_progress: ProgressFn, estimated_input_tokens: int = 0,
                   tool_choice: Any = None, temperature: float | None = None) -> ModelTurn:
        """One streamed attempt (llm/stream_read.py reads it), priced."""
        streamed = read_stream(
            *self._opener(messages, tools, tool_choice, temperature), cancelled=self.cancelled,
            request_timeout=self.request_timeout,
            # Before the first chunk the server may still be reading the prompt: its own bound
            first_limit=self.first_byte_timeout + IDLE_GRACE_SECONDS,
            idle_limit=self.stream_idle_timeout + IDLE_GRACE_SECONDS,
            reply_limit=self.limits.reply, on_progress=on_progress)
        return ModelTurn(text=streamed.text, reasoning=streamed.reasoning,
                         tool_calls=streamed.tool_calls, finish_reason=streamed.finish_reason,
                         usage=self._usage(streamed.usage, estimated_input_tokens),
                         thinking_blocks=streamed.thinking_blocks,
                         reasoning_details=streamed.reasoning_details)

    def _usage(self, usage_obj: Any, estimated_input_tokens: int = 0) -> CallUsage:
        """The provider's usage, priced. A provider that reports no prompt tokens (litellm's
        own counter is off, so it fills in 0) is charged our estimate instead, so totals and
        --cost-limit still move."""
        prompt = int(getattr(usage_obj, "prompt_tokens", 0) or 0) if usage_obj else 0
        completion = int(getattr(usage_obj, "completion_tokens", 0) or 0) if usage_obj else 0
        cached, written, reasoning = _cache_and_reasoning_tokens(usage_obj)
        reported = prompt > 0
        if not reported:
            prompt = max(0, estimated_input_tokens)
            if usage_obj is None and not prompt:
                return CallUsage(cost_usd=None)
        cost = self._price(prompt, completion, usage_obj if reported else None)
        return CallUsage(input_tokens=prompt, cached_input_tokens=cached,
                         output_tokens=completion, cost_usd=cost,
                         cache_write_input_tokens=written,
                         reasoning_output_tokens=min(reasoning, completion))


# litellm's lists of callbacks: while all are empty nothing listens to its logging.
_LITELLM_CALLBACKS = ("callbacks", "success_callback", "_async_success_callback",
                      "failure_callback", "_async_failure_callback", "input_callback",
                      "service_callback")


def _unlogged(litellm: Any, stream: Any) -> Any:
    """The stream, with litellm's success logging marked done when nothing listens.

    At the end of every stream litellm builds a standard logging payload on its thread pool
    (copies of the response, every message walked to truncate base64, a price), whatever is
    registered to receive it. We register nothing; when the process has no litellm callback
    at all (a program of yours that registers one keeps its logging), the call's logging
    object is told it has already logged, which is litellm's own guard against logging
    twice, so that work is skipped."""
    if any(getattr(litellm, name, None) for name in _LITELLM_CALLBACKS):
        return stream
    details = getattr(getattr(stream, "logging_obj", None), "model_call_details", None)
    if isinstance(details, dict):
        details["has_logged_sync_success"] = True
        details["has_logged_async_success"] = True
    return stream


def _cache_and_reasoning_tokens(usage_obj: Any) -> tuple[int, int, int]:
    """(cache reads, cache writes, reasoning tokens) from a litellm Usage, wherever the
    provider's transform put them: prompt_tokens_details.cached_tokens /
    cache_creation_tokens (OpenAI style, and litellm's Anthropic mapping), Anthropic's own
    cache_read_input_tokens / cache_creation_input_tokens, and
    completion_tokens_details.reasoning_tokens."""
    if usage_obj is None:
        return 0, 0, 0

    def number(obj: Any, name: str) -> int:
        return int(getattr(obj, name, 0) or 0) if obj is not None else 0

    prompt_details = getattr(usage_obj, "prompt_tokens_details", None)
    completion_details = getattr(usage_obj, "completion_tokens_details", None)
    cached = (number(prompt_details, "cached_tokens")
              or number(usage_obj, "cache_read_input_tokens"))
    written = (number(prompt_details, "cache_creation_tokens")
               or number(usage_obj, "cache_creation_input_tokens"))
    return cached, written, number(completion_details, "reasoning_tokens")
