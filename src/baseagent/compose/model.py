"""The composition root's model parts: the route (direct path or litellm), the client with its
retry and limits, compaction over it, the prompt profile and the run's redactor."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable

from baseagent.config.settings import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS, AgentConfig
from baseagent.compose.checks import check_model, preflight

if TYPE_CHECKING:
    from baseagent.records.recorder import SessionRecorder
    from baseagent.llm.route import Route
    from baseagent.llm.types import ModelClientProtocol
    from baseagent.output.emitter import Emitter
    from baseagent.output.redact import Redactor
    from baseagent.prompts.profiles import PromptProfile
    from baseagent.tools.registry import ToolRegistry


def run_redactor(settings: AgentConfig, env: Mapping[str, str]) -> Redactor:
    """The run's secrets, known before its tool sources are read: credential-named
    variables of `env` and the configured API key (prepare() adds the sources' own)."""
    from baseagent.output.redact import Redactor

    return Redactor.from_environment(env, settings.env_strip, [settings.api_key])


def model_route(settings: AgentConfig, env: Mapping[str, str],
                thread_id: str | None = None) -> Route | None:
    """The direct path for this run's model calls, if it serves them (llm/route.py): the
    key and endpoint come from the settings, else the provider's usual variables in `env`."""
    from baseagent import __version__
    from baseagent.core.context.caching import prompt_cache_params
    from baseagent.llm.route import choose as choose_route

    return choose_route(settings.model, api_base=settings.api_base,
                        api_key=settings.request_api_key(), env=env,
                        extra_params=prompt_cache_params(settings.model, settings.api_base,
                                                         thread_id or "x"),
                        transport=settings.model_transport,
                        user_agent=f"baseagent/{__version__}",
                        temperature=settings.temperature,
                        reasoning_effort=settings.reasoning_effort)


def profile_of(settings: AgentConfig) -> PromptProfile:
    """The run's prompt profile (prompts/profiles.py): the setting, or, on auto, compact for
    a model served on this machine."""
    from baseagent.prompts.profiles import choose

    return choose(settings.prompt_profile, settings.model, settings.oss)


def model_vision(settings: AgentConfig) -> bool | None:
    """Whether the run's model takes images (litellm's map: llm/model_map.py); None when
    the map does not know it."""
    from baseagent.llm.model_map import supports_vision

    return supports_vision(settings.model)


def limits(settings: AgentConfig, litellm_limits: bool,
           route: Route | None = None) -> tuple[int, int]:
    """(context window, output cap) of the run's model: the settings, else what litellm
    knows of the model (`litellm_limits`; its map, read without litellm on the direct
    `route`), else the documented defaults."""
    if litellm_limits and route is not None:
        return route.limits(settings.context_window, settings.max_tokens,
                            DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS)
    if litellm_limits:
        from baseagent.llm.client import model_limits

        return model_limits(settings.model, settings.context_window, settings.max_tokens,
                            DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS)
    window = settings.context_window or DEFAULT_CONTEXT_WINDOW
    return window, min(settings.max_tokens or DEFAULT_MAX_OUTPUT_TOKENS, window // 4)


def model_client_for(settings: AgentConfig, env: Mapping[str, str]) -> ModelClientProtocol:
    """A model client for one call outside a thread (the toolset orchestrator's split): the
    model string and key checked as a run checks them, the same transports."""
    from baseagent.core.ids import new_thread_id

    preflight(settings, env)
    thread_id = new_thread_id()
    route = model_route(settings, env, thread_id)
    check_model(settings, route)
    return new_model_client(settings, thread_id, lambda _message: None,
                         settings.max_tokens or limits(settings, True, route)[1], route)


def new_model_client(settings: AgentConfig, thread_id: str, notice: Callable[[str], None],
                  max_tokens: int, route: Route | None = None,
                  redact: Callable[[Any], Any] | None = None) -> ModelClientProtocol:
    """The model client (litellm, or the direct path `route`). Every request carries
    `max_tokens`, the run's output cap: a model stuck in a loop stops there instead of
    writing until the task's timeout. `verbose` gives it the request log, redacted with
    `redact` (the run's Redactor)."""
    from baseagent.core.context.caching import prompt_cache_params
    from baseagent.llm.client import ModelClient

    request_log = None
    if settings.verbose:
        from baseagent.llm.request_log import RequestLog

        request_log = RequestLog(redact or (lambda value: value), thread_id)

    return ModelClient(
        model=settings.model, api_base=settings.api_base, api_key=settings.request_api_key(),
        temperature=settings.temperature, max_tokens=max_tokens,
        max_retries=settings.max_retries, retry_base_delay=settings.retry_base_delay,
        retry_max_delay=settings.retry_max_delay,
        retry_backoff_factor=settings.retry_backoff_factor,
        request_timeout=settings.request_timeout,
        stream_idle_timeout=settings.stream_idle_timeout,
        first_byte_timeout=first_byte_timeout(settings), cost_limit=settings.cost_limit,
        on_notice=notice,
        reasoning_effort=settings.reasoning_effort, tool_call_parser=settings.tool_call_parser,
        extra_params=prompt_cache_params(settings.model, settings.api_base, thread_id),
        route=route, request_log=request_log, retry_schedule=retry_schedule(settings),
    )


def first_byte_timeout(settings: AgentConfig) -> float:
    """How long a call waits for its answer's first byte: the setting, else on a local
    server (--oss, an api_base on this machine, which may read a long prompt for minutes
    on a slow CPU) the whole request's timeout, and elsewhere the idle timeout (a hosted
    provider silent that long has stalled)."""
    from baseagent.llm.route import on_this_machine

    if settings.first_byte_timeout is not None:
        return settings.first_byte_timeout
    if settings.oss or on_this_machine(settings.api_base):
        return settings.request_timeout
    return settings.stream_idle_timeout


def retry_schedule(settings: AgentConfig) -> Any:
    """The settings' retry schedule (llm/retry.py RetrySchedule)."""
    from baseagent.llm.retry import RetrySchedule

    return RetrySchedule(kind=settings.retry_schedule, base=settings.retry_base_delay,
                         factor=settings.retry_backoff_factor, cap=settings.retry_max_delay,
                         step=settings.retry_linear_delay,
                         max_total_wait=settings.retry_max_total_wait)


def make_compactor(settings: AgentConfig, client: ModelClientProtocol, registry: ToolRegistry,
               emitter: Emitter, session: SessionRecorder | None, litellm_limits: bool,
               route: Route | None = None) -> Any:
    """Compaction and cache markers for this model (core/context/compaction.py)."""
    from baseagent.core.context.caching import wants_cache_markers
    from baseagent.core.context.compaction import Budget, Compactor
    from baseagent.core.context.tokens import TokenCounter

    window, max_output = limits(settings, litellm_limits, route)
    budget = Budget(window=window, max_output=max_output,
                    threshold=settings.compaction_threshold,
                    protect=settings.prune_protect_tokens, minimum=settings.prune_minimum_tokens)
    return Compactor(
        client=client, counter=TokenCounter(settings.model), budget=budget,
        tools=registry.specs(), cache_markers=wants_cache_markers(settings.model,
                                                                  settings.cache_markers),
        notice=emitter.notice,
        on_rewrite=session.history if session is not None else None)
