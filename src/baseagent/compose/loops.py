"""The loops the composition root builds beside the thread's own: an attempt's (`--attempts`,
core/verification/attempts.py) and a sub-agent's (the delegate tool and the specialists,
core/delegation/), from the thread's parts."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from baseagent.cancellation import CancelToken
from baseagent.config.settings import AgentConfig
from baseagent.tools.approval import Approver
from baseagent.compose.checks import run_approvals
from baseagent.compose.model import limits, make_compactor, new_model_client, profile_of
from baseagent.compose.prompt import compose_specialist_prompt, opening_messages
from baseagent.compose.tools import builtin_tool_names, source_names, tool_settings

if TYPE_CHECKING:
    from baseagent.compose.builder import Prepared
    from baseagent.core.loop import Loop
    from baseagent.records.recorder import SessionRecorder
    from baseagent.llm.route import Route
    from baseagent.llm.types import ModelClientProtocol
    from baseagent.output.emitter import Emitter
    from baseagent.output.redact import Redactor
    from baseagent.tools.procs import ProcessTracker
    from baseagent.tools.context import ToolContext
    from baseagent.tools.tool import Tool


def attempts_loop(prepared: Prepared, inner: Loop, *, client: ModelClientProtocol, emitter: Emitter,
              session: SessionRecorder | None, cancelled: CancelToken,
              processes: ProcessTracker, approver: Approver | str | None,
              model_client: ModelClientProtocol | None, route: Route | None) -> Any:
    """The loop of a thread with `attempts` > 1 (core/verification/attempts.py): each attempt a Loop of
    its own over a copy of the workspace, built by `attempt_loop`."""
    from baseagent.core.verification.attempts import Attempts, runs_in_parallel

    settings = prepared.settings
    make = functools.partial(attempt_loop, prepared, cancelled=cancelled, processes=processes,
                             approver=approver, model_client=model_client, route=route)
    return Attempts(inner, count=settings.attempts, make=make, cwd=settings.cwd, client=client,
                    parallel=runs_in_parallel(settings.attempts_parallel, oss=settings.oss,
                                              api_base=settings.api_base,
                                              shared_client=model_client is not None),
                    emitter=emitter, session=session, env=prepared.child_env,
                    cancelled=cancelled, thread_id=prepared.thread_id,
                    test_timeout=settings.shell_timeout_ms / 1000,
                    sandbox=settings.sandbox, network=settings.sandbox_network)


def attempt_loop(prepared: Prepared, number: int, cwd: Path, listener: Any,
                 history: list[dict[str, Any]], *, cancelled: CancelToken,
                 processes: ProcessTracker, approver: Approver | str | None,
                 model_client: ModelClientProtocol | None, route: Route | None) \
        -> tuple[Loop, ModelClientProtocol, bool]:
    """One attempt's loop (core/verification/attempts.py): the thread's settings, tools and cancellation
    over the copy `cwd` of the workspace (its sandbox's writable root; attempts after the
    first at `attempts_temperature` when the run's is 0 or unset), `history` (the
    thread's, read in the copy), its own emitter (to `listener`) and client (a caller's
    model client is shared: then the attempts run one after another); no session record
    (its events reach the thread's) and no delegation. Returns (loop, client, shared)."""
    from baseagent.core.loop import Loop
    from baseagent.output.emitter import Emitter
    from baseagent.sandbox.policy import Policy
    from baseagent.tools.context import HistoryView, ToolContext

    update: dict[str, Any] = {"cwd": cwd, "attempts": 1}
    varied = prepared.settings.attempts_temperature
    if number > 1 and not prepared.settings.temperature and varied is not None:
        update["temperature"] = varied  # at 0 each attempt would repeat the first
    settings = prepared.settings.model_copy(update=update)
    emitter = Emitter([listener])
    litellm_limits = model_client is None
    if model_client is not None:
        client = model_client
    else:
        client = new_model_client(settings, prepared.thread_id, emitter.notice,
                               settings.max_tokens or limits(settings, True, route)[1],
                               route, redact=prepared.redactor.data)
        client.bind_cancel(cancelled)
    tool_context = ToolContext(
        cwd=cwd, env=prepared.child_env, sandbox=settings.sandbox,
        sandbox_network=settings.sandbox_network,
        shell_timeout_ms=settings.shell_timeout_ms, cancelled=cancelled,
        writable_roots=list(settings.writable_roots), processes=processes,
        grep_backend=settings.grep_backend, grep_timeout_s=settings.grep_timeout_s,
        thread_id=prepared.thread_id, delegate=None,
        sandbox_policy=Policy.build(settings.sandbox, cwd, settings.writable_roots,
                                    prepared.child_env, settings.sandbox_network),
        approvals=run_approvals(settings, approver, emitter),
        history=HistoryView(history), settings=tool_settings(settings))
    loop = Loop(client=client, registry=prepared.registry, emitter=emitter,
                tool_context=tool_context, history=history,
                max_iterations=settings.max_iterations, verify=settings.verify, session=None,
                compactor=make_compactor(settings, client, prepared.registry, emitter, None,
                                     litellm_limits, route),
                cancelled=cancelled, thread_id=prepared.thread_id,
                tool_choice=prepared.tool_choice, helps=helps_for(prepared, settings),
                all_tools_failed=settings.all_tools_failed)
    return loop, client, model_client is not None


def make_delegation(prepared: Prepared, client: ModelClientProtocol, litellm_limits: bool,
                route: Route | None = None, *, own_models: bool = True,
                cancelled: CancelToken | None = None,
                notice: Callable[[str], None] = lambda _text: None) -> Any:
    """The sub-agents' runner: the delegate tool's children and the named specialists',
    composed by child_loop from this thread's parts. The delegate tool's may get any of the
    thread's own tools but the delegating ones and the caller's; a specialist gets the
    tools its configuration names (core/delegation/specialists.py). `own_models`: a specialist with a
    model of its own gets its own client (not when the caller injected the run's client)."""
    from baseagent.core.delegation.delegate import NAME, Delegation
    from baseagent.core.delegation.specialists import NAME as SPECIALIST_TOOL
    from baseagent.tools.external import is_external

    settings = prepared.settings
    build = functools.partial(child_loop, settings=settings, shell=prepared.shell,
                              litellm_limits=litellm_limits, route=route)
    tools = [t for t in prepared.registry.tools()
             if t.name not in (NAME, SPECIALIST_TOOL) and not is_external(t)]
    return Delegation(build=build, client=client, tools=tools,
                      default_tools=settings.delegate_tools,
                      max_iterations=settings.delegate_max_iterations,
                      cost_limit=settings.delegate_cost_limit,
                      new_emitter=_emitter_maker(prepared.redactor),
                      specialists=_specialist_runs(prepared, client, own_models, cancelled,
                                                   notice))


def _emitter_maker(redactor: Redactor | None) -> Callable[[list[Any], str], Emitter]:
    """A sub-agent's emitter: to its listeners, item ids under `prefix`, redacted as the
    run's events are."""
    from baseagent.output.emitter import Emitter

    return lambda listeners, prefix: Emitter(listeners, redact=redactor, item_prefix=prefix)


def _specialist_runs(prepared: Prepared, client: ModelClientProtocol, own_models: bool,
                     cancelled: CancelToken | None,
                     notice: Callable[[str], None]) -> dict[str, Any]:
    """Each specialist's tools (resolved now that the sources are up), limit, system
    prompt, and its own model's client maker when it has one."""
    from baseagent.core.delegation.delegate import SharedTotals, SpecialistRun
    from baseagent.core.delegation.specialists import resolve_tools
    from baseagent.prompts.system import SPECIALIST_ROLE, SYSTEM_PROMPT

    settings = prepared.settings
    builtins = [t for t in prepared.pool if t.name in builtin_tool_names()]
    caller = [t for t in prepared.pool if t.name not in builtin_tool_names()]
    runs: dict[str, Any] = {}
    for name, spec in settings.specialists.items():
        refs = spec.tools if spec.tools is not None else settings.delegate_tools
        role = SPECIALIST_ROLE.format(name=name, description=spec.description)
        system = compose_specialist_prompt(SYSTEM_PROMPT, role, spec.prompt)
        run = SpecialistRun(
            name=name, system=system,
            tools=resolve_tools(refs, builtins=builtins, caller=caller,
                                source_tools=prepared.source_tools,
                                sources=source_names(settings)),
            max_iterations=spec.max_iterations or settings.delegate_max_iterations)
        own = prepared.specialist_models.get(name)
        if own is not None and own_models:
            config, own_route = own
            run.loop_options = {"settings": config, "route": own_route}

            def make(config: AgentConfig = config, own_route: Route | None = own_route) \
                    -> ModelClientProtocol:
                inner = new_model_client(config, prepared.thread_id, notice,
                                      config.max_tokens or limits(config, True, own_route)[1],
                                      own_route)
                if cancelled is not None:
                    inner.bind_cancel(cancelled)
                return SharedTotals(inner, client, settings.cost_limit)

            run.client = make
        runs[name] = run
    return runs


def child_loop(settings: AgentConfig, *, client: ModelClientProtocol, tools: Sequence[Tool],
               emitter: Emitter, tool_context: ToolContext, max_iterations: int, shell: str,
               litellm_limits: bool, route: Route | None = None,
               system: str | None = None) -> Loop:
    """A sub-agent's loop (core/delegation/delegate.py): a fresh history and its own tools and
    iteration limit; the parent's client, workspace, sandbox and cancellation (through
    `tool_context`), with compaction for the same model. No verification round (the parent
    judges the answer) and no session record of its own (its items are in the parent's).
    `system`: a specialist's system prompt (default: the built-in one); `settings` and
    `route` are a specialist's own when it has its own model."""
    from baseagent.core.loop import Loop
    from baseagent.helps import for_profile
    from baseagent.tools.registry import ToolRegistry

    from baseagent.tools.context import HistoryView

    registry = ToolRegistry(tools, shape=profile_of(settings).shape)
    history = opening_messages(tool_context.cwd, shell, system, env=tool_context.env)
    tool_context = dataclasses.replace(tool_context, history=HistoryView(history))
    return Loop(client=client, registry=registry, emitter=emitter, tool_context=tool_context,
                history=history,
                max_iterations=max_iterations, verify=False,
                compactor=make_compactor(settings, client, registry, emitter, None, litellm_limits,
                                     route),
                cancelled=tool_context.cancelled.with_reason(
                    "the delegating run was interrupted"),
                thread_id=tool_context.thread_id, helps=for_profile())


def helps_for(prepared: Any, settings: AgentConfig) -> list[Any]:
    """The turn's helps (helps.for_profile) for the prompt profile; the probe's search
    candidates sample at `repair_temperature` when the run's own temperature is 0 or unset
    (else at the run's)."""
    from baseagent.helps import for_profile

    profile = prepared.profile
    varied = settings.repair_temperature
    return for_profile(profile.prose_code, profile.show_named_files, profile.probe,
                       shell_timeout_ms=settings.shell_timeout_ms,
                       repair_candidates=settings.repair_candidates,
                       repair_temperature=varied if varied and not settings.temperature
                       else None,
                       localise=profile.localise)
