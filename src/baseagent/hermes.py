"""hermes-agent's `AIAgent`, as a thin adapter over the library `Agent`.

    from baseagent.hermes import AIAgent          # instead of: from run_agent import AIAgent

    agent = AIAgent(model="anthropic/claude-sonnet-4", max_turns=30,
                    enabled_toolsets=["terminal", "file"], save_trajectories=True)
    print(agent.chat("fix the failing test"))

The constructor takes hermes-agent's names (NousResearch/hermes-agent, run_agent.py) and
turns them into one `baseagent.Agent` (agent.py): the same engine, events, tools, sandbox
and session records as the CLI; nothing here runs a model or a tool itself. Where hermes'
meaning and ours differ, this module says so (docs/LIBRARY.md, "hermes-agent drop-in").

- model / base_url / api_key / provider: hermes calls an OpenAI-compatible endpoint,
  OpenRouter by default. Without base_url (or with OpenRouter's) the model is
  `openrouter/<model>`; with another base_url it is `openai/<model>` on that server;
  `provider` ("openrouter", "anthropic", "openai", "custom", "deepseek", ...) says it
  explicitly. The default model is hermes' (`anthropic/claude-sonnet-4`, at OpenRouter:
  OPENROUTER_API_KEY); an empty one takes baseagent's default (a litellm model string).
- max_iterations / max_turns: model calls per conversation turn (hermes' batch runner and
  CLI call it max_turns); default hermes' 20 (a baseagent Agent's is 200).
- enabled_toolsets / disabled_toolsets: hermes' toolset names map onto baseagent's
  (HERMES_TOOLSETS: terminal -> shell, file -> read + edit, todo -> plan, vision ->
  view_image, delegation -> the delegate tool); baseagent's own group and tool names are
  taken too. Enabling a hermes toolset baseagent has no tools for (web, browser, ...) is a
  ConfigError of one line saying what to use instead (HERMES_MISSING); disabling one is
  nothing to do.
- chat(message) / chat(user_message=...): the answer as text; out of turns, the model's
  last text (or OUT_OF_TURNS), as hermes returns it. run_conversation's `messages` carry
  the model's reasoning as hermes' `reasoning`, and `conversation_history` (in that form)
  starts the turn from a conversation (Agent.run(messages=...)).
- save_trajectories: after each conversation turn, the thread so far is appended as one
  ShareGPT line ({"conversations", "timestamp", "model", "completed"}) to
  `trajectories/trajectory_samples.jsonl`, or `failed_trajectories.jsonl` when the turn did
  not complete, under the process's working directory (hermes' file names; `trajectories_dir`
  moves them). Built from the session record by baseagent's ShareGPT exporter
  (export/sharegpt.py), so secrets are redacted and the format is `baseagent export`'s.
- verbose_logging: every model request and response, redacted, as DEBUG records of the
  `baseagent.model` logger (llm/request_log.py; the logger is set to DEBUG unless you set
  its level, so your handler alone receives them); a stderr handler is attached when that
  logger has none (as hermes configures logging when asked), never stdout.
- ephemeral_system_prompt: added after the system prompt (append_system_prompt).
- reasoning_config {"effort": ...} is reasoning_effort; max_tokens as it is.
- quiet_mode, tool_delay, log_prefix_chars: accepted for hermes' callers; baseagent prints
  nothing and never sleeps between tools, so they change nothing.
- Anything else is a baseagent option (`cwd`, `sandbox`, `session_dir`, `verify`, ...;
  AgentConfig) or an Agent keyword (`tools`, `on_event`, `env`, `model_client`, ...).
  hermes has no self-verification round, so `verify` defaults to False here.
"""
from __future__ import annotations

import datetime as _dt
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable

from baseagent.agent import Agent, RunResult
from baseagent.errors import ConfigError, InputError, TurnError

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
# hermes' defaults: its model (at OpenRouter, without a base_url) and turns per conversation.
DEFAULT_MODEL = "anthropic/claude-sonnet-4"
DEFAULT_MAX_TURNS = 20
# What chat() and run_conversation() answer when the turns ran out before the model gave a
# final answer and it wrote no text on the way.
OUT_OF_TURNS = ("I reached the maximum number of turns ({n}) before finishing the task; the "
                "work so far is in the conversation.")
