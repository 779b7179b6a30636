"""The server's threads: each one a library `Agent` (no second engine), its event logs and
the questions it waits on.

A turn runs on threads of its own (the Agent's stream worker, and one that drains it), never
on the server's event loop and never tied to a connection: clients come and go, the turn
goes on. What a turn says goes to the thread's two logs (serve/log.py), the Codex events and
AgentB's, through two listeners on the Agent's emitter. Approval questions are answered
through the API: the Agent's approver (`Gate`) blocks the turn's thread until an answer, a
cancel, or the thread's closing.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from baseagent.agent import Agent, TurnStream
from baseagent.emitting import events as engine
from baseagent.errors import AgentBusyError, InputError
from baseagent.output import events as ev
from baseagent.emitting.interface import EventListener
from baseagent.output.jsonl import json_line
from baseagent.serve.log import EventLog
from baseagent.serve.transcript import recorded_events
from baseagent.tools.approval import ApprovalAnswer, ApprovalRequest

# How often a waiting approval looks whether its turn was cancelled.
APPROVAL_POLL_S = 0.1
# How long a new turn waits for the previous one to close after its last event.
TURN_CLOSE_WAIT_S = 5.0
# Live threads at once (each holds an Agent, its logs and, while it runs, two threads).
DEFAULT_MAX_THREADS = 64

# What a client may set on a new thread: the CLI's and config's names (config/settings.py).
THREAD_OPTIONS = frozenset({
    "model", "api_base", "cwd", "sandbox", "writable_roots", "sandbox_network",
    "approval_policy", "max_iterations", "cost_limit", "verify", "temperature", "max_tokens",
    "context_window", "reasoning_effort", "prompt_profile", "tool_choice",
    "enabled_toolsets", "disabled_toolsets", "append_system_prompt", "shell_timeout_ms",
    "model_transport", "all_tools_failed",
})


class NotFound(LookupError):
    """No such thread, approval or file (404)."""


class Conflict(RuntimeError):
    """The thread is not in a state for that (409)."""


class Full(RuntimeError):
    """Too many live threads (503)."""


@dataclass
class Question:
    """An approval question a turn waits on."""

    item_id: str
    request: ApprovalRequest
    shown: dict[str, Any] = field(default_factory=dict)  # its item (redacted by the emitter)
    answered: threading.Event = field(default_factory=threading.Event)
    answer: ApprovalAnswer | None = None

    def public(self) -> dict[str, Any]:
        r, shown = self.request, self.shown
        return {"id": self.item_id, "kind": r.kind,
                **{k: shown.get(k, getattr(r, k)) for k in ("command", "cwd", "reason", "prefix")}}


class Gate:
    """The Agent's approver: a question waits (on the turn's thread) for the API's answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, Question] = {}
        # The approval_request items just reported, by the thread that reported them: the
        # approver is called next on that same thread (tools/approval.py), with its command.
        self._reported: dict[int, dict[str, Any]] = {}
        self._numbered = 0
        self.agent: Agent | None = None
        self.closed = False

    def reported(self, item: dict[str, Any]) -> None:
        with self._lock:
            self._reported[threading.get_ident()] = item

    def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        with self._lock:
            shown = self._reported.pop(threading.get_ident(), {})
            item_id = str(shown.get("id", ""))
            if not item_id or item_id in self._open:
                self._numbered += 1  # a question no item of this stream announced
                item_id, shown = f"approval_{self._numbered}", {}
            question = Question(item_id, request, shown)
            self._open[question.item_id] = question
        try:
            while not question.answered.wait(APPROVAL_POLL_S):
                if self.closed or (self.agent is not None and self.agent.cancel_requested):
                    return ApprovalAnswer("denied", "the turn was cancelled")
            assert question.answer is not None
            return question.answer
        finally:
            with self._lock:
                self._open.pop(question.item_id, None)

    def answer(self, item_id: str, answer: ApprovalAnswer) -> None:
        with self._lock:
            question = self._open.get(item_id)
            if question is None or question.answered.is_set():
                raise NotFound(f"no open approval question {item_id!r} in this thread")
            question.answer = answer
            question.answered.set()

    def open_questions(self) -> list[dict[str, Any]]:
        with self._lock:
            return [q.public() for q in self._open.values()]


