"""`baseagent batch`'s process layer: signals, stdout, stderr, exit codes.

Like runner.py for a single run, everything process-wide of a batch lives here, never in
the driver: stdout is claimed for the summary (so a stray print, Ray's forwarded worker
logs or a library's chatter land on stderr), stderr is redacted, and SIGINT/SIGTERM/SIGHUP
stop the batch cleanly (a second signal exits at once; finished results are already on
disk, the workers notice their driver is gone and stop).
"""
from __future__ import annotations

import os
import sys

from baseagent.batch.driver import BatchOptions, StopFlag, run_batch
from baseagent.config.settings import Settings
from baseagent.exit_codes import EXIT_OK, exit_code_for_signal
from baseagent.signals import SignalGuard


def run(settings: Settings, options: BatchOptions, *, json_summary: bool) -> int:
    """Run the batch; returns the exit code: 0 when every task has a result (whatever the
    tasks' own outcomes), 128+N when signal N stopped it. Raises TaskFileError, BatchError
    and ConfigError (exit code 2 at the caller) before any task runs."""
    from baseagent.batch.progress import make_progress
    from baseagent.batch.summary import render, summary_line
    from baseagent.output.jsonl import claim_stdout
    from baseagent.output.redact import Redactor, install_stderr

    install_stderr(Redactor.from_environment(os.environ, settings.env_strip, [settings.api_key]))
    if options.backend == "ray" and options.ray_address is None:
        # The local Ray instance lives only for this batch: Ray 2.60 asks local clusters to
        # choose an authentication mode, and reads it only from this variable (the user's
        # own setting wins). Inherited by the Ray processes the driver starts.
        from baseagent.batch.ray_backend import AUTH_MODE_VARIABLE

        os.environ.setdefault(AUTH_MODE_VARIABLE, "disabled")
    stdout = claim_stdout()
    stop = StopFlag()
    guard = SignalGuard(_StopOnSignal(stop)).install()
    try:
        summary = run_batch(settings, options, env=os.environ, stop=stop,
                            progress=make_progress())
    finally:
        guard.close()
    text = render(summary)
    if json_summary:
        sys.stderr.write(text)
        stdout.write((summary_line(summary) + "\n").encode("utf-8"))
    else:
        stdout.write(text.encode("utf-8"))
    stdout.flush()
    return exit_code_for_signal(guard.signal_number) if guard.signal_number else EXIT_OK


class _StopOnSignal:
    """The batch as the signal guard's target (signals.SignalGuard, which a single run uses
    too): the first signal sets the stop flag, a second one exits at once."""

    def __init__(self, stop: StopFlag) -> None:
        self._stop = stop

    @property
    def cancel_requested(self) -> bool:
        return self._stop.is_set()

    def cancel(self, reason: str = "cancelled", signal_number: int | None = None) -> None:
        self._stop.set(reason)
        print("baseagent batch: stopping: cancelling the running tasks (again to quit now)",
              file=sys.stderr, flush=True)

    def kill_processes(self, grace: float = 0) -> list[int]:
        return []  # nothing here to kill: the workers notice their driver is gone and stop
