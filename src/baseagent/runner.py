"""The CLI's process around one library Agent: stdout, stderr, signals, exit codes.

Everything process-wide lives here and in cli.py / exec_cli.py, never in the library: fd 1
is claimed for the event stream, stderr is routed through the redactor, signal handlers
cancel the run, and the run's outcome becomes the process exit code. The run itself is
`baseagent.Agent`, built from the resolved Settings (compose/ is its composition
root), so the CLI, `exec`, the library and batch workers run the same code.
"""
from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from baseagent.config.settings import Settings
from baseagent.exit_codes import exit_code_for_status

if TYPE_CHECKING:  # the sink interface (emitting/interface.py); imported with the sink itself
    from baseagent.emitting.interface import EventListener
    from baseagent.output.term import TerminalCaps


def wants_terminal(settings: Settings) -> bool:
    """A person is watching: stdout is a terminal and neither --json nor another event
    vocabulary was asked for."""
    return not settings.json_output and settings.event_format == "codex" \
        and sys.stdout.isatty()


def terminal_caps(env: Any = None) -> TerminalCaps:
    """What the terminal on stdout can do (colour, moving the cursor), from the environment
    (NO_COLOR, TERM, COLUMNS, LINES): read here, at the entry, and handed to the header and
    the renderer."""
    from baseagent.output.term import terminal_caps as caps_of

    return caps_of(os.environ if env is None else env, sys.stdout.isatty())


def make_sink(json_output: bool, event_format: str = "codex") -> EventListener:
    """JSONL unless a person is watching a terminal (and did not ask for --json); AgentB's
    vocabulary (`--event-format agentb`) is always JSONL.

    The JSONL sink claims stdout: from then on anything else written there goes to stderr.
    """
    if event_format == "agentb":
        from baseagent.output.agentb import AgentBSink
        from baseagent.output.jsonl import JsonlSink, claim_stdout

        return AgentBSink(JsonlSink(claim_stdout()))
    if json_output or not sys.stdout.isatty():
        from baseagent.output.jsonl import JsonlSink, claim_stdout

        return JsonlSink(claim_stdout())
    from baseagent.output.pretty import PrettySink

    return PrettySink(caps=terminal_caps())


def early_header(settings: Settings, resume: Any = None, notes: Sequence[str] = (),
                 caps: TerminalCaps | None = None) -> str:
    """On a terminal, before the agent (and litellm) is imported, and after the run's
    builder has checked the model string (the error is all there is to say): draw the
    header (coloured when `caps`, default the process's terminal, take colour). Returns
    the thread id it showed (a new one unless resuming)."""
    from baseagent import __version__
    from baseagent.core.ids import new_thread_id
    from baseagent.output.header import print_header

    # The id the Agent is then built with: a UUIDv7 like every thread id (core/ids.py).
    thread_id = resume.thread_id if resume is not None else new_thread_id()
    caps = caps or terminal_caps()
    print_header(sys.stdout, color=caps.color, width=caps.width or _columns(),
                 version=__version__, thread_id=thread_id, model=settings.model,
                 cwd=str(settings.cwd), sandbox=settings.sandbox, api_base=settings.api_base,
                 resumed_turns=resume.turns if resume is not None else None, notes=notes)
    return thread_id


