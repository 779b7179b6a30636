"""The first instructions of the `baseagent` process: Ctrl-C before the CLI is ready.

Importing the command line (typer, click) takes a good part of a second on a loaded
machine. A SIGINT in that time used to print a traceback from inside `import typer` (Python's
default handler raises KeyboardInterrupt wherever the import is); in a background job of a
script, where the shell starts the process with SIGINT ignored, it was lost and the run
went on. `entry()` (the console script; agent.py and `python -m baseagent` do the same)
installs a handler that ends the process at once, quietly, with 130, before anything is
imported: nothing has been done yet that would need undoing. `release()` hands SIGINT back
to Python's usual KeyboardInterrupt once the CLI is imported, right before cli.main (which
catches it), and the run's SignalGuard takes it from there (signals.py); once main returns
(or exits) `hold()` is back, so a Ctrl-C that lands as the run ends still exits 130, with
what the run printed flushed. This module sits
above the CLI: it imports cli, never the other way.
"""
from __future__ import annotations

import os
import signal
import sys


def _before_main(signum: int, _frame: object) -> None:
    for stream in (sys.stdout, sys.stderr):  # what a finished run printed still goes out
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - interrupted mid-write (reentrant), or closed
            pass
    os._exit(128 + signum)


def hold() -> None:
    """SIGINT ends the process at once (exit 130), whatever the disposition inherited."""
    signal.signal(signal.SIGINT, _before_main)


def release() -> None:
    """SIGINT raises KeyboardInterrupt again (only where hold() set it: an in-process
    caller of cli.main keeps its own handler)."""
    try:
        if signal.getsignal(signal.SIGINT) is _before_main:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread
        pass


def entry() -> None:
    """The console script `baseagent`."""
    hold()
    from baseagent.cli import main

    release()  # Ctrl-C is a KeyboardInterrupt from here on, caught in main (no traceback)
    try:
        main()
    finally:
        # Past main's catch a KeyboardInterrupt would end the process by the signal (-2)
        # with a traceback: a Ctrl-C that lands as the run ends exits 130, as before main.
        hold()
