"""The composition root: Settings in, the parts of one thread out, built in one place.

Every way into the agent (the library's Agent, and through it the CLI, `exec`, batch
workers, the benchmarks and the tests) builds its run here, so a setting means the same
thing everywhere and nothing below reads argv, the environment or module-global state:
what a run needs (the child environment, the secrets to redact, the cancellation flag) is
handed in.

Building is in two steps because the first one must be cheap: `prepare()` runs before
litellm is imported (settings checks, tool registry, the opening history), `connect()`
after it (model checks, client, compaction, session record, the loop).
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from baseagent.config.defaults import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS, Settings
from baseagent.core.ids import new_thread_id
from baseagent.core.loop import Loop
from baseagent.core.records import LoadedSession
from baseagent.core.session import SessionRecorder
from baseagent.credentials import child_env
from baseagent.errors import ConfigError, InputError
from baseagent.llm.types import ModelClientProtocol, UsageTotals
from baseagent.output.emitter import Emitter
from baseagent.output.redact import Redactor
from baseagent.tools.base import ToolContext
from baseagent.tools.external import ExternalTool, is_external
from baseagent.tools.procs import ProcessTracker
from baseagent.tools.registry import ToolRegistry, builtin_tools
from baseagent.tools.tool import Tool


@dataclass
class Prepared:
    """What exists before the model is reachable: enough to show a header and build the
    first request, none of it slow."""

    settings: Settings
    thread_id: str
    resumed: LoadedSession | None
    registry: ToolRegistry
    history: list[dict[str, Any]]
    redactor: Redactor
    child_env: dict[str, str]
    shell: str


@dataclass
class Connected:
    """A thread ready to run turns."""

    client: ModelClientProtocol
    tool_context: ToolContext
    session: SessionRecorder | None
    loop: Loop


def prepare(settings: Settings, *, env: Mapping[str, str],
            resume: LoadedSession | None = None, thread_id: str | None = None,
            external_tools: Sequence[ExternalTool] = ()) -> Prepared:
    """Check what can be checked without the model; cheap (no litellm, no subprocess).

    `thread_id` names a new thread (an entry point that showed it before building the
    run); a resumed thread keeps its own. `env` is the environment the run was started in
    (the entry point's to read): commands
    get it minus its secrets, and the values of those secrets are redacted everywhere.
    `external_tools` are the caller's tools (tools/external.py): declared to the model
    after the built-in ones, run by the caller.
    """
    if not settings.cwd.is_dir():
        raise ConfigError(f"working directory does not exist: {settings.cwd}")
    return Prepared(
        settings=settings,
        thread_id=resume.thread_id if resume is not None else thread_id or new_thread_id(),
        resumed=resume, registry=_registry(settings, external_tools),
        history=list(resume.history) if resume is not None else [],
        redactor=Redactor.from_environment(env, settings.env_strip, [settings.api_key]),
        child_env=child_env(env, settings.env_strip), shell=env.get("SHELL") or "bash")


def _registry(settings: Settings, external_tools: Sequence[ExternalTool]) -> ToolRegistry:
    """The built-in tools, then `delegate` when enabled, then the caller's tools."""
    tools: list[Tool] = builtin_tools()
    if settings.delegate:
        from baseagent.core.delegation import delegate_tool

        unknown = sorted(set(settings.delegate_tools) - {t.name for t in tools})
        if unknown:
            raise ConfigError(f"delegate_tools: unknown tool(s) {', '.join(unknown)}")
        tools.append(delegate_tool())
    tools.extend(external_tools)
    try:
        return ToolRegistry(tools)
    except ValueError as exc:  # an external tool named like a built-in one
        raise InputError(f"external tools: {exc}") from None


def open_history(prepared: Prepared) -> None:
    """A new thread's opening messages, taken when the first turn starts."""
    if not prepared.history:
        prepared.history.extend(opening_messages(prepared.settings.cwd, prepared.shell))


def opening_messages(cwd: Path, shell: str) -> list[dict[str, Any]]:
    """The fixed system prompt and the environment context (git status, a listing,
    AGENTS.md)."""
    from baseagent.prompts.context import environment_context
    from baseagent.prompts.system import SYSTEM_PROMPT

    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": environment_context(cwd, shell)}]


def preflight(settings: Settings, env: Mapping[str, str]) -> None:
    """What is wrong with the model string or its key that can be known without litellm:
    a ConfigError at once, before the slow import starts (llm/preflight.py)."""
    from baseagent.llm.preflight import preflight as check

    problem = check(settings.model, settings.api_key, env)
    if problem is not None:
        raise ConfigError(problem)


def check_model(settings: Settings) -> None:
    """Unknown provider or missing API key: a ConfigError before anything runs (imports
    litellm)."""
    from baseagent.llm import client as llm
    from baseagent.llm.errors import ConfigurationError

    try:
        llm.check_model(settings.model, settings.api_base, settings.api_key)
    except ConfigurationError as exc:
        raise ConfigError(str(exc)) from None


def connect(prepared: Prepared, *, emitter: Emitter, processes: ProcessTracker,
            cancelled: Callable[[], bool], cancel_reason: Callable[[], str],
            model_client: ModelClientProtocol | None = None) -> Connected:
    """Build the client, tools, compaction, session record and loop of the thread.

    `model_client` replaces the litellm client (an in-process deterministic model in
    tests); then litellm is never imported.
    """
    settings = prepared.settings
    if model_client is not None:
        client = model_client
        bind = getattr(client, "bind_cancel", None)  # an injected client may honour cancel()
        if callable(bind):
            bind(cancelled)
    else:
        client = _model_client(settings, prepared.thread_id, emitter.notice, cancelled)
    if prepared.resumed is not None:
        client.totals = dataclasses.replace(prepared.resumed.usage)  # usage and cost so far
    litellm_limits = model_client is None
    tool_context = ToolContext(
        cwd=settings.cwd, env=prepared.child_env, sandbox=settings.sandbox,
        sandbox_network=settings.sandbox_network,
        shell_timeout_ms=settings.shell_timeout_ms, cancelled=cancelled,
        writable_roots=list(settings.writable_roots), processes=processes,
        grep_backend=settings.grep_backend, grep_timeout_s=settings.grep_timeout_s,
        thread_id=prepared.thread_id,
        delegate=_delegation(prepared, client, litellm_limits) if settings.delegate else None)
    session = open_record(prepared, client) if settings.record_session else None
    if session is not None:
        emitter.add_listener(session)
    context = _compactor(settings, client, prepared.registry, emitter, session,
                         litellm_limits=litellm_limits)
    loop = Loop(client=client, registry=prepared.registry, emitter=emitter,
                tool_context=tool_context, history=prepared.history,
                max_iterations=settings.max_iterations, verify=settings.verify,
                session=session, context=context, cancelled=cancelled,
                cancel_reason=cancel_reason, thread_id=prepared.thread_id,
                paused=prepared.resumed.paused if prepared.resumed is not None else None)
    return Connected(client=client, tool_context=tool_context, session=session, loop=loop)


def _delegation(prepared: Prepared, client: ModelClientProtocol, litellm_limits: bool) -> Any:
    """The delegate tool's runner: sub-agents composed by child_loop from this thread's
    parts; they may get any of the thread's own tools but `delegate` and the caller's."""
    from baseagent.core.delegation import NAME, Delegation

    settings = prepared.settings
    build = functools.partial(child_loop, settings, shell=prepared.shell,
                              litellm_limits=litellm_limits)
    tools = [t for t in prepared.registry.tools() if t.name != NAME and not is_external(t)]
    return Delegation(build=build, client=client, tools=tools,
                      default_tools=settings.delegate_tools,
                      max_iterations=settings.delegate_max_iterations,
                      cost_limit=settings.delegate_cost_limit, redact=prepared.redactor)


def child_loop(settings: Settings, *, client: ModelClientProtocol, tools: Sequence[Tool],
               emitter: Emitter, tool_context: ToolContext, max_iterations: int, shell: str,
               litellm_limits: bool) -> Loop:
    """A sub-agent's loop (core/delegation.py): a fresh history and its own tools and
    iteration limit; the parent's client, workspace, sandbox and cancellation (through
    `tool_context`), with compaction for the same model. No verification round (the parent
    judges the answer) and no session record of its own (its items are in the parent's)."""
    registry = ToolRegistry(tools)
    return Loop(client=client, registry=registry, emitter=emitter, tool_context=tool_context,
                history=opening_messages(tool_context.cwd, shell),
                max_iterations=max_iterations, verify=False,
                context=_compactor(settings, client, registry, emitter, None, litellm_limits),
                cancelled=tool_context.cancelled,
                cancel_reason=lambda: "the delegating run was interrupted",
                thread_id=tool_context.thread_id)


def open_record(prepared: Prepared, client: ModelClientProtocol) -> SessionRecorder:
    """The thread's session record; a resumed thread appends to the record it came from."""
    from baseagent import __version__

    settings = prepared.settings
    path = prepared.resumed.path if prepared.resumed is not None \
        else session_path(settings, prepared.thread_id)
    try:
        session = SessionRecorder(path, redact=prepared.redactor.data)
    except OSError as exc:
        raise ConfigError(f"cannot write the session record {path}: "
                          f"{exc.strerror or exc} (set session_dir, or --no-session)") from None
    session.meta(thread_id=prepared.thread_id, model=settings.model, api_base=settings.api_base,
                 cwd=str(settings.cwd),
                 resumed=prepared.resumed is not None, agent="baseagent", version=__version__,
                 tools=prepared.registry.specs())
    if prepared.resumed is None:
        for message in prepared.history:
            session.message(message)
    session.track_usage(lambda: client.totals)
    return session


def record_usage(session: SessionRecorder, totals: UsageTotals) -> None:
    """The cumulative usage record written at the end of every turn."""
    session.usage(**totals.as_record())


def _model_client(settings: Settings, thread_id: str, notice: Callable[[str], None],
                  cancelled: Callable[[], bool]) -> ModelClientProtocol:
    from baseagent.core.caching import prompt_cache_params
    from baseagent.llm.client import ModelClient

    return ModelClient(
        model=settings.model, api_base=settings.api_base, api_key=settings.api_key,
        temperature=settings.temperature, max_tokens=settings.max_tokens,
        max_retries=settings.max_retries, retry_base_delay=settings.retry_base_delay,
        retry_max_delay=settings.retry_max_delay,
        retry_backoff_factor=settings.retry_backoff_factor,
        request_timeout=settings.request_timeout,
        stream_idle_timeout=settings.stream_idle_timeout, cost_limit=settings.cost_limit,
        on_notice=notice, cancelled=cancelled,
        reasoning_effort=settings.reasoning_effort, tool_call_parser=settings.tool_call_parser,
        extra_params=prompt_cache_params(settings.model, settings.api_base, thread_id),
    )


def _compactor(settings: Settings, client: ModelClientProtocol, registry: ToolRegistry,
               emitter: Emitter, session: SessionRecorder | None, litellm_limits: bool) -> Any:
    """Compaction and cache markers for this model (core/compaction.py)."""
    from baseagent.core.caching import wants_cache_markers
    from baseagent.core.compaction import Budget, Compactor
    from baseagent.core.tokens import TokenCounter

    if litellm_limits:
        from baseagent.llm.client import model_limits

        window, max_output = model_limits(settings.model, settings.context_window,
                                          settings.max_tokens, DEFAULT_CONTEXT_WINDOW,
                                          DEFAULT_MAX_OUTPUT_TOKENS)
    else:
        window = settings.context_window or DEFAULT_CONTEXT_WINDOW
        max_output = min(settings.max_tokens or DEFAULT_MAX_OUTPUT_TOKENS, window // 4)
    budget = Budget(window=window, max_output=max_output,
                    threshold=settings.compaction_threshold,
                    protect=settings.prune_protect_tokens, minimum=settings.prune_minimum_tokens)
    return Compactor(
        client=client, counter=TokenCounter(settings.model), budget=budget,
        tools=registry.specs(), cache_markers=wants_cache_markers(settings.model,
                                                                  settings.cache_markers),
        notice=emitter.notice,
        on_rewrite=session.history if session is not None else None)


def session_path(settings: Settings, thread_id: str) -> Path:
    return settings.session_dir / f"{thread_id}.jsonl"
