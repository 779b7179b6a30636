"""A run's cancellation: one object, owned by the run, read by everything below it.

`Cancellation` is the owner's side (the Agent's): `cancel()` from any thread or a signal
handler, `reset()` once an interrupted turn has ended. `CancelToken` is the read-only view
it hands down, through the composition root, to the loop, the model client (`bind_cancel`)
and every tool (`ToolContext.cancelled`): long-running work polls `token()` and winds down
cleanly, and whoever reports the interruption reads `token.reason`. One object travels,
not a flag and a reason apart (Codex passes one token the same way).

It lives at the bottom of the package (stdlib only) because the layers that read it, the
tools and the model client, sit below core/.
"""
from __future__ import annotations

import threading
from typing import Callable

DEFAULT_REASON = "interrupted"


class CancelToken:
    """Whether the run is being cancelled (`token()` or `token.is_set()`), and why
    (`token.reason`). Read-only: only the owner's `Cancellation` sets it."""

    __slots__ = ("_is_set", "_reason")

    def __init__(self, is_set: Callable[[], bool] = lambda: False,
                 reason: Callable[[], str] = lambda: DEFAULT_REASON) -> None:
        self._is_set = is_set
        self._reason = reason

    def is_set(self) -> bool:
        return self._is_set()

    __call__ = is_set  # `if ctx.cancelled():` reads as what it asks

    @property
    def reason(self) -> str:
        return self._reason()

    def with_reason(self, reason: str) -> "CancelToken":
        """The same flag, reported with another reason (a delegated child's loop says its
        parent was interrupted, not why)."""
        return CancelToken(self._is_set, lambda: reason)


# Never set: the default of every part built outside a run (tests, tools called directly).
NEVER = CancelToken()


class Cancellation:
    """The owner's flag: set once per interruption, with its reason and signal."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str = DEFAULT_REASON
        self.signal_number: int | None = None
        self.token = CancelToken(self._event.is_set, lambda: self.reason)

    def cancel(self, reason: str = DEFAULT_REASON, signal_number: int | None = None) -> None:
        """Safe from any thread and from a signal handler; the first reason wins."""
        if not self._event.is_set():
            self.reason = reason
            self.signal_number = signal_number
        self._event.set()

    def reset(self) -> None:
        """Ready for the next turn (the agent calls this once an interrupted turn has ended)."""
        self._event.clear()
        self.reason = DEFAULT_REASON
        self.signal_number = None

    def is_set(self) -> bool:
        return self._event.is_set()
