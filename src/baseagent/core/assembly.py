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

The functions below are those steps; only the builder strings them together. This module is
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
from typing import TYPE_CHECKING, Any, Callable

from baseagent.cancellation import CancelToken
from baseagent.config.settings import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS, AgentConfig
from baseagent.errors import ConfigError, InputError
from baseagent.core import events as engine
from baseagent.tools.approval import (ApprovalAnswer, ApprovalRequest, Approvals, Approver,
                                      approval_item)

if TYPE_CHECKING:
    import threading

    from baseagent.core.loop import Loop
    from baseagent.core.records import LoadedSession
    from baseagent.core.recorder import SessionRecorder
    from baseagent.core.specialists import Sources
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
    from baseagent.tools.tool import Tool, ToolContext
    from baseagent.tools.toolset import Gathered

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
    # What specialists may be given (core/specialists.py): every built-in tool and the
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
    from baseagent.tools.toolset import gather

    profile = profile_of(settings)
    given = gather(tools)  # toolsets opened into their parts, providers apart
    fixed = select_tools(settings, given.fixed, profile, escalation=escalation,
                         builtins=given.builtins, vision=model_vision(settings))
    pool = specialist_pool(settings, given.fixed, escalation) if settings.specialists else []
    if settings.toolsets:
        check_named_toolsets(settings, _caller_names(given.fixed))
    taken = {t.name for t in fixed}
    for tool in external_tools:  # a bad declaration is the caller's input, not a setting
        if tool.name in taken:
            raise InputError(f"external tools: two tools are named {tool.name!r}")
        taken.add(tool.name)
        fixed.append(tool)
    sources, secrets = tool_sources(settings, env, given)
    choice = settings.tool_choice
    if choice is not None and not _is_mode(choice) and not sources \
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
    from baseagent.core.caching import prompt_cache_params
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


def select_tools(settings: AgentConfig, extra: Sequence[Any] = (),
                 profile: PromptProfile | None = None, escalation: bool = False,
                 builtins: Sequence[str] = (), vision: bool | None = None) -> list[Tool]:
    """The run's fixed tools, in their stable order (the tool list is part of the cached
    prompt prefix): the built-in tools the toolsets leave (tools/toolsets.py), `delegate`
    when enabled, then the caller's tools in the order given (Python functions become PythonTools; Tool objects,
    such as caller-run or delegate tools, are taken as they are). The one place a new kind
    of fixed tool joins the run; long-lived sources add theirs in settle_tools(). `builtins`:
    built-in names the caller's toolsets ask for, offered even where the toolsets setting
    leaves them out. `vision` (the model's, from litellm's map; None: unknown): view_image
    is among the default tools of the full profile only for a model known to see images,
    as Codex offers it; named by the user, it is there for any model, and refuses every
    call when the model is known not to see images."""
    from baseagent.tools.registry import BUILTIN_TOOLS, builtin_tools
    from baseagent.tools.toolsets import builtin_names
    from baseagent.tools.view_image import NAME as VIEW_IMAGE

    if settings.planner:
        return planner_tools(settings)
    enabled, disabled = builtin_selection(settings)
    if enabled is None and profile is not None and profile.tools is not None:
        enabled = list(profile.tools)  # the profile's tools, unless the user named some
    if enabled is not None and builtins:
        enabled = [*enabled, *builtins]
    optional = (VIEW_IMAGE,) if vision is True else ()
    chosen = builtin_tools(builtin_names(enabled, disabled, optional))
    if escalation:  # the shell whose calls may ask to leave the sandbox (tools/approval.py)
        from baseagent.tools.shell import ESCALATABLE_TOOL

        chosen = [ESCALATABLE_TOOL if t.name == "shell" else t for t in chosen]
    if vision is False:
        from baseagent.tools.view_image import REFUSING_TOOL

        chosen = [REFUSING_TOOL if t.name == VIEW_IMAGE else t for t in chosen]
    if settings.delegate:
        from baseagent.core.delegation import delegate_tool

        unknown = sorted(set(settings.delegate_tools) - set(BUILTIN_TOOLS))
        if unknown:
            raise ConfigError(f"delegate_tools: unknown tool(s) {', '.join(unknown)}")
        chosen.append(delegate_tool())
    if settings.specialists:
        chosen.append(_specialist_tool(settings))
    if extra:  # python_tool imports asyncio: only when there are caller's tools
        from baseagent.tools.python_tool import as_tool
    try:
        chosen += [as_tool(obj) for obj in extra]
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None
    seen: set[str] = set()
    for tool in chosen:
        if tool.name in seen:
            raise ConfigError(f"two tools are named {tool.name!r}: rename one "
                              "(or leave the built-in one out with disabled_toolsets)")
        seen.add(tool.name)
    return chosen


