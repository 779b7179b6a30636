"""The layer table of src/baseagent, top to bottom: the one place it is written down
(AGENTS.md states the same order; tests/architecture/test_layers.py holds the code to it).

A module may import from its own layer or any layer below; never from one above. Imports
between packages of one layer are allowed, but no import circle between any two modules of
src/baseagent, in any layer. Each entry is a module or package under `baseagent.`; a module
belongs to the longest entry that is its name or a parent of it.
"""
from __future__ import annotations

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # The process: argv, env, fd 1, signals. The scripted model server is a program too.
    ("entry", ("__main__", "early", "cli", "cli_args", "cli_run", "cli_threads", "cli_sources",
               "cli_batch", "cli_common", "exec_cli", "runner", "interactive",
               "serve", "batch", "signals", "hardening", "testing")),
    # The library's way in: one thread and its turns; hermes' adapter; listing sessions.
    ("library", ("agent", "agent_setup", "agent_turn", "agent_stream", "agent_result", "hermes",
                 "sessions")),
    # The composition root: settings in, one run's parts out.
    ("compose", ("compose",)),
    # The engine: the loop and what it runs (context, verification, delegation), the helps.
    ("engine", ("core", "helps")),
    # Parts that use other parts: tool sources, thread stores, exports, checkpoints.
    ("sources", ("mcp", "openapi", "storage", "export", "checkpoints")),
    # A thread's record, read and written whatever store keeps it.
    ("records", ("records",)),
    # The settings: one model per component, validated against the parts they configure.
    ("config", ("config",)),
    # The parts: model clients, built-in tools, the sandbox, the output mappers, prompts.
    ("parts", ("llm", "tools", "sandbox", "output", "prompts")),
    # What everything may use: the engine's events and emitter interface, errors, helpers.
    ("foundation", ("emitting", "errors", "textsafe", "fsutil", "cancellation", "scoped_env",
                    "credentials", "exit_codes", "cost_text", "")),
]
