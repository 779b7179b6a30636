"""The library API: `Agent`, one conversation thread that runs turns on request.

    from baseagent import Agent

    agent = Agent(model="openai/gpt-4.1", cwd="/path/to/repo")
    result = agent.run("fix the failing test")         # RunResult
    for event in agent.stream("now add a test"):       # the CLI's events, as objects
        print(event.model_dump_json())
    reply = agent.chat("what did you change?")         # the next turn, as text

A turn that calls a tool the caller runs (`external_tools=`) ends `requires_action` with
the pending calls; `agent.submit_tool_outputs({call_id: output})` continues that same turn.

Every entry point goes through this class: the CLI and `exec` hand it their settings and a
JSONL or terminal sink; batch workers make one per task. It has no process-wide side
effects: it writes nothing to stdout, installs no signal handler, never changes the
working directory or os.environ, and keeps all its state on the instance, so several
agents run at once in threads of one process without seeing each other's events, files,
processes or cancellation. The one exception is the litellm dependency, once a run on the
litellm route loads it: litellm's own settings, and openai-python's chat request transform
swapped for an equivalent copy (llm/openai_fastpath.py; docs/LIBRARY.md).

Building the run is compose/builder.py's `RunBuilder` (cheap `prepare()` when the Agent is
made, `connect()` with the model at the first turn); the Agent keeps the thread's state
(emitter, processes, cancellation) and the turn API. What it composes lives beside it:
agent_setup.py (keyword arguments to settings, the thread resumed, its checkpoints),
agent_turn.py (a turn's input checked, a turn that raised ended), agent_stream.py
(`TurnStream`, the turn's listeners) and agent_result.py (`RunResult`, `Usage`).
"""
from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Callable

from baseagent.agent_result import RunResult, Usage
from baseagent.agent_setup import (checkpoints_for, resume_thread, setting_options,
                                   storage_object)
from baseagent.agent_stream import Collect, EventFormat, TurnStream, check_format
from baseagent.agent_turn import checked_turn_input, fail_unexpectedly
from baseagent.cancellation import Cancellation
from baseagent.checkpoints import Diff, Undone
from baseagent.config.settings import AgentConfig
from baseagent.compose import builder as assembly
from baseagent.core.loop import Loop, TurnOutcome
from baseagent.records.pending import Paused, check_outputs
from baseagent.records.replay import LoadedSession
from baseagent.records.recorder import RecordWriteError
from baseagent.storage import MessageStorage
from baseagent.errors import AgentBusyError, ConfigError, InputError, TurnError
from baseagent.llm.types import ModelClientProtocol
from baseagent.output import events as ev
from baseagent.output.codex import pending_call
from baseagent.tools.approval import ApprovalAnswer, ApprovalRequest, Approver
from baseagent.emitting.interface import EventListener
from baseagent.output.emitter import Emitter
from baseagent.emitting.events import RunEvent
from baseagent.tools.external import ExternalTool, external_tools as _external_tools
from baseagent.tools.procs import KILL_GRACE_SECONDS, ProcessTracker

_LOG = logging.getLogger("baseagent")
EventCallback = Callable[[Any], None]  # a Codex event (ev.ThreadEvent), or an AgentB one
ToolSpec = Any  # ExternalTool | {"name", "description", "parameters"} | OpenAI function spec