def builtin_selection(settings: AgentConfig) -> tuple[list[str] | None, list[str]]:
    """The settings' enabled and disabled lists as built-in names: a `[toolsets.NAME]` in
    them stands for the built-in tools and groups it lists (its sources are filtered in
    `top_source_tools`)."""
    from baseagent.tools.toolsets import builtin_part

    named = named_toolsets(settings)
    enabled = settings.enabled_toolsets
    return (None if enabled is None else builtin_part(enabled, named),
            builtin_part(settings.disabled_toolsets, named))


def named_toolsets(settings: AgentConfig) -> dict[str, list[str]]:
    """Each `[toolsets.NAME]` of the settings and the names it lists."""
    return {name: list(table.tools) for name, table in settings.toolsets.items()}


def top_source_tools(settings: AgentConfig, tools: Sequence[Tool]) -> list[Tool]:
    """The tool sources' tools the top agent gets: all of them, unless `tools` (enabled)
    names a `[toolsets.NAME]`: then, of the configured sources' tools, those the named
    toolsets hold; minus those of a toolset in `disabled_tools`. Naming built-in tools alone
    leaves the sources as they are, and the caller's own (a library Toolset's tables, its
    providers) are never filtered here."""
    from baseagent.core.specialists import resolve_tools

    named = settings.toolsets
    out = list(tools)
    if not named:
        return out
    sources = source_names(settings)
    configured = sources.mcp | sources.openapi

    def held(names: list[str]) -> set[str]:
        return {t.name for t in resolve_tools(names, builtins=[], caller=[],
                                              source_tools=out, sources=sources)}

    enabled = [n for n in settings.enabled_toolsets or () if n in named]
    if enabled:
        kept = held(enabled)
        out = [t for t in out if t.name in kept or t.server not in configured]
    disabled = [n for n in settings.disabled_toolsets if n in named]
    if disabled:
        dropped = held(disabled)
        out = [t for t in out if t.name not in dropped]
    return out


def check_named_toolsets(settings: AgentConfig, caller: Sequence[str] = ()) -> None:
    """A ConfigError naming every name a `[toolsets.NAME]` lists that means nothing in this
    run (`caller`: the names of the caller's own tools)."""
    from baseagent.core.specialists import unknown_toolset_names

    bad = unknown_toolset_names(source_names(settings), caller)
    if bad:
        raise ConfigError(f"toolsets: unknown tool(s) {'; '.join(bad)} (use built-in tools "
                          "or groups, [mcp_servers] or [openapi] names, SOURCE:TAG, or your "
                          "own tools' names)")


def planner_tools(settings: AgentConfig) -> list[Tool]:
    """Planning mode's tools (AgentB's PlanningAgent): the plan and the specialists, nothing
    else; the built-in tools, the caller's and the sources' are the specialists' to use.
    Without a specialist there is nobody to work through: a ConfigError."""
    from baseagent.tools.registry import builtin_tools

    if not settings.specialists:
        raise ConfigError("planner mode needs at least one specialist: declare "
                          "[specialists.NAME] in the config file or pass "
                          "Agent(specialists=[...])")
    return [*builtin_tools(["update_plan"]), _specialist_tool(settings)]


def _specialist_tool(settings: AgentConfig) -> Tool:
    from baseagent.core.specialists import specialist_tool

    return specialist_tool(settings.specialists, {
        name: spec.tools if spec.tools is not None else settings.delegate_tools
        for name, spec in settings.specialists.items()})


