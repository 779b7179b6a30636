"""The composition root: an AgentConfig (the CLI's Settings are one) in, the parts of one
thread out, built in one place.

Every way into the agent (the library's Agent, and through it the CLI, `exec`, batch
workers, the benchmarks and the tests) builds its run here, so a setting means the same
thing everywhere and nothing below reads argv, the environment or module-global state:
what a run needs (the child environment, the secrets to redact, the cancellation) is
handed in.

`RunBuilder` builds one run and owns the order of its steps, each done once:

1. `check_model_string()`: what is wrong with the model string or its key that can be
   known without litellm (a terminal's entry point calls it before drawing its header;
   `prepare()` calls it otherwise);
2. `prepare()`, cheap and before the model is reachable: the settings' checks, the tools,
   the secrets to redact; then it starts what is slow in the background (the tool sources,
   the litellm import);
3. `connect()`, with the model: the opening history, the model check, the tools settled,
   then client, compaction, session record and loop.

The functions of this package are those steps (checks.py, model.py, tools.py, prompt.py,
loops.py); only the builder strings them together. This module is
imported before a terminal's header is drawn, so its parts are imported where they are
used, not at the top.
"""
from __future__ import annotations

import dataclasses
import functools
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baseagent.cancellation import CancelToken
from baseagent.config.settings import AgentConfig
from baseagent.errors import ConfigError, InputError
from baseagent.tools.approval import Approver
from baseagent.compose.checks import (check_model, check_model_client, check_parts, check_platform,
                                      escalation_offered, preflight, run_approvals)
from baseagent.compose.loops import attempts_loop, helps_for, make_delegation
from baseagent.compose.model import (limits, make_compactor, model_route, model_vision,
                                     new_model_client, profile_of, run_redactor)
from baseagent.compose.prompt import opening_messages, system_prompt
from baseagent.compose.tools import (caller_names, check_named_toolsets, is_tool_choice_mode,
                                     select_tools, settle_tools, specialist_pool,
                                     specialist_settings, tool_settings, tool_sources)

if TYPE_CHECKING:
    import threading
    from baseagent.core.loop import Loop
    from baseagent.records.replay import LoadedSession
    from baseagent.records.recorder import SessionRecorder
    from baseagent.llm.route import Route
    from baseagent.llm.types import ModelClientProtocol, UsageTotals
    from baseagent.output.emitter import Emitter
    from baseagent.output.redact import Redactor
    from baseagent.prompts.profiles import PromptProfile
    from baseagent.storage import MessageStorage
    from baseagent.tools.external import ExternalTool
    from baseagent.tools.procs import ProcessTracker
    from baseagent.tools.registry import ToolRegistry
    from baseagent.tools.sources import ToolSources
    from baseagent.tools.context import ToolContext
    from baseagent.tools.tool import Tool


# How often a wait on the litellm import looks at the cancellation.
POLL_SECONDS = 0.05


def _no_sources() -> ToolSources:
    from baseagent.tools.sources import ToolSources

    return ToolSources()


def _full_profile() -> PromptProfile:
    from baseagent.prompts.profiles import choose

    return choose("full", "")


@dataclass
class Prepared:
    """What exists before the model is reachable: enough to show a header and build the
    first request, none of it slow."""

    settings: AgentConfig
    thread_id: str
    resumed: LoadedSession | None
    registry: ToolRegistry
    history: list[dict[str, Any]]
    redactor: Redactor
    child_env: dict[str, str]
    shell: str
    # The run's fixed tools (built-ins left by the toolsets, then the caller's), and the
    # long-lived sources (MCP servers, OpenAPI documents) whose tools follow once they are
    # up: `registry` holds the fixed ones until settle_tools() adds the rest.
    tools: list[Tool] = field(default_factory=list)
    sources: ToolSources = field(default_factory=_no_sources)
    system_prompt: str = ""
    tool_choice: str | None = None
    profile: PromptProfile = field(default_factory=_full_profile)
    # The direct path for the model's calls (llm/route.py); None: litellm serves them.
    route: Route | None = None
    # What specialists may be given (core/delegation/specialists.py): every built-in tool and the
    # caller's tools (`pool`), and the tool sources' tools once they are up
    # (`source_tools`); each specialist with a model of its own, its settings and route.
    pool: list[Tool] = field(default_factory=list)
    source_tools: list[Tool] = field(default_factory=list)
    specialist_models: dict[str, tuple[AgentConfig, Route | None]] = field(default_factory=dict)


