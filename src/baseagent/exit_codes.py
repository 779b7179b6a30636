"""Process exit codes of every entry point (CLI, exec), in one place.

The library never exits; its RunResult.status maps onto these at the command line.
"""
from __future__ import annotations

import signal

EXIT_OK = 0
EXIT_FAILED = 1  # turn.failed: model error, a limit reached
EXIT_USAGE = 2  # bad flag or configuration: one line on stderr, nothing on stdout
EXIT_REQUIRES_ACTION = 3  # turn.requires_action: the caller must run its tools and resume


def exit_code_for_signal(signal_number: int | None) -> int:
    """Shell convention: a run stopped by signal N exits with 128 + N (SIGINT when unknown)."""
    return 128 + int(signal_number or signal.SIGINT)


def exit_code_for_status(status: str, signal_number: int | None = None) -> int:
    """The exit code of a finished run: 0 completed, 3 waiting for the caller's tool
    outputs, 128+N interrupted by signal N, else 1."""
    if status == "completed":
        return EXIT_OK
    if status == "requires_action":
        return EXIT_REQUIRES_ACTION
    if status == "interrupted":
        return exit_code_for_signal(signal_number)
    return EXIT_FAILED