def specialist_pool(settings: AgentConfig, extra: Sequence[Any] = (),
                    escalation: bool = False) -> list[Tool]:
    """The fixed tools specialists may be given: every built-in tool (whatever the top
    agent's toolsets) and the caller's tools. A specialist's tool name that means nothing
    here nor among the tool sources is a ConfigError naming it."""
    from baseagent.core.specialists import unknown_tool_names
    from baseagent.tools.registry import DEFAULT_TOOLS, builtin_tools

    pool = builtin_tools()
    if escalation:
        from baseagent.tools.shell import ESCALATABLE_TOOL

        pool = [ESCALATABLE_TOOL if t.name == "shell" else t for t in pool]
    if extra:
        from baseagent.tools.python_tool import as_tool

        try:
            pool += [as_tool(obj) for obj in extra]
        except (TypeError, ValueError) as exc:
            raise ConfigError(str(exc)) from None
    clash = [t.name for t in pool[len(DEFAULT_TOOLS):] if t.name in DEFAULT_TOOLS]
    if clash:
        raise ConfigError(f"two tools are named {clash[0]!r}: rename yours (specialists "
                          "name built-in tools by their names)")
    bad = unknown_tool_names(settings.specialists, source_names(settings),
                             [t.name for t in pool])
    if bad:
        raise ConfigError(f"specialists: unknown tool(s) {'; '.join(bad)} (use built-in tools "
                          "or groups, [mcp_servers] or [openapi] names, SOURCE:TAG, or your "
                          "own tools' names)")
    return pool


def _caller_names(extra: Sequence[Any]) -> list[str]:
    """The names the caller's tools (functions, Tool objects) are offered under."""
    from baseagent.tools.python_tool import as_tool

    try:
        return [as_tool(obj).name for obj in extra]
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None


def source_names(settings: AgentConfig) -> Sources:
    """What the settings' tool names may mean (core/specialists.py `Sources`): their MCP
    servers, OpenAPI documents and named toolsets."""
    from baseagent.core.specialists import Sources

    return Sources(mcp=frozenset(settings.mcp_servers), openapi=frozenset(settings.openapi),
                   toolsets=named_toolsets(settings))


def specialist_settings(settings: AgentConfig) -> dict[str, AgentConfig]:
    """The settings of each specialist with a model other than the run's: the run's, with
    that model (same api_base and key)."""
    return {name: settings.model_copy(update={"model": spec.model})
            for name, spec in settings.specialists.items()
            if spec.model is not None and spec.model != settings.model}


def tool_sources(settings: AgentConfig, env: Mapping[str, str],
                 given: Gathered | None = None) -> tuple[ToolSources, list[str]]:
    """The long-lived tool sources of the settings and of the caller's toolsets and
    providers (`given`), not started yet, and the secret values their configuration holds
    (to redact)."""
    from baseagent.tools.sources import ToolSources
    from baseagent.tools.toolset import make_sources

    mcp, openapi = dict(settings.mcp_servers), dict(settings.openapi)
    providers: list[Any] = []
    if given is not None:
        for kind, mine, theirs in (("mcp_servers", mcp, given.mcp_servers),
                                   ("openapi", openapi, given.openapi)):
            for name, table in theirs.items():
                if name in mine and mine[name] != table:
                    raise ConfigError(f"{kind}.{name} is configured and also given by a "
                                      "toolset, with other settings: rename one")
                mine[name] = table
        providers = given.providers
    sources, secrets = make_sources(mcp, openapi, providers, env, settings.cwd)
    return ToolSources(sources), secrets


def start_sources(prepared: Prepared) -> None:
    """Start the tool sources in the background (MCP servers launch, documents load) so they
    come up while litellm imports."""
    prepared.sources.start()