@dataclass
class Connected:
    """A thread ready to run turns."""

    client: ModelClientProtocol
    tool_context: ToolContext
    session: SessionRecorder | None
    loop: Loop
    # One-line notices from starting the tool sources (a server that failed to start).
    notices: list[str] = field(default_factory=list)


class RunBuilder:
    """Builds one thread's run, owning the order of its steps; each check is done once.

    `settings` are resolved; `env` is the environment the run was started in (default:
    this process's, copied now). `model_client` replaces the litellm client (then the model
    string is not checked: no model is reached by name). `storage` is where the thread's
    record goes (storage/; default: the store the settings name, opened when the record is). `counts` says how many times each
    check and construction ran (`model_string`, `model`, `redactor`): once per run, which
    tests hold it to.
    """

    def __init__(self, settings: AgentConfig, *, env: Mapping[str, str] | None = None,
                 model_client: ModelClientProtocol | None = None,
                 approver: Approver | str | None = None, person_present: bool = False,
                 storage: MessageStorage | None = None, context_policy: Any = None,
                 tool_executor: Any = None, loop: Any = None) -> None:
        self.settings = settings
        self.storage = storage
        # The engine's parts a library caller replaces (core/parts.py), checked now.
        self.parts = check_parts(context_policy, tool_executor, loop)
        # A person reads the answers and can be asked (the interactive session): the
        # system prompt says so instead of "nobody will answer".
        self.person_present = person_present
        # Who answers when a command waits for approval (tools/approval.py): the entry's
        # (the terminal asks the person; a library caller passes a function); None: nobody.
        self.approver = approver
        self.env: dict[str, str] = dict(os.environ if env is None else env)
        if model_client is not None:
            check_model_client(model_client)  # when the agent is built, not at its turn
        self.model_client = model_client
        self.counts: Counter[str] = Counter()
        self.prepared: Prepared | None = None
        self._redactor: Redactor | None = None
        self._string_checked = False
        self._preload: threading.Thread | None = None
        self._model_checked = False

    @property
    def redactor(self) -> Redactor:
        """The run's redactor, made on first use (an entry point routes stderr through it
        before litellm is imported); prepare() adds the tool sources' secrets to it."""
        if self._redactor is None:
            self.counts["redactor"] += 1
            self._redactor = run_redactor(self.settings, self.env)
        return self._redactor

    def check_model_string(self) -> None:
        """ConfigError for a model string or key that cannot work, known without litellm
        (llm/preflight.py); done once per run, whoever asks first. Before it, the one
        check of the settings that needs no model either: a sandbox mode this platform
        cannot enforce (`check_platform`), refused however the model is reached."""
        if not self._string_checked:
            check_platform(self.settings)
        if self._string_checked or self.model_client is not None:
            return
        self.counts["model_string"] += 1
        preflight(self.settings, self.env)
        for name, config in specialist_settings(self.settings).items():
            try:
                preflight(config, self.env)
            except ConfigError as exc:
                raise ConfigError(f"specialists.{name}: {exc}") from None
        self._string_checked = True

    def prepare(self, *, resume: LoadedSession | None = None, thread_id: str | None = None,
                tools: Sequence[Any] = (),
                external_tools: Sequence[ExternalTool] = ()) -> Prepared:
        """The cheap half (no model): the model string checked (a typo is reported before
        the slow import), the run's parts made (see the module function `prepare`), then
        the tool sources started and litellm's import begun in the background, so both
        come up while the caller does whatever it does before the first turn. Once: a
        builder builds one run."""
        if self.prepared is not None:
            raise RuntimeError("this RunBuilder has built its run already")
        self.check_model_string()
        prepared = prepare(self.settings, env=self.env, resume=resume, thread_id=thread_id,
                           tools=tools, external_tools=external_tools,
                           redactor=self.redactor,
                           escalation=escalation_offered(self.settings, self.approver),
                           person_present=self.person_present)
        self.prepared = prepared
        start_sources(prepared)
        if self.model_client is None and prepared.route is None:
            from baseagent.llm.client import preload_in_background

            self._preload = preload_in_background()
        return prepared

    def connect(self, *, emitter: Emitter, processes: ProcessTracker,
                cancelled: CancelToken) -> Connected | None:
        """The half with the model, at the first turn: the opening history, the litellm
        import waited for, the model checked (once), the tool sources settled, then the
        client, compaction, record and loop (module function `connect`). None when the run
        is cancelled before the model is reachable (a later call starts again where this
        one stopped)."""
        prepared = self.prepared
        if prepared is None:
            raise RuntimeError("RunBuilder.connect() before prepare()")
        open_history(prepared)
        if self._preload is not None:
            while self._preload.is_alive():
                if cancelled():
                    return None
                self._preload.join(POLL_SECONDS)
        if cancelled():
            return None
        if not self._model_checked and self.model_client is None:
            self.counts["model"] += 1
            check_model(self.settings, prepared.route)
        self._model_checked = True
        # Waited for again by a call that follows a cancelled one: a source still starting
        # then may be up by now.
        notices = settle_tools(prepared, cancelled)
        if cancelled():
            return None
        return connect(prepared, emitter=emitter, processes=processes, cancelled=cancelled,
                       model_client=self.model_client, notices=notices,
                       approver=self.approver, storage=self.storage, parts=self.parts)


