"""Wiring: from resolved Settings to a running Agent, and from its outcome to an exit code.

The CLI parses; this module assembles the parts (client, registry, context manager, session
record, sinks) and runs one turn. Nothing here parses argv or reads environment variables
other than to build the child environment for tools.
"""
from __future__ import annotations

import dataclasses
import gc
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baseagent.config.defaults import Settings
from baseagent.core.ids import new_thread_id
from baseagent.core.interrupt import Cancellation
from baseagent.output.emitter import Emitter

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class UsageError(Exception):
    """A problem the user must fix (bad configuration, missing key): exit code 2."""


@dataclass
class RunResult:
    exit_code: int
    thread_id: str | None = None
    final_message: str | None = None


def make_sink(json_output: bool) -> Any:
    """JSONL unless a person is watching a terminal (and did not ask for --json).

    The JSONL sink claims stdout: from then on anything else written there goes to stderr.
    """
    if json_output or not sys.stdout.isatty():
        from baseagent.output.jsonl import JsonlSink, claim_stdout

        return JsonlSink(claim_stdout())
    from baseagent.output.pretty import PrettySink

    return PrettySink()


def run(settings: Settings, instruction: str, *, resume: Any = None,
        images: list[dict[str, Any]] | None = None,
        output_schema: dict[str, Any] | None = None) -> RunResult:
    """Run one instruction headless or on a terminal; returns the process exit code.

    `resume` (a core.resume.LoadedSession) continues that thread: same thread id, its
    history, its usage so far, appending to its record. `images` (image_url content parts)
    go with the instruction; `output_schema` holds the final answer to a JSON schema.
    """
    from baseagent.core import signals
    from baseagent.llm import client as llm
    from baseagent.output.redact import Redactor, install_stderr

    # Before litellm is imported: its log handler binds stderr, its chatter may hit stdout.
    redactor = Redactor.from_environment(os.environ, settings.env_strip, [settings.api_key])
    install_stderr(redactor)
    sink = make_sink(settings.json_output)
    cancellation = Cancellation()
    guard = signals.install(cancellation, getattr(sink, "exit_when_idle", None))
    preload = llm.preload_in_background()  # overlap the slow import with context building
    if not settings.cwd.is_dir():
        raise UsageError(f"working directory does not exist: {settings.cwd}")

    from baseagent.prompts.context import environment_context
    from baseagent.prompts.system import SYSTEM_PROMPT
    from baseagent.tools.base import ToolContext
    from baseagent.tools.registry import ToolRegistry
    from baseagent.tools.env import child_env

    registry = ToolRegistry()
    if resume is not None:
        history: list[dict[str, Any]] = list(resume.history)
    else:
        history = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": environment_context(settings.cwd)},
        ]
    if not signals.wait_unless_cancelled(preload, cancellation):
        guard.close()  # stopped before anything started: nothing to report or record
        return RunResult(signals.exit_code_for(cancellation.signal_number))
    try:
        llm.check_model(settings.model, settings.api_base, settings.api_key)
    except llm.ConfigurationError as exc:
        guard.close()
        raise UsageError(redactor.text(str(exc))) from None

    emitter = Emitter([sink], redact=redactor)
    thread_id = resume.thread_id if resume is not None else new_thread_id()
    client = _model_client(settings, llm, emitter, cancellation, thread_id)
    tool_context = ToolContext(
        cwd=settings.cwd, sandbox=settings.sandbox, shell_timeout_ms=settings.shell_timeout_ms,
        env=child_env(os.environ, settings.env_strip),
        writable_roots=list(settings.writable_roots),
    )
    if resume is not None:
        client.totals = dataclasses.replace(resume.usage)  # usage and cost so far
    session = _open_session(settings, resume, thread_id, redactor, registry, history, client)
    if session is not None:
        emitter.add_listener(session)
    context = _context_manager(settings, llm, client, registry, emitter, session)
    from baseagent.core.exec_turn import ExecAgent

    agent = ExecAgent(client=client, registry=registry, emitter=emitter,
                      tool_context=tool_context, history=history,
                      max_iterations=settings.max_iterations, verify=settings.verify,
                      session=session, cancellation=cancellation, context=context,
                      images=images, output_schema=output_schema)
    emitter.thread_started(thread_id)
    try:
        outcome = agent.run_turn(instruction)
    finally:
        if session is not None:
            _close_session(session, client.totals)
        guard.close()  # after an interrupt: kill what commands left running
        # Interpreter teardown walks litellm's millions of objects (2-3 s per run, measured);
        # frozen objects are skipped by the final collections.
        gc.freeze()
    if settings.output_last_message is not None and outcome.final_message is not None:
        _write_last_message(settings.output_last_message, outcome.final_message)
    return RunResult(_exit_code(outcome.status, cancellation), thread_id, outcome.final_message)