TRAJECTORIES_DIR = "trajectories"
COMPLETED_FILE = "trajectory_samples.jsonl"
FAILED_FILE = "failed_trajectories.jsonl"
# hermes' toolset names -> baseagent's tool groups ("delegation" turns the delegate tool on).
HERMES_TOOLSETS: dict[str, tuple[str, ...]] = {
    "terminal": ("shell",), "file": ("read", "edit"), "todo": ("plan",), "delegation": (),
    "vision": ("view_image",),
}
# hermes' toolsets baseagent has no tools for, and what to use instead (one line each).
HERMES_MISSING: dict[str, str] = {
    "web": "give a search or fetch tool as a Python function (tools=[...]) or an MCP server "
           "(mcp_servers=, e.g. a fetch server)",
    "browser": "give a browser MCP server (mcp_servers=, e.g. Playwright's @playwright/mcp)",
    "image_gen": "give an image API as an OpenAPI document (openapi=) or a Python function "
                 "(tools=[...])",
    "tts": "give a speech API as an OpenAPI document (openapi=) or a Python function "
           "(tools=[...])",
    "moa": "give the other models' calls as a Python function (tools=[...]), or use "
           "specialists= with a model each",
    "code_execution": "use the terminal toolset (the shell runs any code)",
    "clarify": "baseagent runs headless: declare a tool your code answers (external_tools=: "
               "the turn pauses with requires_action)",
    "memory": "keep the thread (thread_id= resumes it, its record holds everything)",
    "session_search": "search past threads with `baseagent sessions search` (storage=\"sqlite\")",
    "skills": "put the instructions in AGENTS.md or append_system_prompt=",
    "cronjob": "schedule the runs yourself (cron, baseagent batch)",
}
# hermes' `provider` -> the litellm prefix of the model string.
PROVIDERS = {"openrouter": "openrouter", "anthropic": "anthropic", "openai": "openai",
             "custom": "openai", "deepseek": "deepseek", "gemini": "gemini",
             "ollama": "openai", "lmstudio": "openai", "vllm": "openai"}
# Accepted so hermes' callers run unchanged; nothing in baseagent needs them.
_NO_OP = ("quiet_mode", "tool_delay", "log_prefix_chars", "log_prefix")