def prepare(settings: AgentConfig, *, env: Mapping[str, str],
            resume: LoadedSession | None = None, thread_id: str | None = None,
            tools: Sequence[Any] = (), external_tools: Sequence[ExternalTool] = (),
            redactor: Redactor | None = None, escalation: bool = False,
            person_present: bool = False) -> Prepared:
    """Check what can be checked without the model; cheap (no litellm, no subprocess).

    `thread_id` names a new thread (an entry point that showed it before building the
    run); a resumed thread keeps its own. `env` is the environment the run was started in
    (the entry point's to read): commands
    get it minus its secrets, and the values of those secrets are redacted everywhere.
    `tools` are the caller's own tools (Python functions or Tool objects) and
    `external_tools` the tools the caller runs (tools/external.py): both declared to the
    model after the built-in ones (and `delegate`, when enabled). `redactor` is the run's
    (RunBuilder's, already on stderr at a CLI run): the tool sources' secrets are added to
    it; without one, one is made here.
    """
    from baseagent.core.ids import new_thread_id
    from baseagent.credentials import child_env
    from baseagent.tools.registry import ToolRegistry

    if not settings.cwd.is_dir():
        what = "is not a directory" if settings.cwd.exists() else "does not exist"  # a file
        raise ConfigError(f"working directory {what}: {settings.cwd}")
    from baseagent.compose.toolset import gather

    profile = profile_of(settings)
    given = gather(tools)  # toolsets opened into their parts, providers apart
    fixed = select_tools(settings, given.fixed, profile, escalation=escalation,
                         builtins=given.builtins, vision=model_vision(settings))
    pool = specialist_pool(settings, given.fixed, escalation) if settings.specialists else []
    if settings.toolsets:
        check_named_toolsets(settings, caller_names(given.fixed))
    taken = {t.name for t in fixed}
    for tool in external_tools:  # a bad declaration is the caller's input, not a setting
        if tool.name in taken:
            raise InputError(f"external tools: two tools are named {tool.name!r}")
        taken.add(tool.name)
        fixed.append(tool)
    sources, secrets = tool_sources(settings, env, given)
    choice = settings.tool_choice
    if choice is not None and not is_tool_choice_mode(choice) and not sources \
            and choice not in {t.name for t in fixed}:
        raise ConfigError(f"tool_choice {choice!r} is not a tool of this run (tools: "
                          f"{', '.join(t.name for t in fixed) or 'none'})")
    if redactor is None:
        redactor = run_redactor(settings, env)
    redactor.add(secrets)
    return Prepared(
        settings=settings,
        thread_id=resume.thread_id if resume is not None else thread_id or new_thread_id(),
        resumed=resume, registry=ToolRegistry(fixed, shape=profile.shape),
        history=list(resume.history) if resume is not None else [],
        redactor=redactor,
        child_env=child_env(env, settings.env_strip), shell=env.get("SHELL") or "bash",
        tools=fixed, sources=sources, system_prompt=system_prompt(settings, fixed, profile,
                                                                 person_present),
        tool_choice=choice, profile=profile, route=model_route(settings, env, thread_id),
        pool=pool, specialist_models={
            name: (config, model_route(config, env, thread_id))
            for name, config in specialist_settings(settings).items()})