def settle_tools(prepared: Prepared, cancelled: CancelToken) -> list[str]:
    """Wait for the tool sources and fix the run's tools for good (the registry every
    request sends). Returns one-line notices: sources that failed, a tool_choice that names
    no tool."""
    if not prepared.sources:
        return []
    from baseagent.tools.registry import ToolRegistry

    notices = prepared.sources.wait(cancelled)
    taken = {t.name for t in prepared.tools} | {t.name for t in prepared.pool}
    prepared.source_tools = prepared.sources.tools(taken)
    if not prepared.settings.planner:  # the planner's sources are its specialists' alone
        top = top_source_tools(prepared.settings, prepared.source_tools)
        prepared.registry = ToolRegistry([*prepared.tools, *top],
                                         shape=prepared.profile.shape)
    choice = prepared.tool_choice
    if choice is not None and not _is_mode(choice) and \
            choice not in {t.name for t in prepared.registry.tools()}:
        notices.append(f"tool_choice {choice!r} is not a tool of this run; the model chooses "
                       "freely (auto)")
        prepared.tool_choice = None
    return notices


def _is_mode(choice: str) -> bool:
    from baseagent.tools.toolsets import TOOL_CHOICE_MODES

    return choice in TOOL_CHOICE_MODES


def system_prompt(settings: AgentConfig, tools: Sequence[Tool],
                  profile: PromptProfile | None = None, person_present: bool = False) -> str:
    """The system prompt: the built-in one (or system_prompt / system_prompt_file), then
    append_system_prompt (text, or @FILE). Read once, here, so every request of the thread
    sends the same bytes; an unreadable file is a ConfigError before anything runs."""
    from baseagent.prompts.system import compose_system_prompt
    from baseagent.tools.registry import DEFAULT_TOOLS

    profile = profile or profile_of(settings)

    base = settings.system_prompt
    if settings.system_prompt_file is not None:
        base = _read_prompt_file(settings.system_prompt_file, "system_prompt_file")
    if settings.planner and base is None:
        from baseagent.core.specialists import planner_prompt
        from baseagent.prompts.system import PLANNER_PROMPT

        base = planner_prompt(PLANNER_PROMPT, settings.specialists)
    append = settings.append_system_prompt
    if append is not None and append.startswith("@"):
        append = _read_prompt_file(Path(append[1:]), "append_system_prompt")
    builtins = [t.name for t in tools if t.name in DEFAULT_TOOLS]
    expected = list(profile.tools or DEFAULT_TOOLS)
    restricted = None if base is not None or builtins == expected else builtins
    return compose_system_prompt(profile.system_prompt if base is None else base, append,
                                 restricted, person_present=person_present and base is None)


def _read_prompt_file(path: Path, key: str) -> str:
    from baseagent.fsutil import read_regular

    path = path.expanduser()
    try:
        return read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(f"{key}: cannot read {path}: {reason}") from None


def open_history(prepared: Prepared) -> None:
    """A new thread's opening messages: the system prompt (fixed for the thread) and the
    environment context (git status, a listing, AGENTS.md), taken when the first turn
    starts."""
    if not prepared.history:
        prepared.history.extend(opening_messages(prepared.settings.cwd, prepared.shell,
                                                 prepared.system_prompt, prepared.child_env))