class Agent:
    """One thread (conversation) with the model, in one workspace.

    Keyword arguments are the library's configuration, `AgentConfig` (`model`, `api_base`,
    `api_key`, `cwd`, `max_iterations`, `cost_limit`, `verify`, `sandbox`, `session_dir`,
    `temperature`, `max_tokens`, `context_window`, ...; config/settings.py, one group per
    component), under the CLI's config names and validated by the same models: a bad value
    raises ConfigError, and so does an option only the CLI can honour (`json_output`,
    `event_format`, `output_last_message`). Only these are read: no configuration file and
    no BASEAGENT_* variable unless you ask with `Agent.from_config()`.

    session: False writes no session record. thread_id: resume that recorded thread, with
    the model, api_base and cwd it was recorded with unless given here (`notes` then says
    which given value differs from the record).
    on_event: called with every event, on the thread running the turn: the Codex events,
    or AgentB's with on_event_format="agentb" (as stream(format=...) yields them).
    env: the environment commands start from (minus secrets; default: this process's,
    copied now); its credential-looking values are redacted from every event, and from
    every string the agent hands back (RunResult.final_message and .error, pending tool
    calls, chat()'s answer, `history`) unless redact_results=False (raw text, for a
    caller that knows what it does with it).
    model_client: a model client used instead of litellm (tests; see
    baseagent.testing.deterministic): `totals`, `complete()` and `bind_cancel()`, the
    protocol in baseagent.llm.types (checked at the first turn).
    tools: your own tools, after the built-in ones: plain functions (type-hinted, or
    taking one pydantic model), `@baseagent.tool` functions, Tool objects, tool providers
    (`baseagent.ToolProvider`) and named toolsets (`baseagent.Toolset`) (docs/TOOLS.md). enabled_toolsets / disabled_toolsets: which built-in tools (names
    or the groups read, edit, shell, plan). mcp_servers: Codex-style server tables, by name.
    openapi: OpenAPI documents whose operations become tools (a list of tables with a
    `name`, or a mapping of name to table).
    specialists: named sub-agents the model delegates to (`delegate_to_specialist`): a
    list of `baseagent.Specialist` (or dicts with a `name`), or a mapping of name to table;
    planner=True: the agent keeps the plan and works only through them (docs/AGENTB.md).
    external_tools: tools the caller runs (ExternalTool, or {name, description,
    parameters} with a JSON schema): the model sees them; calling one pauses the turn
    (`requires_action`) until `submit_tool_outputs()`. A bad spec raises InputError.
    approver: answers when a command waits for approval (`approval_policy` untrusted,
    on-failure or on-request; tools/approval.py): called with an ApprovalRequest on the
    thread running the turn, returns an ApprovalAnswer (approved, approved_for_session or
    denied with a note). "requires_action": the turn pauses with an `approval_request`
    pending call instead, answered through submit_tool_outputs. Without one, nobody is
    asked: what needs a yes is declined.
    storage: where the thread is recorded and resumed from: "jsonl" (default, files in
    session_dir), "sqlite" or {"kind": "sqlite", "path": ...} (the `[storage]` setting), or
    your own MessageStorage object (baseagent.storage; docs/STORAGE.md).
    context_policy, tool_executor, loop: the engine's parts, replaced (core/parts.py:
    ContextPolicy for compaction, ToolExecutor for how a tool call runs, and a factory
    of LoopParts returning an AgentLoop); each checked when the agent is built.
    """

    def __init__(self, *, session: bool = True, thread_id: str | None = None,
                 on_event: EventCallback | None = None, on_event_format: EventFormat = "codex",
                 env: Mapping[str, str] | None = None,
                 model_client: ModelClientProtocol | None = None,
                 sinks: Sequence[EventListener] = (), tools: Sequence[Any] = (),
                 external_tools: Sequence[ToolSpec] = (), redact_results: bool = True,
                 approver: Approver | str | None = None, context_policy: Any = None,
                 tool_executor: Any = None, loop: Any = None, **options: Any) -> None:
        from baseagent.config.load import agent_config_from_options

        storage = storage_object(options)
        settings = agent_config_from_options(setting_options(options, session))
        settings, resume, notes = resume_thread(settings, thread_id, set(options), storage)
        self._start(assembly.RunBuilder(settings, env=env, model_client=model_client,
                                        approver=approver, storage=storage,
                                        context_policy=context_policy,
                                        tool_executor=tool_executor, loop=loop),
                    resume=resume, notes=notes, on_event=on_event, sinks=sinks, tools=tools,
                    external_tools=external_tools, redact_results=redact_results,
                    on_event_format=on_event_format)

    @classmethod
    def from_config(cls, *, config_file: str | Path | None = None, thread_id: str | None = None,
                    env: Mapping[str, str] | None = None, session: bool | None = None,
                    profile: str | None = None,
                    on_event: EventCallback | None = None, on_event_format: EventFormat = "codex",
                    model_client: ModelClientProtocol | None = None,
                    sinks: Sequence[EventListener] = (), tools: Sequence[Any] = (),
                    external_tools: Sequence[ToolSpec] = (), redact_results: bool = True,
                    approver: Approver | str | None = None, context_policy: Any = None,
                    tool_executor: Any = None, loop: Any = None,
                    **options: Any) -> "Agent":
        """The configuration resolved as the CLI does: these options > BASEAGENT_* variables
        in `env` > the TOML file (default ~/.baseagent/config.toml) > defaults. The CLI's own
        options are refused here, and left unread in the file and the variables (which the
        CLI shares). `profile` picks the file's `[profiles.NAME]` table (as `--profile`),
        which sits above the rest of the file and below the variables."""
        from baseagent.config.load import load_agent_config

        env = dict(os.environ) if env is None else dict(env)
        storage = storage_object(options)
        options = setting_options(options, session)
        settings = load_agent_config(options, env=env,
                                     config_file=Path(config_file) if config_file else None,
                                     profile=profile)
        settings, resume, notes = resume_thread(settings, thread_id, set(options), storage)
        return cls.from_settings(settings, resume=resume, env=env, notes=notes,
                                 on_event=on_event, model_client=model_client, sinks=sinks,
                                 tools=tools, external_tools=external_tools,
                                 redact_results=redact_results, approver=approver,
                                 on_event_format=on_event_format, storage=storage,
                                 context_policy=context_policy, tool_executor=tool_executor,
                                 loop=loop)

    @classmethod
    def from_settings(cls, settings: AgentConfig, *, resume: LoadedSession | None = None,
                      env: Mapping[str, str] | None = None,
                      on_event: EventCallback | None = None,
                      model_client: ModelClientProtocol | None = None,
                      sinks: Sequence[EventListener] = (),
                      notes: Sequence[str] = (), thread_id: str | None = None,
                      tools: Sequence[Any] = (),
                      external_tools: Sequence[ToolSpec] = (),
                      redact_results: bool = True,
                      builder: assembly.RunBuilder | None = None,
                      approver: Approver | str | None = None,
                      on_event_format: EventFormat = "codex",
                      storage: MessageStorage | None = None, context_policy: Any = None,
                      tool_executor: Any = None, loop: Any = None) -> "Agent":
        """From a resolved AgentConfig, or the CLI's Settings (what the CLI and batch workers
        do: the CLI's own options are theirs to honour, an Agent reads none). A caller resuming
        applies `core.records.settings_for_resume` first and passes its notes. `thread_id`
        names a new thread (default: a fresh UUID; the CLI shows it before building the
        agent); it is ignored when resuming. `builder`: the run's builder when the entry
        point began it already (checked the model string before its header, routed stderr
        through its redactor); it carries the settings, `env` and `model_client` then."""
        if builder is None:
            builder = assembly.RunBuilder(settings, env=env, model_client=model_client,
                                          approver=approver, storage=storage,
                                          context_policy=context_policy,
                                          tool_executor=tool_executor, loop=loop)
        elif builder.settings is not settings:
            raise ValueError("from_settings: the builder was made for other settings")
        agent = cls.__new__(cls)
        agent._start(builder, resume=resume, notes=notes, thread_id=thread_id,
                     on_event=on_event, sinks=sinks, tools=tools,
                     external_tools=external_tools, redact_results=redact_results,
                     on_event_format=on_event_format)
        return agent

    def _start(self, builder: assembly.RunBuilder, *, resume: LoadedSession | None,
               notes: Sequence[str], on_event: EventCallback | None,
               sinks: Sequence[EventListener], thread_id: str | None = None,
               tools: Sequence[Any] = (), external_tools: Sequence[ToolSpec] = (),
               redact_results: bool = True, on_event_format: EventFormat = "codex") -> None:
        """The one way an Agent is made: the builder prepares the run (cheap; the slow parts
        start in the background), the Agent keeps the state turns need."""
        check_format(on_event_format)
        self.settings = builder.settings
        self._redact_results = redact_results
        # Explicit settings that differ from a resumed thread's record (e.g. another model).
        self.notes: list[str] = list(notes)
        self._builder = builder
        self._prepared = builder.prepare(resume=resume, thread_id=thread_id, tools=tools,
                                         external_tools=_external_tools(external_tools))
        # The tool sources are starting; an agent dropped without close() still stops them
        # when it is collected.
        self._finalizer = weakref.finalize(self, self._prepared.sources.close)
        self._on_event = on_event
        # on_event_format="agentb": the callback takes AgentB's events, mapped from the
        # engine's for the whole thread (one mapper: it knows the run's status across turns).
        self._agentb_callback: EventListener | None = None
        if on_event is not None and on_event_format == "agentb":
            from baseagent.output.agentb import AgentBMapper

            self._agentb_callback = AgentBMapper(self._call_back)
        self._turn_listeners: list[EventListener] = []
        self._callback_error: BaseException | None = None
        self._emitter = Emitter([*sinks, _Dispatch(self)], redact=self._prepared.redactor)
        self._processes = ProcessTracker()
        self._cancellation = Cancellation()
        self._busy = threading.Lock()
        self._connected: assembly.Connected | None = None
        self._announced = False
        self._turn_open = False  # between turn.started and its final event
        self._cancel_next = False  # a cancel() while idle that is meant for the next run
        self._closed = False
        self._checkpoints = checkpoints_for(self.settings, self._prepared)

    # -- what the caller sees ----------------------------------------------------------------

    @property
    def thread_id(self) -> str:
        return self._prepared.thread_id

    @property
    def usage(self) -> Usage:
        """The thread's cumulative usage (a resumed thread includes earlier runs)."""
        if self._connected is not None:
            return Usage.of(self._connected.client.totals)
        if self._prepared.resumed is not None:
            return Usage.of(self._prepared.resumed.usage)
        return Usage()

    @property
    def history(self) -> list[dict[str, Any]]:
        """A copy of the messages the model will see next (after any compaction), secrets
        redacted (unless redact_results=False)."""
        return self._clean([dict(m) for m in self._prepared.history])

    @property
    def running(self) -> bool:
        return self._busy.locked()

    @property
    def cancel_requested(self) -> bool:
        return self._cancellation.is_set()

    @property
    def pending_tool_calls(self) -> list[ev.PendingToolCall]:
        """The calls a paused turn waits for (also after resuming its thread elsewhere)."""
        paused = self._paused()
        return self._pending(paused.calls) if paused is not None else []

    # -- turns -------------------------------------------------------------------------------

    def run(self, instruction: str | None = None, *, images: Sequence[str | Path] = (),
            output_schema: dict[str, Any] | None = None,
            messages: Sequence[Mapping[str, Any]] = ()) -> RunResult:
        """Work on `instruction` until done (or failed, interrupted, out of limits).

        images: image files sent with the instruction. output_schema: a JSON schema the
        final answer must match (one correction round, then the turn fails).
        messages: a conversation to start from (AgentB's initialMessages, hermes'
        conversation_history): OpenAI-style user, assistant and tool messages added to the
        thread before the turn. Without `instruction`, the last of them (a user message
        with text) is the instruction.
        """
        work, text = self._turn_work(instruction, images, output_schema, messages)
        self._acquire()
        try:
            return self._run_turn(work, None, text)
        finally:
            self._busy.release()

    def stream(self, instruction: str | None = None, *, images: Sequence[str | Path] = (),
               output_schema: dict[str, Any] | None = None,
               messages: Sequence[Mapping[str, Any]] = (),
               format: EventFormat = "codex") -> "TurnStream":  # noqa: A002 - the API's word
        """The same turn as run(), as an iterator over its events. format="codex": the CLI's
        event objects (`event.model_dump_json()` is the JSONL line), ending with
        turn.completed, turn.failed or turn.requires_action. format="agentb": AgentB's
        events (baseagent.agentb, docs/AGENTB.md). `.result` then holds the RunResult.
        Closing the stream early cancels the turn. Whatever is raised inside the run ends
        it with its final event: the iteration finishes, and `.result` says why.
        """
        work, text = self._turn_work(instruction, images, output_schema, messages)
        check_format(format)
        self._acquire()
        return self._stream(lambda listener: self._run_turn(work, listener, text), format)

    def _turn_work(self, instruction: str | None, images: Sequence[str | Path],
                   output_schema: dict[str, Any] | None,
                   messages: Sequence[Mapping[str, Any]]
                   ) -> tuple[Callable[[Loop], TurnOutcome], str]:
        """The turn to run and its instruction's text: `messages` checked (InputError),
        then added to the thread before the instruction."""
        from baseagent.core.initial import initial_messages

        earlier, instruction = initial_messages(messages, instruction)
        turn = checked_turn_input(self._paused(), instruction, images, output_schema)

        def work(loop: Loop) -> TurnOutcome:
            connected = self._connected
            for message in earlier:
                loop.history.append(message)
                if connected is not None and connected.session is not None:
                    connected.session.message(message)
            return loop.run_turn(turn)

        return work, turn.text

    def submit_tool_outputs(self, outputs: Mapping[str, Any]) -> RunResult:
        """Continue the turn that paused for tools the caller runs: `outputs` maps each
        pending call id to its output (text; anything else is sent as JSON). Outputs for
        unknown ids, or missing ones, raise InputError and nothing runs."""
        checked = self._check_outputs(outputs)
        self._acquire()
        try:
            return self._run_turn(lambda loop: loop.continue_turn(checked), None)
        finally:
            self._busy.release()

    def stream_tool_outputs(self, outputs: Mapping[str, Any], *,
                            format: EventFormat = "codex") -> "TurnStream":  # noqa: A002
        """submit_tool_outputs() as a stream of events (see stream())."""
        checked = self._check_outputs(outputs)
        check_format(format)
        self._acquire()
        return self._stream(
            lambda listener: self._run_turn(lambda loop: loop.continue_turn(checked), listener),
            format)

    def chat(self, message: str) -> str:
        """The next turn of this thread, answered as text; raises TurnError (with the
        RunResult) when the turn does not complete."""
        result = self.run(message)
        if not result.ok:
            raise TurnError(result) from result.exception
        return result.final_message or ""

    # -- the context, on request (the interactive /compact and /status) ------------------------

    def compact(self) -> str:
        """Summarise this thread's history now (the next turn starts from the summary); says
        what happened. The context policy must offer it (the built-in one does)."""
        self._acquire()
        try:
            connected = self._connect()
            compact_now = getattr(connected.loop.compactor, "compact_now", None) \
                if connected is not None else None
            if compact_now is None:
                return "not compacted: this thread's context policy does not compact on request"
            return str(compact_now(self._prepared.history))
        finally:
            self._busy.release()

    def context_occupancy(self) -> tuple[int, int] | None:
        """(tokens the next prompt holds, tokens a prompt may use) once the model is
        connected (after a turn); None before, or under a context policy that cannot say."""
        connected = self._connected
        occupancy = getattr(connected.loop.compactor, "occupancy", None) \
            if connected is not None else None
        return occupancy(self._prepared.history) if occupancy is not None else None

    # -- checkpoints ---------------------------------------------------------------------------

    def diff(self, session: bool = False) -> Diff:
        """What the last turn that changed the workspace changed (session=True: every turn
        of this thread, not undone): a `baseagent.checkpoints.Diff` (`str()` is the summary
        and the unified diff, `.files`, `.text`). docs/CHECKPOINTS.md."""
        self._acquire()
        try:
            return self._checkpoints.diff(session)
        finally:
            self._busy.release()

    def undo(self) -> Undone:
        """Put the workspace back as it was before the last turn that changed it (again: the
        one before); returns what was put back (`str()` says it). Raises UndoRefused, having
        changed nothing, when a file changed since that turn ended (work done outside the
        agent would be lost), CheckpointError when there is nothing to undo."""
        self._acquire()
        try:
            return self._checkpoints.undo()
        finally:
            self._busy.release()

    @property
    def checkpoint_note(self) -> str | None:
        """Why the last turn has no checkpoint (a workspace too big to record), else None."""
        return self._checkpoints.note

    def cancel(self, reason: str = "cancelled", signal_number: int | None = None, *,
               next_run: bool = False) -> None:
        """Stop the running turn from any thread: the model call is abandoned, the running
        command's process group is killed, and the turn ends `interrupted`. Safe to call
        from a signal handler. Called while no turn runs, it stops nothing: the next run()
        starts afresh (as AgentB resets its flag at each run), unless `next_run=True` (a
        task cancelled before it starts) or it came with a `signal_number` (a signal
        handler's: the process is stopping, so the run about to start stops too)."""
        if (next_run or signal_number is not None) and not self.running:
            self._cancel_next = True
        self._cancellation.cancel(reason, signal_number)

    def kill_processes(self, grace: float = KILL_GRACE_SECONDS) -> list[int]:
        """End every process this agent's commands started that is still alive (background
        jobs included): SIGTERM, then SIGKILL after `grace` seconds (at once when 0). A
        finished turn leaves background processes alone (starting a server can be the
        task); an interrupted one calls this itself. Also kills the MCP servers it
        started (the process is about to exit). Safe in a signal handler."""
        self._prepared.sources.kill()
        return self._processes.kill_all(grace)

    def close(self) -> None:
        """Cancel a running turn, wait for it, close the session record, and stop the tool
        sources (MCP servers and their process trees, OpenAPI clients)."""
        if self._closed:
            return
        if self.running:
            self.cancel("agent closed")
        with self._busy:
            self._closed = True
            # What finished commands left running in the background may outlive the agent
            # now (an interrupted turn has already ended it all).
            self._processes.release()
            if self._connected is not None:
                assembly.disconnect(self._connected)
            self._checkpoints.close()
            self._finalizer()

    def __enter__(self) -> "Agent":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    def _acquire(self) -> None:
        if self._closed:
            raise AgentBusyError("this agent is closed")
        if not self._busy.acquire(blocking=False):
            raise AgentBusyError("a turn of this agent is already running")
        if self._cancellation.is_set() and not self._cancel_next:
            # A cancel() made while no turn ran was meant for a turn that has ended (AgentB
            # resets the flag as each run starts); one for the next run (a signal's, a
            # batch worker's) stands.
            self._cancellation.reset()
        self._cancel_next = False

    def _paused(self) -> Paused | None:
        if self._connected is not None:
            return self._connected.loop.paused
        return self._prepared.resumed.paused if self._prepared.resumed is not None else None

    def _check_outputs(self, outputs: Mapping[str, Any]) -> dict[str, str]:
        paused = self._paused()
        if paused is None:
            raise InputError("no turn of this thread is waiting for tool outputs")
        return check_outputs(paused.calls, outputs)

    def _stream(self, run_turn: Callable[[EventListener], RunResult],
                format: EventFormat) -> TurnStream:  # noqa: A002
        """A turn on a worker thread, its events as an iterator; the busy lock (held by
        the caller) is released when it ends."""
        return TurnStream(run_turn, self._busy.release, self.cancel,
                          f"baseagent-turn-{self.thread_id[:8]}", format)

    def _run_turn(self, work: Callable[[Loop], TurnOutcome],
                  listener: EventListener | None, instruction: str | None = None) -> RunResult:
        """One turn (or the continuation of a paused one: no `instruction`), with the busy
        lock held by the caller. `listener` gets the turn's events (and the engine's, if it
        maps them)."""
        collect = Collect()
        items = collect.items
        self._turn_listeners = [collect] + ([listener] if listener else [])
        self._callback_error = None
        self._turn_open = False
        before = self.usage
        raised: BaseException | None = None
        self._checkpoints.begin(instruction or "", continued=instruction is None)
        outcome: TurnOutcome | None = None
        try:
            connected = self._connect()
            if connected is None:  # cancelled before the model was reachable
                return RunResult("interrupted", self.thread_id, total_usage=before,
                                 error=self._clean(f"interrupted ({self._cancellation.reason})"))
            if not self._announced:
                self._announced = True
                self._emitter.thread_started(self.thread_id)
                for notice in connected.notices:
                    self._emitter.notice(notice)
            outcome = work(connected.loop)
        except RecordWriteError as exc:  # before the turn began (the loop handles the rest)
            outcome = TurnOutcome("failed", error=str(exc))
            self._emitter.run_failed(str(exc))
        except Exception as exc:  # noqa: BLE001 - any other error ends the run with an event
            if isinstance(exc, (ConfigError, InputError, AgentBusyError)) \
                    and not self._turn_open:
                raise  # the caller's configuration or input, found before the turn began
            raised = exc
            outcome = fail_unexpectedly(exc, self.thread_id, self._connected, self._emitter,
                                        self._turn_open)
        finally:
            self._end_turn()
            self._checkpoints.end(paused=outcome is not None
                                  and outcome.status == "requires_action")
        if self._callback_error is not None:
            raise self._callback_error
        total = self.usage
        # Events are redacted by the emitter; what is handed back directly is redacted here
        # (a model that repeats a key, a provider's 401 that quotes it).
        return RunResult(outcome.status, self.thread_id, self._clean(outcome.final_message),
                         items, total.minus(before), total, self._clean(outcome.error),
                         self._pending(outcome.pending), exception=raised)

    def _clean(self, value: Any) -> Any:
        """`value` (text, or JSON-like data) with the run's secrets redacted, unless the
        caller asked for raw results."""
        if value is None or not self._redact_results:
            return value
        redactor = self._prepared.redactor
        return redactor.text(value) if isinstance(value, str) else redactor.data(value)

    def _pending(self, calls: Sequence[Any]) -> list[ev.PendingToolCall]:
        events = [pending_call(c) for c in calls]
        if not self._redact_results:
            return events
        return [ev.PendingToolCall.model_validate(self._clean(e.model_dump(mode="json")))
                for e in events]

    def _connect(self) -> assembly.Connected | None:
        if self._connected is None:
            self._connected = self._builder.connect(
                emitter=self._emitter, processes=self._processes,
                cancelled=self._cancellation.token)
            if self._connected is not None:  # None: cancelled before the model was reached
                # The turn's checkpoint, before the first call that may change the workspace.
                self._connected.tool_context.before_change = self._checkpoints.before_change
        return self._connected

    def _end_turn(self) -> None:
        self._turn_listeners = []
        if self._cancellation.is_set():
            # Interrupted: nothing the turn's commands started may outlive it. Then the
            # agent is ready for the next turn.
            self._processes.kill_all(KILL_GRACE_SECONDS)
            self._cancellation.reset()
        connected = self._connected
        if connected is not None and connected.session is not None:
            try:
                assembly.record_usage(connected.session, connected.client.totals)
            except RecordWriteError:
                pass  # record_error says so
            connected.session.sync()

    @property
    def record_error(self) -> str | None:
        """Why the session record stopped being written (a full disk), or None: it is
        complete up to its last line, and resumable from there."""
        connected = self._connected
        if connected is None or connected.session is None:
            return None
        return connected.session.failure

    def _deliver(self, event: ev.ThreadEvent) -> None:
        """Hand an event to the turn's listeners and the user's callback (the Codex events,
        unless it takes AgentB's)."""
        if isinstance(event, ev.TurnStarted):
            self._turn_open = True
        elif isinstance(event, (ev.TurnCompleted, ev.TurnFailed, ev.TurnRequiresAction)):
            self._turn_open = False
        for listener in self._turn_listeners:
            listener.emit(event)
        if self._agentb_callback is None:
            self._call_back(event)

    def _call_back(self, event: Any) -> None:
        """The user's callback. One that raises cancels the turn; run() re-raises its
        exception once the turn is closed."""
        if self._on_event is not None and self._callback_error is None:
            try:
                self._on_event(event)
            except Exception as exc:  # noqa: BLE001 - re-raised from run() after cleanup
                self._callback_error = exc
                self.cancel(f"on_event callback raised {type(exc).__name__}")

    def _deliver_run_event(self, event: RunEvent) -> None:
        """Hand an engine event to the turn's listeners that map them (AgentB's stream), and
        to the callback's AgentB mapper."""
        for listener in self._turn_listeners:
            if listener.run_events:
                listener.run_event(event)
        if self._agentb_callback is not None:
            self._agentb_callback.run_event(event)


class _Dispatch(EventListener):
    """The Agent's own listener on its emitter (after the sinks)."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    @property  # type: ignore[override]
    def run_events(self) -> bool:
        """Whether this turn has a listener that maps the engine's events."""
        return self._agent._agentb_callback is not None \
            or any(listener.run_events for listener in self._agent._turn_listeners)

    def emit(self, event: ev.ThreadEvent) -> None:
        self._agent._deliver(event)

    def run_event(self, event: RunEvent) -> None:
        self._agent._deliver_run_event(event)


__all__ = ["Agent", "ExternalTool", "RunResult", "TurnStream", "Usage"]
