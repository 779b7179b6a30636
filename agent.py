"""Thin entry point: `python agent.py ...` runs the baseagent CLI from a checkout.

The src/ directory is put on the path so the checkout works even before `pip install -e .`.
"""
import os
import signal
import sys

if __name__ == "__main__":
    # Ctrl-C before the CLI is imported ends the run quietly (baseagent/early.py): set
    # before any import, as early as a script can.
    signal.signal(signal.SIGINT, lambda signum, _frame: os._exit(128 + signum))

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))

if __name__ == "__main__":
    from baseagent.early import entry

    entry()