def opening_messages(cwd: Path, shell: str, system: str | None = None,
                     env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The system prompt (default: the built-in one) and the environment context (`env`:
    the commands' environment, which the agent's own git runs with)."""
    from baseagent.prompts.context import environment_context

    from baseagent.prompts.system import SYSTEM_PROMPT

    return [{"role": "system", "content": system or SYSTEM_PROMPT},
            {"role": "user", "content": environment_context(cwd, shell, env=env)}]


def check_platform(settings: AgentConfig) -> None:
    """A restricted sandbox mode where the sandbox does not exist (not Linux): a
    ConfigError, one line, before anything runs (sandbox/policy.py unsupported_mode)."""
    from baseagent.sandbox.policy import unsupported_mode

    problem = unsupported_mode(settings.sandbox)
    if problem is not None:
        raise ConfigError(problem)


def preflight(settings: AgentConfig, env: Mapping[str, str]) -> None:
    """What is wrong with the model string or its key that can be known without litellm:
    a ConfigError at once, before the slow import starts (llm/preflight.py)."""
    from baseagent.llm.preflight import preflight as check

    problem = check(settings.model, settings.request_api_key(), env)
    if problem is not None:
        raise ConfigError(problem)


def check_model(settings: AgentConfig, route: Route | None = None) -> None:
    """Unknown provider or missing API key: a ConfigError before anything runs (imports
    litellm, unless the run's calls take the direct path `route`)."""
    if route is None:  # the direct path has its key and a provider it knows
        from baseagent.llm import client as llm

        llm.check_model(settings.model, settings.api_base, settings.request_api_key())
    if settings.oss and settings.api_base:
        from baseagent.llm.local_server import check_local_server

        check_local_server(settings.api_base, settings.model)


def escalation_offered(settings: AgentConfig, approver: Approver | str | None) -> bool:
    """Whether the model may ask to run a command outside the sandbox: approval policy
    on-request, someone to answer, and a sandbox to leave."""
    return settings.approval_policy == "on-request" and approver is not None \
        and settings.sandbox != "danger-full-access"


def run_approvals(settings: AgentConfig, approver: Approver | str | None,
                  emitter: Emitter) -> Approvals | None:
    """The run's approvals (None under policy `never`): each question and its answer is an
    approval item in the run's events."""
    if settings.approval_policy == "never":
        return None
    ids: dict[int, str] = {}

    def report(request: ApprovalRequest, answer: ApprovalAnswer | None) -> None:
        if answer is None:
            ids[id(request)] = emitter.new_item_id()
        item = approval_item(ids.get(id(request)) or emitter.new_item_id(), request, answer)
        if answer is None:
            emitter.send(engine.ItemStarted(item))
        else:
            ids.pop(id(request), None)
            emitter.send(engine.ItemCompleted(item))

    return Approvals(settings.approval_policy, approver, report=report)


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
    from baseagent.tools.tool import HistoryView, ToolContext

    settings = prepared.settings
    if model_client is not None:
        check_model_client(model_client)
        client = model_client
    else:
        client = _model_client(settings, prepared.thread_id, emitter.notice,
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
        delegate=_delegation(prepared, client, litellm_limits, route,
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
    compactor = parts.get("context_policy") or _compactor(
        settings, client, prepared.registry, emitter, session, litellm_limits=litellm_limits,
        route=route)
    paused = prepared.resumed.paused if prepared.resumed is not None else None
    default = functools.partial(
        Loop, client=client, registry=prepared.registry, emitter=emitter,
        tool_context=tool_context, history=prepared.history,
        max_iterations=settings.max_iterations, verify=settings.verify,
        session=session, compactor=compactor, cancelled=cancelled,
        thread_id=prepared.thread_id, paused=paused,
        tool_choice=prepared.tool_choice, helps=_helps(prepared, settings),
        all_tools_failed=settings.all_tools_failed)
    factory = parts.get("loop")
    if factory is not None and settings.attempts > 1:
        raise ConfigError("attempts: a loop of your own (loop=) runs each turn once; "
                          "give one or the other")
    if factory is None and settings.attempts > 1:
        loop = _attempts(prepared, default(), client=client, emitter=emitter, session=session,
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


def _attempts(prepared: Prepared, inner: Loop, *, client: ModelClientProtocol, emitter: Emitter,
              session: SessionRecorder | None, cancelled: CancelToken,
              processes: ProcessTracker, approver: Approver | str | None,
              model_client: ModelClientProtocol | None, route: Route | None) -> Any:
    """The loop of a thread with `attempts` > 1 (core/attempts.py): each attempt a Loop of
    its own over a copy of the workspace, built by `attempt_loop`."""
    from baseagent.core.attempts import Attempts, runs_in_parallel

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
    """One attempt's loop (core/attempts.py): the thread's settings, tools and cancellation
    over the copy `cwd` of the workspace (its sandbox's writable root; attempts after the
    first at `attempts_temperature` when the run's is 0 or unset), `history` (the
    thread's, read in the copy), its own emitter (to `listener`) and client (a caller's
    model client is shared: then the attempts run one after another); no session record
    (its events reach the thread's) and no delegation. Returns (loop, client, shared)."""
    from baseagent.core.loop import Loop
    from baseagent.output.emitter import Emitter
    from baseagent.sandbox.policy import Policy
    from baseagent.tools.tool import HistoryView, ToolContext

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
        client = _model_client(settings, prepared.thread_id, emitter.notice,
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
                compactor=_compactor(settings, client, prepared.registry, emitter, None,
                                     litellm_limits, route),
                cancelled=cancelled, thread_id=prepared.thread_id,
                tool_choice=prepared.tool_choice, helps=_helps(prepared, settings),
                all_tools_failed=settings.all_tools_failed)
    return loop, client, model_client is not None


def check_parts(context_policy: Any, tool_executor: Any, loop: Any) -> dict[str, Any]:
    """The replaced engine parts (core/parts.py), each held to its protocol when the agent
    is built: ConfigError naming what is missing."""
    parts: dict[str, Any] = {}
    if context_policy is not None:
        missing = [m for m in ("prepare", "on_overflow")
                   if not callable(getattr(context_policy, m, None))]
        if missing:
            raise ConfigError(f"context_policy: a {type(context_policy).__name__} has no "
                              f"{', '.join(missing)}() (core/parts.py ContextPolicy)")
        parts["context_policy"] = context_policy
    if tool_executor is not None:
        if not callable(getattr(tool_executor, "execute", None)):
            raise ConfigError(f"tool_executor: a {type(tool_executor).__name__} has no "
                              "execute(tool, args, ctx) (core/parts.py ToolExecutor)")
        parts["tool_executor"] = tool_executor
    if loop is not None:
        if not callable(loop):
            raise ConfigError(f"loop: a {type(loop).__name__} is not a factory: pass a "
                              "function of LoopParts that returns an AgentLoop "
                              "(core/parts.py)")
        parts["loop"] = loop
    return parts


def tool_settings(settings: AgentConfig) -> AgentConfig:
    """The settings a tool may read (ToolContext.settings): the run's, without the API key."""
    return settings.model_copy(update={"api_key": None}) if settings.api_key else settings


def check_model_client(model_client: Any) -> None:
    """TypeError unless `model_client` has the client protocol's members."""
    from baseagent.llm.types import ModelClientProtocol

    if not isinstance(model_client, ModelClientProtocol):
        raise TypeError(f"model_client: a {type(model_client).__name__} is not a model "
                        "client (it needs totals, complete(), bind_cancel() and close(); "
                        "llm/types.py ModelClientProtocol)")


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


def _delegation(prepared: Prepared, client: ModelClientProtocol, litellm_limits: bool,
                route: Route | None = None, *, own_models: bool = True,
                cancelled: CancelToken | None = None,
                notice: Callable[[str], None] = lambda _text: None) -> Any:
    """The sub-agents' runner: the delegate tool's children and the named specialists',
    composed by child_loop from this thread's parts. The delegate tool's may get any of the
    thread's own tools but the delegating ones and the caller's; a specialist gets the
    tools its configuration names (core/specialists.py). `own_models`: a specialist with a
    model of its own gets its own client (not when the caller injected the run's client)."""
    from baseagent.core.delegation import NAME, Delegation
    from baseagent.core.specialists import NAME as SPECIALIST_TOOL
    from baseagent.tools.external import is_external

    settings = prepared.settings
    build = functools.partial(child_loop, settings=settings, shell=prepared.shell,
                              litellm_limits=litellm_limits, route=route)
    tools = [t for t in prepared.registry.tools()
             if t.name not in (NAME, SPECIALIST_TOOL) and not is_external(t)]
    return Delegation(build=build, client=client, tools=tools,
                      default_tools=settings.delegate_tools,
                      max_iterations=settings.delegate_max_iterations,
                      cost_limit=settings.delegate_cost_limit, redact=prepared.redactor,
                      specialists=_specialist_runs(prepared, client, own_models, cancelled,
                                                   notice))


def _specialist_runs(prepared: Prepared, client: ModelClientProtocol, own_models: bool,
                     cancelled: CancelToken | None,
                     notice: Callable[[str], None]) -> dict[str, Any]:
    """Each specialist's tools (resolved now that the sources are up), limit, system
    prompt, and its own model's client maker when it has one."""
    from baseagent.core.delegation import SharedTotals, SpecialistRun
    from baseagent.core.specialists import resolve_tools
    from baseagent.prompts.system import SPECIALIST_ROLE, SYSTEM_PROMPT

    settings = prepared.settings
    builtins = [t for t in prepared.pool if t.name in _builtin_names()]
    caller = [t for t in prepared.pool if t.name not in _builtin_names()]
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
                inner = _model_client(config, prepared.thread_id, notice,
                                      config.max_tokens or limits(config, True, own_route)[1],
                                      own_route)
                if cancelled is not None:
                    inner.bind_cancel(cancelled)
                return SharedTotals(inner, client, settings.cost_limit)

            run.client = make
        runs[name] = run
    return runs


def _builtin_names() -> tuple[str, ...]:
    from baseagent.tools.registry import DEFAULT_TOOLS

    return DEFAULT_TOOLS


def compose_specialist_prompt(base: str, role: str, prompt: str | None) -> str:
    """A specialist's system prompt: the built-in one, who it is, then its own `prompt`."""
    text = base.rstrip("\n") + "\n\n" + role.strip("\n") + "\n"
    if prompt:
        text += "\n" + prompt.strip("\n") + "\n"
    return text


def child_loop(settings: AgentConfig, *, client: ModelClientProtocol, tools: Sequence[Tool],
               emitter: Emitter, tool_context: ToolContext, max_iterations: int, shell: str,
               litellm_limits: bool, route: Route | None = None,
               system: str | None = None) -> Loop:
    """A sub-agent's loop (core/delegation.py): a fresh history and its own tools and
    iteration limit; the parent's client, workspace, sandbox and cancellation (through
    `tool_context`), with compaction for the same model. No verification round (the parent
    judges the answer) and no session record of its own (its items are in the parent's).
    `system`: a specialist's system prompt (default: the built-in one); `settings` and
    `route` are a specialist's own when it has its own model."""
    from baseagent.core.loop import Loop
    from baseagent.helps import for_profile
    from baseagent.tools.registry import ToolRegistry

    from baseagent.tools.tool import HistoryView

    registry = ToolRegistry(tools, shape=profile_of(settings).shape)
    history = opening_messages(tool_context.cwd, shell, system, env=tool_context.env)
    tool_context = dataclasses.replace(tool_context, history=HistoryView(history))
    return Loop(client=client, registry=registry, emitter=emitter, tool_context=tool_context,
                history=history,
                max_iterations=max_iterations, verify=False,
                compactor=_compactor(settings, client, registry, emitter, None, litellm_limits,
                                     route),
                cancelled=tool_context.cancelled.with_reason(
                    "the delegating run was interrupted"),
                thread_id=tool_context.thread_id, helps=for_profile())


def open_record(prepared: Prepared, client: ModelClientProtocol,
                storage: MessageStorage | None = None) -> SessionRecorder:
    """The thread's session record, in `storage` (default: the settings' store, opened for
    this and closed again: the writer keeps its own handle); a resumed thread appends to
    the record it came from."""
    from baseagent import __version__
    from baseagent.core.recorder import SessionRecorder
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
    return _model_client(settings, thread_id, lambda _message: None,
                         settings.max_tokens or limits(settings, True, route)[1], route)


def _model_client(settings: AgentConfig, thread_id: str, notice: Callable[[str], None],
                  max_tokens: int, route: Route | None = None,
                  redact: Callable[[Any], Any] | None = None) -> ModelClientProtocol:
    """The model client (litellm, or the direct path `route`). Every request carries
    `max_tokens`, the run's output cap: a model stuck in a loop stops there instead of
    writing until the task's timeout. `verbose` gives it the request log, redacted with
    `redact` (the run's Redactor)."""
    from baseagent.core.caching import prompt_cache_params
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


def _helps(prepared: Prepared, settings: AgentConfig) -> list[Any]:
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
                       else None)


def _compactor(settings: AgentConfig, client: ModelClientProtocol, registry: ToolRegistry,
               emitter: Emitter, session: SessionRecorder | None, litellm_limits: bool,
               route: Route | None = None) -> Any:
    """Compaction and cache markers for this model (core/compaction.py)."""
    from baseagent.core.caching import wants_cache_markers
    from baseagent.core.compaction import Budget, Compactor
    from baseagent.core.tokens import TokenCounter

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


def session_path(settings: AgentConfig, thread_id: str) -> Path:
    return settings.session_dir / f"{thread_id}.jsonl"