def start_sources(prepared: Prepared) -> None:
    """Start the tool sources in the background (MCP servers launch, documents load) so they
    come up while litellm imports."""
    prepared.sources.start()


def open_history(prepared: Prepared) -> None:
    """A new thread's opening messages: the system prompt (fixed for the thread) and the
    environment context (git status, a listing, AGENTS.md), taken when the first turn
    starts."""
    if not prepared.history:
        prepared.history.extend(opening_messages(prepared.settings.cwd, prepared.shell,
                                                 prepared.system_prompt, prepared.child_env))


def connect(prepared: Prepared, *, emitter: Emitter, processes: ProcessTracker,
            cancelled: CancelToken, model_client: ModelClientProtocol | None = None,
            notices: Sequence[str] = (), approver: Approver | str | None = None,
            storage: MessageStorage | None = None,
            parts: Mapping[str, Any] | None = None) -> Connected:
    """Build the client, tools, compaction, session record and loop of the thread.

    `model_client` replaces the litellm client (an in-process deterministic model in
    tests); then litellm is never imported. `cancelled` is the run's cancellation: the one
    token the client, the loop and every tool call read.
    """
    from baseagent.core.loop import Loop
    from baseagent.llm.types import ModelClientProtocol
    from baseagent.sandbox.policy import Policy
    from baseagent.tools.context import HistoryView, ToolContext

    settings = prepared.settings
    if model_client is not None:
        check_model_client(model_client)
        client = model_client
    else:
        client = new_model_client(settings, prepared.thread_id, emitter.notice,
                               settings.max_tokens or limits(settings, True, prepared.route)[1],
                               prepared.route, redact=prepared.redactor.data)
    client.bind_cancel(cancelled)
    if prepared.resumed is not None:
        client.totals = dataclasses.replace(prepared.resumed.usage)  # usage and cost so far
    litellm_limits = model_client is None
    route = prepared.route if litellm_limits else None
    tool_context = ToolContext(
        cwd=settings.cwd, env=prepared.child_env, sandbox=settings.sandbox,
        sandbox_network=settings.sandbox_network,
        shell_timeout_ms=settings.shell_timeout_ms, cancelled=cancelled,
        writable_roots=list(settings.writable_roots), processes=processes,
        grep_backend=settings.grep_backend, grep_timeout_s=settings.grep_timeout_s,
        thread_id=prepared.thread_id,
        delegate=make_delegation(prepared, client, litellm_limits, route,
                             own_models=model_client is None, cancelled=cancelled,
                             notice=emitter.notice)
        if settings.delegate or settings.specialists else None,
        # The writable roots are opened now, once: what the workspace is for the whole run.
        sandbox_policy=Policy.build(settings.sandbox, settings.cwd, settings.writable_roots,
                                    prepared.child_env, settings.sandbox_network),
        approvals=run_approvals(settings, approver, emitter),
        history=HistoryView(prepared.history), settings=tool_settings(settings),
        redact=prepared.redactor.text)  # tool results reach the model redacted
    session = open_record(prepared, client, storage) if settings.record_session else None
    if session is not None:
        emitter.add_listener(session)
    parts = parts or {}
    if parts.get("tool_executor") is not None:
        prepared.registry.executor = parts["tool_executor"]
    compactor = parts.get("context_policy") or make_compactor(
        settings, client, prepared.registry, emitter, session, litellm_limits=litellm_limits,
        route=route)
    paused = prepared.resumed.paused if prepared.resumed is not None else None
    default = functools.partial(
        Loop, client=client, registry=prepared.registry, emitter=emitter,
        tool_context=tool_context, history=prepared.history,
        max_iterations=settings.max_iterations, verify=settings.verify,
        session=session, compactor=compactor, cancelled=cancelled,
        thread_id=prepared.thread_id, paused=paused,
        tool_choice=prepared.tool_choice, helps=helps_for(prepared, settings),
        all_tools_failed=settings.all_tools_failed)
    factory = parts.get("loop")
    if factory is not None and settings.attempts > 1:
        raise ConfigError("attempts: a loop of your own (loop=) runs each turn once; "
                          "give one or the other")
    if factory is None and settings.attempts > 1:
        loop = attempts_loop(prepared, default(), client=client, emitter=emitter, session=session,
                         cancelled=cancelled, processes=processes, approver=approver,
                         model_client=model_client, route=route)
    elif factory is None:
        loop = default()
    else:
        from baseagent.core.parts import AgentLoop, LoopParts

        loop = factory(LoopParts(
            settings=settings, client=client, registry=prepared.registry, emitter=emitter,
            tool_context=tool_context, history=prepared.history, context_policy=compactor,
            session=session, cancelled=cancelled, thread_id=prepared.thread_id,
            paused=paused, default=default))
        if not isinstance(loop, AgentLoop):
            raise TypeError(f"loop: the factory returned a {type(loop).__name__}, not an "
                            "AgentLoop (history, paused, run_turn(), continue_turn(); "
                            "core/parts.py)")
    return Connected(client=client, tool_context=tool_context, session=session, loop=loop,
                     notices=list(notices))