class CodexLog(EventListener):
    """The Codex events into the thread's log, with the server's two additions: the turn's
    instruction (`turn.input`, after `turn.started`) and a file change's diff
    (`item.detail`), which the Codex wire has no place for."""

    run_events = True

    def __init__(self, log: EventLog, gate: Gate) -> None:
        self.log = log
        self._gate = gate
        self._instruction: str | None = None
        self.ended = threading.Event()  # the running turn has sent its last event

    def run_event(self, event: engine.RunEvent) -> None:
        if isinstance(event, engine.TurnStarted) and not event.continued:
            self._instruction = event.instruction

    def emit(self, event: ev.ThreadEvent) -> None:
        data = event.model_dump(mode="json")
        if isinstance(event, (ev.TurnCompleted, ev.TurnFailed, ev.TurnRequiresAction)):
            self.ended.set()  # before a client can read it
        self.log.append(data["type"], json_line(data))
        if isinstance(event, ev.TurnStarted) and self._instruction is not None:
            self.add({"type": "turn.input", "text": self._instruction})
            self._instruction = None
        elif isinstance(event, ev.ItemStarted) and event.item.type == "approval_request":
            self._gate.reported(data["item"])

    def detail(self, item_id: str, text: str) -> None:
        self.add({"type": "item.detail", "item_id": item_id, "text": text})

    def add(self, data: dict[str, Any]) -> None:
        self.log.append(data["type"], json_line(data))


class AgentBLog(EventListener):
    """AgentB's events (output/agentb.py's mapper) into the thread's other log."""

    run_events = True

    def __init__(self, log: EventLog) -> None:
        from baseagent.output.agentb import AgentBMapper

        self.log = log
        self._mapper = AgentBMapper(self._put)

    def _put(self, event: Any) -> None:
        data = event.model_dump(mode="json", by_alias=True)
        self.log.append(str(data.get("type", "message")), json_line(data))

    def emit(self, event: ev.ThreadEvent) -> None:
        self._mapper.emit(event)

    def run_event(self, event: engine.RunEvent) -> None:
        self._mapper.run_event(event)


class ThreadHandle:
    """One live thread: its Agent, logs, approvals and the turn running, if any."""

    def __init__(self, agent: Agent, gate: Gate, codex: CodexLog, agentb: AgentBLog,
                 options: Mapping[str, Any]) -> None:
        self.agent = agent
        self.gate = gate
        self.codex = codex
        self.agentb = agentb
        self.options = dict(options)
        self.status = "requires_action" if agent.pending_tool_calls else "idle"
        self.last_error: str | None = None
        self.title = ""
        self.updated = time.time()
        self._lock = threading.Lock()
        self._drain: threading.Thread | None = None

    @property
    def id(self) -> str:
        return self.agent.thread_id

    def log(self, fmt: str) -> EventLog:
        return self.agentb.log if fmt == "agentb" else self.codex.log

    # -- turns ------------------------------------------------------------------------------

    def start_turn(self, text: str) -> None:
        with self._lock:
            self._check_idle()
            self._run(self.agent.stream(text))
            self.title = self.title or text[:200]

    def submit_outputs(self, outputs: Mapping[str, Any]) -> None:
        with self._lock:
            if self.agent.running and self.codex.ended.is_set():
                self.wait_idle(TURN_CLOSE_WAIT_S)
            if self.agent.running:
                raise Conflict("a turn of this thread is running")
            self._run(self.agent.stream_tool_outputs(outputs))

    def cancel(self) -> None:
        if not self.agent.running:
            raise Conflict("no turn of this thread is running")
        self.agent.cancel("cancelled through the API")

    def answer(self, item_id: str, decision: str, note: str) -> None:
        self.gate.answer(item_id, ApprovalAnswer(decision, note))  # type: ignore[arg-type]

    def _check_idle(self) -> None:
        if self.agent.running and self.codex.ended.is_set():
            # The turn has said its last word and is closing (its record, its usage): a
            # client that starts the next one on seeing turn.completed waits for that.
            self.wait_idle(TURN_CLOSE_WAIT_S)
        if self.agent.running:
            raise Conflict("a turn of this thread is running: wait for it, or cancel it")
        if self.agent.pending_tool_calls:
            ids = ", ".join(c.id for c in self.agent.pending_tool_calls)
            raise Conflict(f"the last turn waits for the outputs of {ids}: "
                           "POST them to /threads/{id}/tool_outputs first")

    def _run(self, stream: TurnStream) -> None:
        """Drain the turn's stream on a thread of its own (the events reach the logs through
        the listeners); the turn belongs to no connection."""
        self.status = "running"
        self.codex.ended.clear()
        self.updated = time.time()
        self._drain = threading.Thread(target=self._finish, args=(stream,),
                                       name=f"serve-turn-{self.id[:8]}", daemon=True)
        self._drain.start()

    def _finish(self, stream: TurnStream) -> None:
        try:
            for _ in stream:
                pass
            result = stream.result
            self.status = "requires_action" if result and result.status == "requires_action" \
                else "idle"
            self.last_error = result.error if result else None
        except Exception as exc:  # noqa: BLE001 - the turn's own failure, told to the clients
            self.status = "idle"
            self.last_error = f"{type(exc).__name__}: {exc}"
            self.codex.add({"type": "error", "message": self.last_error})
        finally:
            self.updated = time.time()

    @property
    def resting(self) -> bool:
        """Nothing runs or waits: closing it loses nothing the record does not keep."""
        return not self.agent.running and not self.agent.pending_tool_calls

    def wait_idle(self, timeout: float | None = None) -> bool:
        drain = self._drain
        if drain is not None:
            drain.join(timeout)
            return not drain.is_alive()
        return True

    def close(self) -> None:
        self.gate.closed = True
        self.agent.close()
        self.wait_idle(5)
        self.codex.log.close()
        self.agentb.log.close()

    # -- what the API shows -------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        usage = self.agent.usage
        return {
            "id": self.id, "live": True, "status": self.status, "title": self.title,
            "model": self.agent.settings.model, "cwd": str(self.agent.settings.cwd),
            "sandbox": self.agent.settings.sandbox,
            "approval_policy": self.agent.settings.approval_policy,
            "usage": {"input_tokens": usage.input_tokens,
                      "cached_input_tokens": usage.cached_input_tokens,
                      "output_tokens": usage.output_tokens},
            "cost_usd": usage.cost_usd,
            "last_error": self.last_error,
            "approvals": self.gate.open_questions(),
            "pending_tool_calls": [c.model_dump(mode="json")
                                   for c in self.agent.pending_tool_calls],
            "last_event_id": {"codex": f"{self.codex.log.epoch}.{self.codex.log.last_number}",
                              "agentb": f"{self.agentb.log.epoch}."
                                        f"{self.agentb.log.last_number}"},
            "notes": list(self.agent.notes),
        }


