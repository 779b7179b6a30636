"""A cancellation token shared by the loop, the client and the tools.

Signal handlers only set it; everything long-running polls it and winds down cleanly, so an
interrupted run still completes its current item and flushes its output.
"""
from __future__ import annotations

import threading


class Cancellation:
    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str = "interrupted"
        self.signal_number: int | None = None

    def cancel(self, reason: str = "interrupted", signal_number: int | None = None) -> None:
        if not self._event.is_set():
            self.reason = reason
            self.signal_number = signal_number
        self._event.set()

    def reset(self) -> None:
        """Ready for the next turn (the agent calls this once an interrupted turn has ended)."""
        self._event.clear()
        self.reason = "interrupted"
        self.signal_number = None

    def is_set(self) -> bool:
        return self._event.is_set()

    __call__ = is_set  # usable wherever a `cancelled() -> bool` callable is expected


class RunInterrupted(Exception):
    """Raised inside the loop once cancellation is noticed."""
