"""The few typed failures that leave the client; the loop acts on each differently.

Settings the client cannot work with (an unknown model, a missing key, no local server) are
`baseagent.errors.ConfigError`, the one configuration error of the package."""
from __future__ import annotations


class ModelError(Exception):
    """The model cannot be called (bad key, invalid request, retries exhausted): fail the turn."""


class ContextOverflowError(ModelError):
    """The provider says the prompt is too long: compact, then try again."""


class CostLimitError(ModelError):
    """The next call would take the run past --cost-limit."""


class ModelInterrupted(ModelError):
    """The run was interrupted (signal) while waiting on the model."""