def _model_client(settings: Settings, llm: Any, emitter: Emitter, cancellation: Cancellation,
                  thread_id: str) -> Any:
    from baseagent.core.caching import prompt_cache_params

    return llm.ModelClient(
        model=settings.model, api_base=settings.api_base, api_key=settings.api_key,
        temperature=settings.temperature, max_tokens=settings.max_tokens,
        max_retries=settings.max_retries, retry_base_delay=settings.retry_base_delay,
        retry_max_delay=settings.retry_max_delay,
        retry_backoff_factor=settings.retry_backoff_factor,
        request_timeout=settings.request_timeout,
        stream_idle_timeout=settings.stream_idle_timeout, cost_limit=settings.cost_limit,
        on_notice=emitter.notice, cancelled=cancellation.is_set,
        reasoning_effort=settings.reasoning_effort, tool_call_parser=settings.tool_call_parser,
        extra_params=prompt_cache_params(settings.model, settings.api_base, thread_id),
    )


def _open_session(settings: Settings, resume: Any, thread_id: str, redactor: Any,
                  registry: Any, history: list[dict[str, Any]], client: Any) -> Any:
    """The session record (core/session.py), or None when recording is off. A resumed run
    appends to the record it was loaded from."""
    if not settings.record_session:
        return None
    from baseagent import __version__
    from baseagent.core.session import SessionRecorder

    path = resume.path if resume is not None else settings.session_dir / f"{thread_id}.jsonl"
    session = SessionRecorder(path, redact=redactor.data)
    session.meta(thread_id=thread_id, model=settings.model, cwd=str(settings.cwd),
                 resumed=resume is not None, agent="baseagent", version=__version__,
                 tools=registry.specs())
    if resume is None:
        for message in history:
            session.message(message)
    session.track_usage(lambda: client.totals)
    return session


def _close_session(session: Any, totals: Any) -> None:
    session.usage(**totals.as_record())
    session.close()


def _context_manager(settings: Settings, llm: Any, client: Any, registry: Any,
                     emitter: Emitter, session: Any) -> Any:
    """Compaction and cache markers for this model (core/compaction.py)."""
    from baseagent.config.defaults import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS
    from baseagent.core.caching import wants_cache_markers
    from baseagent.core.compaction import Budget, ContextManager
    from baseagent.core.tokens import TokenCounter

    window, max_output = llm.model_limits(settings.model, settings.context_window,
                                          settings.max_tokens, DEFAULT_CONTEXT_WINDOW,
                                          DEFAULT_MAX_OUTPUT_TOKENS)
    budget = Budget(window=window, max_output=max_output,
                    threshold=settings.compaction_threshold,
                    protect=settings.prune_protect_tokens, minimum=settings.prune_minimum_tokens)
    return ContextManager(
        client=client, counter=TokenCounter(settings.model), budget=budget,
        tools=registry.specs(), cache_markers=wants_cache_markers(settings.model,
                                                                  settings.cache_markers),
        notice=emitter.notice,
        on_rewrite=session.history if session is not None else None)


def _exit_code(status: str, cancellation: Cancellation) -> int:
    if status == "completed":
        return EXIT_OK
    if status == "interrupted":
        from baseagent.core.signals import exit_code_for

        return exit_code_for(cancellation.signal_number)  # 130 SIGINT, 143 SIGTERM, 129 SIGHUP
    return EXIT_FAILED


def _write_last_message(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", errors="replace")
    except OSError as exc:
        print(f"baseagent: warning: cannot write {path}: {exc.strerror}", file=sys.stderr)
