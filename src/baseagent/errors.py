"""The exceptions the library raises to its callers, in one place at the bottom of the layering.

Entry points map them: the CLI prints one line and exits 2 for ConfigError and InputError;
the library lets them propagate. None of them is ever raised for something the model did:
a model's mistakes become error results it can read, not exceptions.
"""
from __future__ import annotations

from typing import Any


class BaseAgentError(Exception):
    """Base of every error baseagent raises on purpose."""


class ConfigError(BaseAgentError):
    """Settings that cannot work: an invalid value, an unknown model, a missing API key, a
    workspace that does not exist, a thread that cannot be resumed. Nothing has run."""


class InputError(BaseAgentError, ValueError):
    """An instruction, image or output schema the run cannot use. Nothing has run."""


class AgentBusyError(BaseAgentError, RuntimeError):
    """A turn was started while another turn of the same Agent is still running."""


class TurnError(BaseAgentError):
    """`Agent.chat()` on a turn that did not complete; `result` holds what happened."""

    def __init__(self, result: Any) -> None:
        super().__init__(f"the turn ended {result.status}: {result.error}")
        self.result = result