def run(settings: Settings, instruction: str | None, *, resume: Any = None,
        images: Sequence[Path] = (), output_schema: dict[str, Any] | None = None,
        notes: Sequence[str] = (), external_tools: Sequence[Any] = (),
        tool_outputs: dict[str, Any] | None = None, approver: Any = None) -> int:
    """Run one instruction headless or on a terminal; returns the process exit code.

    `resume` (a core.records.LoadedSession) continues that thread; `notes` say which flags
    override its recorded settings (on stderr, or in the header on a terminal). `images`
    go with the instruction; `output_schema` holds the final answer to a JSON schema.
    `external_tools` are tools the caller runs (exit code 3 when the model calls one);
    `tool_outputs` (instead of an instruction) continues the resumed thread's paused turn.
    `approver` answers approval questions (the terminal's, when a person is there).
    Raises ConfigError or InputError (exit code 2 at the caller) before anything is printed
    on stdout.
    """
    # The run's builder (compose/) is cheap to make; it checks the model string
    # once, here, before anything heavy is imported and before a header is drawn.
    from baseagent.compose.builder import RunBuilder

    builder = RunBuilder(settings, env=os.environ, approver=approver)
    builder.check_model_string()
    thread_id = early_header(settings, resume, notes) if wants_terminal(settings) else None
    from baseagent.hardening import harden_process
    from baseagent.output.redact import install_stderr

    # The keys live in this process: no other process of the user may read its memory or
    # environment, and no core dump may carry them.
    harden_process()
    from baseagent.tools.procs import adopt_orphans, end_descendants

    # What a command leaves behind after killing its supervisor comes back here, so an
    # interrupted run still ends it (below, and on a second signal).
    adopt_orphans()
    # Before litellm is imported: its log handler binds stderr, its chatter may hit stdout.
    # The run's own redactor: the Agent redacts its events with the same one.
    redactor = builder.redactor
    install_stderr(redactor)
    if settings.verbose:  # the model calls' log (llm/request_log.py), on stderr
        from baseagent.llm.request_log import attach, stderr_handler

        attach(stderr_handler(sys.stderr))
    if thread_id is None:
        for note in notes:
            print(f"baseagent: note: {note}", file=sys.stderr)
    from baseagent.sandbox.policy import unavailable_notice

    notice = unavailable_notice(settings.sandbox)
    if notice:
        print(f"baseagent: warning: {notice}", file=sys.stderr)

    from baseagent.agent import Agent
    from baseagent.signals import SignalGuard

    if tool_outputs is not None:  # bad outputs: a usage error before stdout is claimed
        from baseagent.records.pending import check_outputs

        paused = resume.paused if resume is not None else None
        if paused is None:
            from baseagent.errors import InputError

            raise InputError("--tool-outputs: the resumed thread is not waiting for tool "
                             "outputs")
        check_outputs(paused.calls, tool_outputs)
    # Before stdout is claimed (after that fd 1 is stderr): is stderr a place of its own?
    apart = thread_id is None and streams_apart()
    sink = make_sink(settings.json_output, settings.event_format)
    agent = Agent.from_settings(settings, resume=resume, sinks=[sink], notes=notes,
                                thread_id=thread_id, external_tools=external_tools,
                                builder=builder)
    sink.on_write_error(agent.cancel)  # stdout failing (a full disk, /dev/full): stop
    if thread_id is not None:
        sink.headed(thread_id)
        sink.bind_usage(lambda: agent.usage, resume.turns if resume is not None else 0)
        sink.waiting()  # the model client may still be loading: a sign of life meanwhile
    def hard_exit(code: int) -> None:
        end_descendants(wait=0.5)
        sink.exit_when_idle(code)

    guard = SignalGuard(agent, hard_exit, watchdog=True).install()
    try:
        if tool_outputs is not None:
            result = agent.submit_tool_outputs(tool_outputs)
        else:
            result = agent.run(instruction or "", images=images, output_schema=output_schema)
    finally:
        agent.close()
        guard.close()
        if guard.signal_number is not None:
            end_descendants(grace=0.5)  # interrupted: nothing of the run outlives it
        if thread_id is not None:
            sink.stop_waiting()
        sink.close()
        # Interpreter teardown walks litellm's millions of objects (2-3 s per run, measured);
        # frozen objects are skipped by the final collections.
        gc.freeze()
    hint = resume_hint(settings, agent.thread_id) if thread_id is not None else None
    if hint is not None:  # a person at a terminal: how to go on with this thread
        print(hint, file=sys.stderr)
    if settings.output_last_message is not None and result.final_message is not None:
        # The file is output like any other: a key the model repeated is not written out.
        _write_last_message(settings.output_last_message, redactor.text(result.final_message))
    failure = agent.record_error or sink.failure
    if failure is not None:  # a full disk under the record or stdout: the run ended with it
        print(f"baseagent: error: {failure}", file=sys.stderr)
        return exit_code_for_status("failed", guard.signal_number)
    if apart and result.status in ("failed", "limit"):
        # The reason is in the JSONL, but stdout is often a file nobody is reading yet: one
        # line where the person (or the harness log) looks first.
        from baseagent.textsafe import inert  # a server's or the model's words: shown inert

        print(f"baseagent: error: {inert(result.error or 'the run ' + result.status)}",
              file=sys.stderr)
    return exit_code_for_status(result.status, guard.signal_number)


def resume_hint(settings: Settings, thread_id: str) -> str | None:
    """The command that continues this thread, once its record exists (None with
    --no-session, or before anything was recorded)."""
    from baseagent.compose.builder import session_path

    if not settings.record_session or not session_path(settings, thread_id).is_file():
        return None
    return f"To continue this thread: baseagent --resume {thread_id}"


def streams_apart() -> bool:
    """stdout and stderr are different files (not `2>&1`, not one terminal), so a line on
    stderr neither repeats what the reader sees nor lands inside the JSONL. Streams without
    a file (in-process callers) count as apart."""
    try:
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        return True
    return (out.st_dev, out.st_ino) != (err.st_dev, err.st_ino)


def _columns() -> int | None:
    """The terminal's width on stdout, for the header's line breaks (None: unknown)."""
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns or None
    except (OSError, ValueError):
        return None


def _write_last_message(path: Path, text: str) -> None:
    from baseagent.fsutil import atomic_write

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8", errors="replace"))
    except OSError as exc:
        print(f"baseagent: warning: cannot write {path}: {exc.strerror}", file=sys.stderr)
