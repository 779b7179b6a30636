"""How the loop stops when its run is cancelled.

The cancellation itself (the owner's flag and the read-only token handed down) is
`baseagent/cancellation.py`; the loop polls the token and raises `RunInterrupted` to unwind
a turn, so an interrupted run still completes its current item and flushes its output.
"""
from __future__ import annotations


class RunInterrupted(Exception):
    """Raised inside the loop once cancellation is noticed."""