@dataclass
class ServeSettings:
    """What the entry point hands the app: the environment and config file the threads
    resolve their settings from (as `Agent.from_config` does for the CLI), the defaults a
    new thread gets, and the limits."""

    env: Mapping[str, str]
    config_file: Path | None = None
    profile: str | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)
    max_threads: int = DEFAULT_MAX_THREADS
    log_bytes: int = 8 * 1024 * 1024


class Registry:
    """The live threads, and the store the recorded ones are read from."""

    def __init__(self, settings: ServeSettings) -> None:
        from baseagent.config.load import load_agent_config
        from baseagent.storage import open_storage

        self.settings = settings
        base = load_agent_config(self._thread_defaults({}), env=settings.env,
                                 config_file=settings.config_file, profile=settings.profile)
        self.store = open_storage(base)
        self._lock = threading.Lock()
        self._live: dict[str, ThreadHandle] = {}

    def _thread_defaults(self, options: Mapping[str, Any]) -> dict[str, Any]:
        return {**self.settings.defaults, **options}

    # -- live threads ----------------------------------------------------------------------

    def create(self, options: Mapping[str, Any], external_tools: list[Any] | None = None,
               approver: str = "api") -> ThreadHandle:
        unknown = sorted(set(options) - THREAD_OPTIONS)
        if unknown:
            raise InputError(f"unknown thread option {unknown[0]!r} (allowed: "
                             f"{', '.join(sorted(THREAD_OPTIONS))})")
        return self._open(self._thread_defaults(options), None, external_tools or [],
                          approver)

    def resume(self, thread_id: str) -> ThreadHandle:
        key = self.resolve(thread_id)
        with self._lock:
            if key in self._live:
                return self._live[key]
        return self._open(dict(self.settings.defaults), key, [], "api")

    def _open(self, options: dict[str, Any], thread_id: str | None,
              external_tools: list[Any], approver: str) -> ThreadHandle:
        self._make_room()
        from baseagent.config.load import load_agent_config, with_person_present

        gate = Gate()
        codex = CodexLog(EventLog(self.settings.log_bytes), gate)
        agentb = AgentBLog(EventLog(self.settings.log_bytes))
        explicit = set(options)
        config = load_agent_config(options, env=self.settings.env,
                                   config_file=self.settings.config_file,
                                   profile=self.settings.profile)
        # A person answers from the page: workspace-write, on-request, as at the terminal,
        # unless the request, the environment or the config file chose otherwise.
        config = with_person_present(config)  # type: ignore[arg-type]
        resume = None
        notes: list[str] = []
        if thread_id is not None:
            from baseagent.records.replay import settings_for_resume
            from baseagent.storage import load_thread

            resume = load_thread(self.store, thread_id)
            config, notes = settings_for_resume(config, resume, explicit)
        agent = Agent.from_settings(
            config, resume=resume, notes=notes, env=self.settings.env, sinks=[codex, agentb],
            external_tools=external_tools, storage=self.store,
            approver="requires_action" if approver == "requires_action" else gate)
        gate.agent = agent
        if resume is not None:
            _seed(codex, self.store, agent.thread_id)
        handle = ThreadHandle(agent, gate, codex, agentb, options)
        if resume is not None:
            from baseagent.sessions import instructions_of

            titles = instructions_of(self.store.load_records(handle.id))
            handle.title = titles[0][:200] if titles else ""
        with self._lock:
            self._live[handle.id] = handle
        return handle

    def _make_room(self) -> None:
        """At the cap, the live thread idle longest (no turn running, no question or tool
        call waiting) is closed: its record stays, and resuming it makes it live again."""
        with self._lock:
            if len(self._live) < self.settings.max_threads:
                return
            idle = sorted((h for h in self._live.values() if h.resting), key=lambda h: h.updated)
            if not idle:
                raise Full(f"{self.settings.max_threads} threads are live and busy: close one "
                           "(DELETE /api/threads/{id}) or wait for a turn to end")
            oldest = self._live.pop(idle[0].id)
        oldest.close()

    def get(self, thread_id: str) -> ThreadHandle:
        with self._lock:
            handle = self._live.get(thread_id)
        if handle is None:
            raise NotFound(f"thread {thread_id!r} is not live (resume it: "
                           "POST /threads/{id}/resume)")
        return handle

    def live(self) -> list[ThreadHandle]:
        with self._lock:
            return list(self._live.values())

    def close_thread(self, thread_id: str) -> None:
        with self._lock:
            handle = self._live.pop(thread_id, None)
        if handle is None:
            raise NotFound(f"thread {thread_id!r} is not live")
        handle.close()

    def close(self) -> None:
        with self._lock:
            handles, self._live = list(self._live.values()), {}
        for handle in handles:
            handle.close()
        self.store.close()

    # -- recorded threads -----------------------------------------------------------------

    def resolve(self, thread_id: str) -> str:
        from baseagent.records.replay import SessionLoadError

        with self._lock:
            if thread_id in self._live:
                return thread_id
        try:
            return self.store.resolve(thread_id)
        except SessionLoadError as exc:
            raise NotFound(str(exc)) from None

    def recorded(self, thread_id: str) -> dict[str, Any]:
        """One recorded thread as the listing shows it."""
        from baseagent.sessions import summarize

        key = self.resolve(thread_id)
        for info in self.store.list_threads():
            if info.thread_id == key:
                return _recorded_entry(summarize(self.store, info))
        raise NotFound(f"no thread {thread_id!r}")

    def listing(self) -> list[dict[str, Any]]:
        from baseagent.sessions import list_sessions

        live = {h.id: h for h in self.live()}
        out = [h.summary() for h in sorted(live.values(), key=lambda h: h.updated,
                                           reverse=True)]
        for s in list_sessions(self.store):
            if s.thread_id in live:
                continue
            out.append(_recorded_entry(s))
        return out

    def transcript(self, thread_id: str) -> list[dict[str, Any]]:
        """The recorded thread as the Codex events of its record, each turn's instruction
        as a `turn.input` after its `turn.started` (what the page renders)."""
        return recorded_events(self.store.load_records(self.resolve(thread_id)))

    def export(self, thread_id: str, fmt: str) -> Any:
        from baseagent.export import export_thread

        return export_thread(self.store, self.resolve(thread_id), fmt)


def _recorded_entry(s: Any) -> dict[str, Any]:
    """A recorded thread (a sessions.SessionSummary) as the API shows it."""
    return {"id": s.thread_id, "live": False, "status": s.last_status or "idle",
            "model": s.model, "cwd": s.cwd, "created": s.created, "updated": s.updated,
            "turns": s.turns, "title": (s.instructions[0] if s.instructions else "")[:200],
            "usage": {"input_tokens": s.input_tokens,
                      "cached_input_tokens": s.cached_input_tokens,
                      "output_tokens": s.output_tokens},
            "cost_usd": s.cost_usd, "last_error": s.last_error}


def _seed(codex: CodexLog, store: Any, thread_id: str) -> None:
    """A resumed thread's log starts with what its record holds, so a client subscribing
    sees the conversation so far before the new turns."""
    for data in recorded_events(store.load_records(thread_id)):
        codex.log.append(str(data.get("type", "")), json_line(data))


__all__ = ["AgentBusyError", "Conflict", "Full", "NotFound", "Registry", "ServeSettings",
           "ThreadHandle"]