def disconnect(connected: Connected) -> None:
    """Close what a connected thread holds open: its tool context (the workspace's roots held
    open), its session record and the direct path's connection to the provider (an injected
    model client is the caller's to close)."""
    if connected.tool_context.delegate is not None:
        connected.tool_context.delegate.close()  # specialists' own model clients
    connected.tool_context.close()
    if connected.session is not None:
        connected.session.close()
    from baseagent.llm.client import ModelClient

    if isinstance(connected.client, ModelClient):
        connected.client.close()


def open_record(prepared: Prepared, client: ModelClientProtocol,
                storage: MessageStorage | None = None) -> SessionRecorder:
    """The thread's session record, in `storage` (default: the settings' store, opened for
    this and closed again: the writer keeps its own handle); a resumed thread appends to
    the record it came from."""
    from baseagent import __version__
    from baseagent.records.recorder import SessionRecorder
    from baseagent.storage import open_storage

    settings = prepared.settings
    resumed = prepared.resumed
    key = (resumed.key or resumed.thread_id) if resumed is not None else prepared.thread_id
    store = storage if storage is not None else open_storage(settings)
    try:
        writer = store.create_thread(key)
    except OSError as exc:
        where = session_path(settings, key) if store.kind == "jsonl" else store.location
        raise ConfigError(f"cannot write the session record {where}: "
                          f"{exc.strerror or exc} (set session_dir, or --no-session)") from None
    finally:
        if storage is None:
            store.close()
    session = SessionRecorder(writer, redact=prepared.redactor.data)
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


def session_path(settings: AgentConfig, thread_id: str) -> Path:
    return settings.session_dir / f"{thread_id}.jsonl"
