"""The composition root's checks, each a ConfigError (or TypeError) before anything runs: the
platform, the model string and key, a caller's replaced parts and model client; and the
run's approvals."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from baseagent.config.settings import AgentConfig
from baseagent.errors import ConfigError
from baseagent.emitting import events as engine
from baseagent.tools.approval import (ApprovalAnswer, ApprovalRequest, Approvals, Approver,
                                      approval_item)

if TYPE_CHECKING:
    from baseagent.llm.route import Route
    from baseagent.output.emitter import Emitter


def check_platform(settings: AgentConfig) -> None:
    """A restricted sandbox mode where the sandbox does not exist (not Linux): a
    ConfigError, one line, before anything runs (sandbox/policy.py unsupported_mode)."""
    from baseagent.sandbox.policy import unsupported_mode

    problem = unsupported_mode(settings.sandbox)
    if problem is not None:
        raise ConfigError(problem)


def preflight(settings: AgentConfig, env: Mapping[str, str]) -> None:
    """What is wrong with the model string or its key that can be known without litellm:
    a ConfigError at once, before the slow import starts (llm/preflight.py)."""
    from baseagent.llm.preflight import preflight as check

    problem = check(settings.model, settings.request_api_key(), env)
    if problem is not None:
        raise ConfigError(problem)


def check_model(settings: AgentConfig, route: Route | None = None) -> None:
    """Unknown provider or missing API key: a ConfigError before anything runs (imports
    litellm, unless the run's calls take the direct path `route`)."""
    if route is None:  # the direct path has its key and a provider it knows
        from baseagent.llm import client as llm

        llm.check_model(settings.model, settings.api_base, settings.request_api_key())
    if settings.oss and settings.api_base:
        from baseagent.llm.local_server import check_local_server

        check_local_server(settings.api_base, settings.model)


def escalation_offered(settings: AgentConfig, approver: Approver | str | None) -> bool:
    """Whether the model may ask to run a command outside the sandbox: approval policy
    on-request, someone to answer, and a sandbox to leave."""
    return settings.approval_policy == "on-request" and approver is not None \
        and settings.sandbox != "danger-full-access"


def run_approvals(settings: AgentConfig, approver: Approver | str | None,
                  emitter: Emitter) -> Approvals | None:
    """The run's approvals (None under policy `never`): each question and its answer is an
    approval item in the run's events."""
    if settings.approval_policy == "never":
        return None
    ids: dict[int, str] = {}

    def report(request: ApprovalRequest, answer: ApprovalAnswer | None) -> None:
        if answer is None:
            ids[id(request)] = emitter.new_item_id()
        item = approval_item(ids.get(id(request)) or emitter.new_item_id(), request, answer)
        if answer is None:
            emitter.send(engine.ItemStarted(item))
        else:
            ids.pop(id(request), None)
            emitter.send(engine.ItemCompleted(item))

    return Approvals(settings.approval_policy, approver, report=report)


def check_parts(context_policy: Any, tool_executor: Any, loop: Any) -> dict[str, Any]:
    """The replaced engine parts (core/parts.py), each held to its protocol when the agent
    is built: ConfigError naming what is missing."""
    parts: dict[str, Any] = {}
    if context_policy is not None:
        missing = [m for m in ("prepare", "on_overflow")
                   if not callable(getattr(context_policy, m, None))]
        if missing:
            raise ConfigError(f"context_policy: a {type(context_policy).__name__} has no "
                              f"{', '.join(missing)}() (core/parts.py ContextPolicy)")
        parts["context_policy"] = context_policy
    if tool_executor is not None:
        if not callable(getattr(tool_executor, "execute", None)):
            raise ConfigError(f"tool_executor: a {type(tool_executor).__name__} has no "
                              "execute(tool, args, ctx) (core/parts.py ToolExecutor)")
        parts["tool_executor"] = tool_executor
    if loop is not None:
        if not callable(loop):
            raise ConfigError(f"loop: a {type(loop).__name__} is not a factory: pass a "
                              "function of LoopParts that returns an AgentLoop "
                              "(core/parts.py)")
        parts["loop"] = loop
    return parts


def check_model_client(model_client: Any) -> None:
    """TypeError unless `model_client` has the client protocol's members."""
    from baseagent.llm.types import ModelClientProtocol

    if not isinstance(model_client, ModelClientProtocol):
        raise TypeError(f"model_client: a {type(model_client).__name__} is not a model "
                        "client (it needs totals, complete(), bind_cancel() and close(); "
                        "llm/types.py ModelClientProtocol)")