class AIAgent:
    """hermes-agent's AIAgent: `chat()` and `run_conversation()` over one baseagent thread.

    `agent` is the underlying `baseagent.Agent` (its events, usage, history, cancel()).
    """

    def __init__(self, base_url: str | None = None, api_key: str | None = None,
                 provider: str | None = None, model: str = DEFAULT_MODEL,
                 max_iterations: int | None = None, *, max_turns: int | None = None,
                 enabled_toolsets: Sequence[str] | None = None,
                 disabled_toolsets: Sequence[str] | None = None,
                 save_trajectories: bool = False, verbose_logging: bool = False,
                 ephemeral_system_prompt: str | None = None, max_tokens: int | None = None,
                 reasoning_config: dict[str, Any] | None = None,
                 trajectories_dir: str | Path | None = None, **options: Any) -> None:
        for name in _NO_OP:
            options.pop(name, None)
        if max_iterations is not None and max_turns is not None \
                and max_iterations != max_turns:
            raise ConfigError("give max_iterations or max_turns, not both")
        settings: dict[str, Any] = {"verify": False}
        model_string, api_base = litellm_model(model, base_url, provider)
        if model_string:
            settings["model"] = model_string
        if api_base:
            settings["api_base"] = api_base
        if api_key:
            settings["api_key"] = api_key
        turns = max_turns if max_turns is not None else max_iterations
        settings["max_iterations"] = turns if turns is not None else DEFAULT_MAX_TURNS
        enabled, delegate = _toolsets(enabled_toolsets, enabling=True)
        disabled, _ = _toolsets(disabled_toolsets, enabling=False)
        if enabled is not None:
            settings["enabled_toolsets"] = enabled or ["none"]
            settings["delegate"] = delegate
        if disabled:
            settings["disabled_toolsets"] = disabled
        if verbose_logging:
            settings["verbose"] = True
        if ephemeral_system_prompt:
            settings["append_system_prompt"] = ephemeral_system_prompt
        if max_tokens is not None:
            settings["max_tokens"] = max_tokens
        effort = (reasoning_config or {}).get("effort")
        if effort and (reasoning_config or {}).get("enabled", True):
            settings["reasoning_effort"] = effort
        settings.update(options)  # baseagent's own names win
        if save_trajectories and settings.get("session") is False:
            raise ConfigError("save_trajectories needs the session record (session=False "
                              "writes none)")
        self.save_trajectories = save_trajectories
        self.verbose_logging = verbose_logging
        self.trajectories_dir = Path(trajectories_dir or TRAJECTORIES_DIR).resolve()
        if verbose_logging:
            _log_to_stderr()
        self.agent = Agent(**settings)
        self.model = self.agent.settings.model
        self.base_url = self.agent.settings.api_base
        self.max_iterations = self.agent.settings.max_iterations

    # -- hermes' API -------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The thread id (baseagent's session record: `baseagent sessions show ID`)."""
        return self.agent.thread_id

    def chat(self, message: str | None = None, task_id: str | None = None,
             stream_callback: Callable[[str], None] | None = None, *,
             user_message: str | None = None) -> str:
        """One conversation turn; the final answer as text (`message`, or hermes'
        `user_message=`). Out of turns, the model's last text (or a sentence saying so), as
        hermes answers. A turn that failed (a model error, an interrupt) with no answer
        raises TurnError rather than answering None."""
        text = _one_message(message, user_message)
        result = self._turn(text, task_id, stream_callback)
        answer = self._answer(result)
        if answer is None:
            raise TurnError(result) from result.exception
        return answer

    def run_conversation(self, user_message: str, system_message: str | None = None,
                         conversation_history: list[dict[str, Any]] | None = None,
                         task_id: str | None = None,
                         stream_callback: Callable[[str], None] | None = None
                         ) -> dict[str, Any]:
        """hermes' full form: {final_response, messages, api_calls, completed, failed,
        error, thread_id}. `conversation_history` (hermes' messages: user, assistant with
        `reasoning` and tool calls, tool) is added to this thread before the message;
        `messages` comes back in the same form (no system prompt). `system_message` is
        refused: the thread has its system prompt (ephemeral_system_prompt=)."""
        if system_message is not None:
            raise InputError("run_conversation: system_message is not supported (the thread "
                             "has its system prompt: use ephemeral_system_prompt=)")
        history = [_from_hermes(m) for m in conversation_history or []
                   if m.get("role") != "system"]
        before = self._api_calls()
        result = self._turn(user_message, task_id, stream_callback, history)
        return {"final_response": self._answer(result),
                "messages": [_to_hermes(m) for m in self.agent.history
                             if m.get("role") != "system"],
                "api_calls": self._api_calls() - before,
                "completed": result.status == "completed",
                "failed": result.status == "failed",
                "error": result.error,
                "thread_id": result.thread_id}

    def close(self) -> None:
        self.agent.close()

    def __enter__(self) -> "AIAgent":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    def _answer(self, result: RunResult) -> str | None:
        """The turn's answer as hermes gives it: the final message; out of turns, the
        model's last text or OUT_OF_TURNS; None when the turn failed without one."""
        if result.final_message is not None:
            return result.final_message
        if result.status == "completed":
            return ""
        if result.status == "limit":
            texts = [item.text for item in result.items if item.type == "agent_message"
                     and item.text.strip()]
            return texts[-1] if texts else OUT_OF_TURNS.format(n=self.max_iterations)
        return None

    def _turn(self, message: str, task_id: str | None,
              stream_callback: Callable[[str], None] | None,
              history: Sequence[dict[str, Any]] = ()) -> RunResult:
        if stream_callback is None:
            result = self.agent.run(message, messages=history)
        else:
            from baseagent.output import events as ev

            stream = self.agent.stream(message, messages=history)
            for event in stream:
                if isinstance(event, ev.ItemCompleted) \
                        and isinstance(event.item, ev.AgentMessageItem):
                    stream_callback(event.item.text)
            result = stream.result
            assert result is not None
        if self.save_trajectories:
            self._save_trajectory(result, task_id)
        return result

    def _record(self) -> Path | None:
        from baseagent.records.replay import SessionLoadError, find_session

        if not self.agent.settings.record_session:
            return None
        try:
            return find_session(self.agent.settings.session_dir, self.agent.thread_id)
        except SessionLoadError:
            return None

    def _api_calls(self) -> int:
        record = self._record()
        if record is None:
            return 0
        from baseagent.export.trajectories import api_calls
        from baseagent.export.log import read_log

        return api_calls(read_log(record))

    def _save_trajectory(self, result: RunResult, task_id: str | None) -> None:
        """Append the thread so far, as ShareGPT, to hermes' trajectory file."""
        from baseagent.export.log import read_log
        from baseagent.export.sharegpt import to_sharegpt

        record = self._record()
        if record is None:
            raise ConfigError("save_trajectories: this thread has no session record")
        completed = result.status == "completed"
        entry: dict[str, Any] = {
            "conversations": to_sharegpt(read_log(record))["conversations"],
            "timestamp": _dt.datetime.now().isoformat(),
            "model": self.model,
            "completed": completed,
            "thread_id": result.thread_id,
        }
        if task_id is not None:
            entry["task_id"] = task_id
        path = self.trajectories_dir / (COMPLETED_FILE if completed else FAILED_FILE)
        path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8", "replace")
        # One write of one line with O_APPEND: lines of agents in other threads or
        # processes never interleave.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def litellm_model(model: str, base_url: str | None, provider: str | None
                  ) -> tuple[str, str | None]:
    """hermes' (model, base_url, provider) as baseagent's (litellm model string, api_base)."""
    model = (model or "").strip()
    if not model:
        return "", base_url
    if provider is not None:
        prefix = PROVIDERS.get(provider.strip().lower())
        if prefix is None:
            raise ConfigError(f"unknown provider {provider!r} (choose from "
                              f"{', '.join(PROVIDERS)})")
    elif base_url is None or "openrouter.ai" in base_url:
        prefix = "openrouter"
    else:
        prefix = "openai"
    if prefix == "openrouter" and base_url is None:
        base_url = OPENROUTER_BASE_URL
    return f"{prefix}/{model}", base_url


