"""One object builds a run (compose/builder.py `RunBuilder`), in process.

- Each check runs once per run, whoever asks first: the model string (an entry point asks
  before its header, the builder's prepare() would ask again), the model itself (at the
  first turn, not again at the next), and the Redactor is made once (stderr and the
  events share it). Counted through the builder's `counts`, with nothing patched.
- The run's cancellation is one object: the token the loop holds is the one every tool
  call gets and the one bound to the model client, and it carries the reason.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from baseagent import Agent
from baseagent.cancellation import Cancellation, CancelToken
from baseagent.config.settings import Settings
from baseagent.compose.builder import RunBuilder
from baseagent.errors import ConfigError
from baseagent.llm.types import ModelClientProtocol, UsageTotals
from baseagent.testing.deterministic import DeterministicClient
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ModelTool, ToolResult
from helpers import REPO

ENV = {"PATH": os.environ["PATH"]}
KEY = "sk-builder-test-0123456789"


def settings_for(workspace: Path, **kw: Any) -> Settings:
    """An OpenAI-compatible server's model: the direct path, so no litellm import starts."""
    values: dict[str, Any] = {"model": "openai/scripted", "api_key": KEY, "cwd": workspace,
                              "api_base": "http://127.0.0.1:9/v1", "verify": False,
                              "record_session": False}
    values.update(kw)
    return Settings(**values)


# -- each check once ------------------------------------------------------------------------

def test_a_run_built_as_the_cli_builds_it_checks_each_thing_once(scripted_server, workspace):
    server = scripted_server([{"content": "first"}, {"content": "second"}])
    settings = settings_for(workspace, api_base=server.api_base)
    builder = RunBuilder(settings, env=ENV)
    # runner.run: the model string before the header, then stderr through the redactor
    builder.check_model_string()
    stderr_redactor = builder.redactor
    assert builder.counts == {"model_string": 1, "redactor": 1}
    agent = Agent.from_settings(settings, builder=builder)
    try:
        assert agent.run("one").final_message == "first"
        assert agent.run("two").final_message == "second"
    finally:
        agent.close()
    assert builder.counts == {"model_string": 1, "redactor": 1, "model": 1}
    assert builder.prepared is not None and builder.prepared.redactor is stderr_redactor


def test_the_library_agent_checks_each_thing_once(scripted_server, workspace):
    server = scripted_server([{"content": "done"}])
    with Agent(model="openai/scripted", api_base=server.api_base, api_key=KEY, cwd=workspace,
               env=ENV, session=False, verify=False) as agent:
        assert agent.run("go").ok
        counts = agent._builder.counts
    assert counts == {"model_string": 1, "redactor": 1, "model": 1}


def test_asking_twice_checks_once(workspace):
    builder = RunBuilder(settings_for(workspace), env=ENV)
    builder.check_model_string()
    builder.check_model_string()
    assert builder.redactor is builder.redactor
    builder.prepare()
    assert builder.counts == {"model_string": 1, "redactor": 1}
    with pytest.raises(RuntimeError, match="built its run already"):
        builder.prepare()
    builder.prepared.sources.close()


def test_a_model_string_that_cannot_work_stops_the_build_at_once(workspace):
    builder = RunBuilder(settings_for(workspace, model="nosuchprovider/x"), env=ENV)
    with pytest.raises(ConfigError, match="unknown model or provider"):
        builder.prepare()
    assert builder.counts == {"model_string": 1} and builder.prepared is None


def test_an_injected_client_is_not_checked_by_name(workspace):
    builder = RunBuilder(settings_for(workspace, model="nosuchprovider/x"), env=ENV,
                         model_client=DeterministicClient([]))
    builder.check_model_string()
    assert builder.counts == {}


