"""baseagent: a headless coding agent that streams Codex-compatible JSONL.

The library API (docs/LIBRARY.md):

    from baseagent import Agent
    result = Agent(model="openai/gpt-4.1", cwd="repo").run("fix the failing test")

Names are imported on first use, so `baseagent --help` stays fast.
"""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Agent": "baseagent.agent",
    "RunResult": "baseagent.agent_result",
    "TurnStream": "baseagent.agent_stream",
    "Usage": "baseagent.agent_result",
    "ExternalTool": "baseagent.tools.external",
    "Specialist": "baseagent.config.specialists",
    "AgentConfig": "baseagent.config.settings",
    "Settings": "baseagent.config.settings",
    "BaseAgentError": "baseagent.errors",
    "ConfigError": "baseagent.errors",
    "InputError": "baseagent.errors",
    "TurnError": "baseagent.errors",
    "AgentBusyError": "baseagent.errors",
    "tool": "baseagent.tools.python_tool",
    "PythonTool": "baseagent.tools.python_tool",
    "Tool": "baseagent.tools.tool",
    "ToolContext": "baseagent.tools.context",
    "ToolError": "baseagent.tools.tool",
    "ToolResult": "baseagent.tools.tool",
    "Toolset": "baseagent.compose.toolset",
    "ToolProvider": "baseagent.tools.provider",
    "ToolsetOrchestrator": "baseagent.compose.orchestrator",
    "ApprovalRequest": "baseagent.tools.approval",
    "ApprovalAnswer": "baseagent.tools.approval",
    "AgentLoop": "baseagent.core.parts",
    "LoopParts": "baseagent.core.parts",
    "ContextPolicy": "baseagent.core.parts",
    "ToolExecutor": "baseagent.core.parts",
    "DirectExecutor": "baseagent.core.parts",
    "TurnInput": "baseagent.core.parts",
    "TurnOutcome": "baseagent.core.parts",
    "HistoryView": "baseagent.tools.context",
}

__all__ = ["__version__", "events", "agentb", *_EXPORTS]


def __getattr__(name: str) -> Any:
    import importlib

    if name == "events":
        return importlib.import_module("baseagent.output.events")
    if name == "agentb":
        return importlib.import_module("baseagent.output.agentb_events")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'baseagent' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
