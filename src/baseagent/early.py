"""The first instructions of the `baseagent` process: Ctrl-C before the CLI is ready.

Importing the command line (typer, click) takes a good part of a second on a loaded
machine. A SIGINT in that time used to print a traceback from inside `import typer` (Python's
default handler raises KeyboardInterrupt wherever the import is); in a background job of a
script, where the shell starts the process with SIGINT ignored, it was lost and the run
went on. `entry()` (the console script; agent.py and `python -m baseagent` do the same)
installs a handler that ends the process at once, quietly, with 130, before anything is
imported: nothing has been done yet that would need undoing. `release()` hands SIGINT back
to Python's usual KeyboardInterrupt once the CLI is imported, right before cli.main (which
catches it), and the run's SignalGuard takes it from there (signals.py). This module sits
above the CLI: it imports cli, never the other way.
"""
from __future__ import annotations

import os
import signal


def _before_main(signum: int, _frame: object) -> None:
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
    main()