def test_the_redactor_knows_the_tool_sources_secrets_too(workspace):
    """Made once, before the sources are read; prepare() adds theirs to the same object."""
    document = {"openapi": "3.0.0", "info": {"title": "t", "version": "1"},
                "servers": [{"url": "http://h/v1"}],
                "paths": {"/ping": {"get": {"operationId": "ping",
                                            "responses": {"200": {"description": "ok"}}}}}}
    settings = settings_for(workspace, openapi={"api": {
        "spec": document, "auth": {"env": "MY_SERVICE_AUTH"}}})
    builder = RunBuilder(settings, env={**ENV, "MY_SERVICE_AUTH": "a-very-secret-value"})
    early = builder.redactor
    assert early.text("x a-very-secret-value y") == "x a-very-secret-value y"
    prepared = builder.prepare()
    try:
        assert prepared.redactor is early
        assert early.text("x a-very-secret-value y") == "x [REDACTED] y"
        assert early.text(f"key {KEY}") == "key [REDACTED]"
    finally:
        prepared.sources.close()


# -- cancellation as one object -------------------------------------------------------------

class _Nothing(BaseModel):
    pass


def test_cancellation_reaches_loop_tools_and_client_as_one_object(workspace):
    seen: dict[str, Any] = {}
    holder: dict[str, Agent] = {}

    def stop(_args: Any, ctx: ToolContext) -> ToolResult:
        seen["tool"] = ctx.cancelled
        holder["agent"].cancel("stopped by the tool")
        seen["set"], seen["reason"] = ctx.cancelled(), ctx.cancelled.reason
        return ToolResult("stopping")

    client = DeterministicClient([{"tool_calls": [{"name": "stop", "arguments": {}}]},
                                  {"content": "never"}])
    agent = Agent(model_client=client, cwd=workspace, env=ENV, session=False, verify=False,
                  tools=[ModelTool(name="stop", description="Stop.", args_model=_Nothing,
                                   runner=stop)])
    holder["agent"] = agent
    try:
        result = agent.run("go")
    finally:
        agent.close()
    token = seen["tool"]
    assert isinstance(token, CancelToken)
    assert client.cancelled is token  # bound once, by the composition root
    assert seen["set"] is True and seen["reason"] == "stopped by the tool"
    # the loop read the same object's reason when it ended the turn
    assert result.status == "interrupted" and result.error == "interrupted (stopped by the tool)"
    assert client.calls == 1


def test_a_token_is_a_read_only_view_of_its_cancellation():
    owner = Cancellation()
    token = owner.token
    assert not token() and token.reason == "interrupted"
    owner.cancel("first", 2)
    owner.cancel("second")
    assert token() and token.is_set() and token.reason == "first"
    child = token.with_reason("the delegating run was interrupted")
    assert child() and child.reason == "the delegating run was interrupted"
    owner.reset()
    assert not token() and not child() and token.reason == "interrupted"
    assert not hasattr(token, "cancel")


def test_a_model_client_is_held_to_its_protocol_when_the_agent_is_built(workspace):
    class NoCancel:  # complete() and totals, but no bind_cancel()
        def __init__(self) -> None:
            self.totals = UsageTotals()

        def complete(self, messages: list, tools: Any = None, **_: Any) -> Any:
            raise AssertionError("never called")

    assert isinstance(DeterministicClient([]), ModelClientProtocol)
    assert not isinstance(NoCancel(), ModelClientProtocol)
    with pytest.raises(TypeError, match="bind_cancel"):
        Agent(model_client=NoCancel(), cwd=workspace, env=ENV, session=False)


def test_nothing_probes_a_client_for_bind_cancel():
    """Declared on the protocol and called; no getattr/hasattr looks for it."""
    import ast

    src = REPO / "src" / "baseagent"
    probes = []
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("getattr", "hasattr") and len(node.args) > 1 \
                    and isinstance(node.args[1], ast.Constant) \
                    and node.args[1].value in ("bind_cancel", "cancel_reason"):
                probes.append(f"{path.relative_to(src)}:{node.lineno}")
    assert probes == []
    assert "bind_cancel" in ModelClientProtocol.__dict__


def test_close_is_declared_on_the_client_protocol_and_never_probed():
    """Issue 43, item 5: the engine closes a model client through its protocol's `close`,
    never by looking for one (core/delegation/delegate.py once did, with getattr)."""
    import ast

    assert "close" in ModelClientProtocol.__dict__
    src = REPO / "src" / "baseagent" / "core"
    probes = [f"{path.name}:{node.lineno}" for path in sorted(src.rglob("*.py"))
              for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr") and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant) and node.args[1].value == "close"]
    assert probes == []