def _one_message(message: str | None, user_message: str | None) -> str:
    if message is not None and user_message is not None:
        raise InputError("chat: give message or user_message, not both")
    text = message if message is not None else user_message
    if text is None:
        raise InputError("chat: the message is missing")
    return text


def _to_hermes(message: dict[str, Any]) -> dict[str, Any]:
    """A message of the thread as hermes keeps it: the model's reasoning as `reasoning`."""
    if "reasoning_content" not in message:
        return message
    out = {k: v for k, v in message.items() if k != "reasoning_content"}
    out["reasoning"] = message["reasoning_content"]
    return out


def _from_hermes(message: dict[str, Any]) -> dict[str, Any]:
    """A hermes message as the thread keeps it (`reasoning` as `reasoning_content`)."""
    if "reasoning" not in message:
        return message
    out = {k: v for k, v in message.items() if k != "reasoning"}
    out.setdefault("reasoning_content", message["reasoning"])
    return out


def _toolsets(names: Sequence[str] | None, *, enabling: bool) -> tuple[list[str] | None, bool]:
    """hermes' toolset names as baseagent's (and whether `delegation` was named)."""
    if names is None:
        return None, False
    if isinstance(names, str):
        names = [names]
    from baseagent.tools.toolsets import vocabulary

    ours = set(vocabulary())
    out: list[str] = []
    delegate = False
    for name in names:
        if name in HERMES_TOOLSETS:
            out.extend(HERMES_TOOLSETS[name])
            delegate = delegate or name == "delegation"
        elif name in ours:
            out.append(name)
        elif enabling:
            instead = HERMES_MISSING.get(name)
            if instead is not None:
                raise ConfigError(f"hermes toolset {name!r} has no baseagent tools: {instead}")
            raise ConfigError(f"hermes toolset {name!r} has no baseagent tools (known: "
                              f"{', '.join([*HERMES_TOOLSETS, *ours])}); add your own with "
                              "tools=, mcp_servers= or openapi=")
    return list(dict.fromkeys(out)), delegate


def _log_to_stderr() -> None:
    """verbose_logging=True: the request log on stderr, unless a handler is already there
    (yours, or an earlier AIAgent's)."""
    import sys

    from baseagent.llm.request_log import LOGGER_NAME, attach, stderr_handler

    if not logging.getLogger(LOGGER_NAME).handlers:
        attach(stderr_handler(sys.stderr))


__all__ = ["AIAgent", "litellm_model"]
