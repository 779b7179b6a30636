"""The CLI's process around one library Agent: stdout, stderr, signals, exit codes.

Everything process-wide lives here and in cli.py / exec_cli.py, never in the library: fd 1
is claimed for the event stream, stderr is routed through the redactor, signal handlers
cancel the run, and the run's outcome becomes the process exit code. The run itself is
`baseagent.Agent`, built from the resolved Settings (core/assembly.py is its composition
root), so the CLI, `exec`, the library and batch workers run the same code.
"""
from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from baseagent.config.defaults import Settings
from baseagent.exit_codes import exit_code_for_status


def make_sink(json_output: bool, event_format: str = "codex") -> Any:
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

    return PrettySink()


def run(settings: Settings, instruction: str | None, *, resume: Any = None,
        images: Sequence[Path] = (), output_schema: dict[str, Any] | None = None,
        external_tools: Sequence[Any] = (), tool_outputs: dict[str, Any] | None = None) -> int:
    """Run one instruction headless or on a terminal; returns the process exit code.

    `resume` (a core.records.LoadedSession) continues that thread. `images` go with the
    instruction; `output_schema` holds the final answer to a JSON schema. `external_tools`
    are tools the caller runs (exit code 3 when the model calls one); `tool_outputs`
    (instead of an instruction) continues the resumed thread's paused turn with them.
    Raises ConfigError or InputError (exit code 2 at the caller) before anything is printed
    on stdout.
    """
    from baseagent.agent import Agent
    from baseagent.output.redact import Redactor, install_stderr
    from baseagent.signals import SignalGuard

    # Before litellm is imported: its log handler binds stderr, its chatter may hit stdout.
    install_stderr(Redactor.from_environment(os.environ, settings.env_strip, [settings.api_key]))
    if tool_outputs is not None:  # bad outputs: a usage error before stdout is claimed
        from baseagent.core.pending import check_outputs

        paused = resume.paused if resume is not None else None
        if paused is None:
            from baseagent.errors import InputError

            raise InputError("--tool-outputs: the resumed thread is not waiting for tool "
                             "outputs")
        check_outputs(paused.calls, tool_outputs)
    sink = make_sink(settings.json_output, settings.event_format)
    agent = Agent.from_settings(settings, resume=resume, env=os.environ, sinks=[sink],
                                external_tools=external_tools)
    guard = SignalGuard(agent, getattr(sink, "exit_when_idle", None)).install()
    try:
        if tool_outputs is not None:
            result = agent.submit_tool_outputs(tool_outputs)
        else:
            result = agent.run(instruction or "", images=images, output_schema=output_schema)
    finally:
        agent.close()
        guard.close()
        # Interpreter teardown walks litellm's millions of objects (2-3 s per run, measured);
        # frozen objects are skipped by the final collections.
        gc.freeze()
    if settings.output_last_message is not None and result.final_message is not None:
        _write_last_message(settings.output_last_message, result.final_message)
    return exit_code_for_status(result.status, guard.signal_number)


def _write_last_message(path: Path, text: str) -> None:
    from baseagent.fsutil import atomic_write

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8", errors="replace"))
    except OSError as exc:
        print(f"baseagent: warning: cannot write {path}: {exc.strerror}", file=sys.stderr)
