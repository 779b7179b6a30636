"""view_image (Codex's tool): a local image attached to the conversation as an image part the
model sees on its next call. Which runs offer it (a model that sees images, by litellm's
map; anyone who names it), the refusal for a model without vision, the checks on the file
(its bytes, its size), read_file pointing to it, a step that also pauses for the caller's
tools, and the request after the call on both wires (OpenAI and Anthropic) end to end."""
from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from baseagent import Agent
from baseagent.testing.deterministic import DeterministicClient
from baseagent.tools import view_image
from baseagent.tools.context import ToolContext
from baseagent.tools.tool import ToolError
from baseagent.tools.toolsets import builtin_names
from helpers import run_agent

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode("ascii")
TIMEOUT = 120


def view(path: str = "shot.png", call_id: str = "call_v") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "view_image", "arguments": {"path": path}}]}


def agent_for(workspace: Path, steps: list[Any], **kw: Any) -> tuple[Agent, DeterministicClient]:
    model = DeterministicClient(steps)
    kw.setdefault("session", False)
    kw.setdefault("verify", False)
    return Agent(model_client=model, cwd=workspace, env={"PATH": os.environ["PATH"]}, **kw), model


def tool_names(model: DeterministicClient) -> list[str]:
    return [t["function"]["name"] for t in model.tools_seen[0] or []]


# -- pure parts -----------------------------------------------------------------------------

@pytest.mark.parametrize("data, mime", [
    (PNG, "image/png"),
    (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
    (b"GIF89a\x01\x00", "image/gif"),
    (b"GIF87a\x01\x00", "image/gif"),
    (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
    (b"RIFF\x24\x00\x00\x00WAVEfmt ", None),   # a RIFF that is no image
    (b"<svg xmlns='http://www.w3.org/2000/svg'/>", None),
    (b"\x89PNG but cut", None),
    (b"", None),
])
def test_the_type_is_read_from_the_bytes(data, mime):
    assert view_image.image_type(data) == mime


def test_default_toolsets_add_optional_tools_only_when_asked():
    assert "view_image" not in builtin_names(None)
    assert builtin_names(None, optional=("view_image",))[-1] == "view_image"
    assert builtin_names(None, ["view_image"], optional=("view_image",))[-1] == "update_plan"
    assert builtin_names(["read", "view_image"]) == \
        ["read_file", "grep_files", "list_dir", "view_image"]


@pytest.mark.parametrize("name, problem", [
    ("fake.png", r"is not a png, jpeg, gif or webp image \(by its content\)"),
    ("big.png", "over the"),
    ("missing.png", "file not found"),
    ("dir", "is a directory"),
])
def test_what_is_refused_and_why(tmp_path, name, problem):
    (tmp_path / "fake.png").write_text("not an image, whatever the name says\n")
    (tmp_path / "big.png").write_bytes(PNG + b"\0" * view_image.MAX_IMAGE_BYTES)
    (tmp_path / "dir").mkdir()
    with pytest.raises(ToolError, match=problem):
        view_image.read_image(ToolContext(cwd=tmp_path), name)


def test_a_relative_path_reads_against_the_workspace_and_shows_as_given(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "a.gif").write_bytes(b"GIF89a" + b"\0" * 20)
    shown, mime, data = view_image.read_image(ToolContext(cwd=tmp_path), "img/a.gif")
    assert (shown, mime, len(data)) == ("img/a.gif", "image/gif", 26)


# -- the library, in-process ------------------------------------------------------------------

def test_the_image_reaches_the_next_call_after_the_tool_message(workspace):
    (workspace / "shot.png").write_bytes(PNG)
    agent, model = agent_for(workspace, [view(), {"content": "a one-pixel image"}],
                             enabled_toolsets=["read", "view_image"], model="openai/scripted")
    result = agent.run("what is in shot.png?")
    assert result.final_message == "a one-pixel image"
    assert "view_image" in tool_names(model)
    *_, assistant, tool, image = model.requests[1]
    assert assistant["tool_calls"][0]["function"]["name"] == "view_image"
    assert tool == {"role": "tool", "tool_call_id": "call_v", "content":
                    f"Attached shot.png (image/png, {len(PNG)} bytes): you see it in the "
                    "next message."}
    assert image == {"role": "user", "content": [
        {"type": "text", "text": "view_image shot.png:"},
        {"type": "image_url", "image_url": {"url": PNG_URL}}]}
    item = result.items[0]
    assert (item.type, item.tool, item.status) == ("mcp_tool_call", "view_image", "completed")


def test_a_python_tool_may_attach_too(workspace):
    """ToolResult.attachments is the contract's, not view_image's: a caller's tool uses it."""
    from baseagent import ToolResult

    def render_chart() -> ToolResult:
        """Render the chart."""
        return ToolResult(output="rendered", attachments=[view_image.image_url_part(
            "image/png", PNG)])

    agent, model = agent_for(workspace, [{"tool_calls": [{"name": "render_chart",
                                                          "arguments": {}}]},
                                         {"content": "a chart"}],
                             tools=[render_chart], model="openai/scripted")
    agent.run("chart?")
    assert model.requests[1][-2]["content"] == "rendered"
    assert model.requests[1][-1] == {"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": PNG_URL}}]}


def test_a_failed_view_attaches_nothing(workspace):
    (workspace / "notes.png").write_text("text in disguise\n")
    agent, model = agent_for(workspace, [view("notes.png"), {"content": "not an image"}],
                             enabled_toolsets=["view_image"], model="openai/scripted")
    agent.run("look")
    last = model.requests[1][-1]
    assert last["role"] == "tool" and last["content"].startswith("Error: ")
    assert "is not a png, jpeg, gif or webp image" in last["content"]


@pytest.mark.parametrize("model_name, offered", [
    ("openai/gpt-4.1", True),                 # litellm's map: supports_vision
    ("anthropic/claude-sonnet-4-5", True),
    ("openai/gpt-3.5-turbo", False),          # in the map, no vision
    ("openai/my-local-model", False),         # unknown: not offered unless named
])
def test_offered_by_default_to_models_that_see_images(workspace, model_name, offered):
    agent, model = agent_for(workspace, [{"content": "ok"}], model=model_name)
    agent.run("hi")
    names = tool_names(model)
    assert ("view_image" in names) is offered
    assert names[:7] == ["shell", "read_file", "write_file", "apply_patch", "grep_files",
                         "list_dir", "update_plan"]
    # the system prompt is the same either way: view_image is not among the tools it names
    baseline, base_model = agent_for(workspace, [{"content": "ok"}], model="openai/unknown-x")
    baseline.run("hi")
    assert model.requests[0][0]["content"] == base_model.requests[0][0]["content"]


def test_the_compact_profile_keeps_its_three_tools(workspace):
    agent, model = agent_for(workspace, [{"content": "ok"}], model="openai/gpt-4.1",
                             prompt_profile="compact")
    agent.run("hi")
    assert tool_names(model) == ["shell", "read_file", "write_file"]


def test_a_model_without_vision_is_refused_clearly(workspace):
    (workspace / "shot.png").write_bytes(PNG)
    agent, model = agent_for(workspace, [view(), {"content": "I cannot see it"}],
                             model="openai/gpt-3.5-turbo", enabled_toolsets=["view_image"])
    result = agent.run("what is in shot.png?")
    assert result.status == "completed"
    last = model.requests[1][-1]
    assert last["role"] == "tool"
    assert last["content"].startswith("Error: cannot show shot.png: the model of this run "
                                      "does not take images")
    assert not any(isinstance(m.get("content"), list) for m in model.requests[1])
    assert result.items[0].status == "failed"


def test_read_file_on_an_image_points_to_view_image(workspace):
    (workspace / "shot.png").write_bytes(PNG)
    agent, model = agent_for(workspace, [
        {"tool_calls": [{"id": "r", "name": "read_file", "arguments": {"file_path": "shot.png"}}]},
        {"content": "ok"}], model="openai/scripted")
    agent.run("read shot.png")
    message = model.requests[1][-1]["content"]
    assert message.startswith(f"Error: {workspace / 'shot.png'} is an image (image/png, "
                              f"{len(PNG)} bytes); read_file only shows text. Use view_image")


def test_a_step_that_pauses_attaches_after_the_callers_outputs(workspace, tmp_path):
    """The caller's outputs are tool messages of the same step: the image waits for them,
    in this process and when the turn continues from the session record."""
    from baseagent.records.replay import load_session

    weather = {"name": "get_weather", "description": "Weather.",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
    (workspace / "shot.png").write_bytes(PNG)
    step = {"tool_calls": [view()["tool_calls"][0],
                           {"id": "call_w", "name": "get_weather", "arguments": {"city": "x"}}]}
    sessions = tmp_path / "sessions"
    agent, model = agent_for(workspace, [step, {"content": "done"}], session=True,
                             session_dir=sessions, external_tools=[weather],
                             enabled_toolsets=["view_image"], model="openai/scripted")
    paused = agent.run("look and check the weather")
    assert paused.status == "requires_action"
    record = load_session(next(sessions.glob("*.jsonl")))
    assert record.paused is not None
    assert record.paused.attachment["content"][1]["image_url"]["url"] == PNG_URL
    assert record.history[-1]["role"] == "tool"  # the image is not in the history yet
    agent.close()  # its record is free for the next process

    # continued by another Agent, from the record (what `--resume ID --tool-outputs` does)
    resumed_model = DeterministicClient([{"content": "sunny, and a one-pixel image"}])
    resumed = Agent(model_client=resumed_model, cwd=workspace, session_dir=sessions,
                    thread_id=agent.thread_id, verify=False, external_tools=[weather],
                    enabled_toolsets=["view_image"], model="openai/scripted",
                    env={"PATH": os.environ["PATH"]})
    done = resumed.submit_tool_outputs({"call_w": "sunny"})
    assert done.final_message == "sunny, and a one-pixel image"
    roles = [(m["role"], m.get("tool_call_id")) for m in resumed_model.requests[0][-4:]]
    assert roles == [("assistant", None), ("tool", "call_v"), ("tool", "call_w"),
                     ("user", None)]
    assert resumed_model.requests[0][-1]["content"][1]["image_url"]["url"] == PNG_URL
    assert model.calls == 1


# -- end to end: the CLI against the scripted server, on both wires ---------------------------

def image_in(request: dict[str, Any], wire: str) -> bool:
    """Whether the request carries the PNG as an image part, in the wire's own shape."""
    messages = request["messages"]
    if wire == "openai":
        user = messages[-1]
        return messages[-2]["role"] == "tool" and user["role"] == "user" and any(
            p.get("type") == "image_url" and p["image_url"]["url"] == PNG_URL
            for p in user["content"])
    blocks = messages[-1]["content"]  # one user turn: the tool_result, then the image
    return messages[-1]["role"] == "user" and blocks[0]["type"] == "tool_result" and any(
        b.get("type") == "image" and b["source"] == {
            "type": "base64", "media_type": "image/png",
            "data": base64.b64encode(PNG).decode("ascii")} for b in blocks[1:])


@pytest.mark.parametrize("model, wire, args", [
    ("openai/scripted", "openai", ["--tools", "read,view_image"]),   # unknown: named
    ("anthropic/claude-sonnet-4-5", "anthropic", []),                # sees images: default
])
def test_cli_sends_the_image_on_the_next_request(scripted_server, workspace, home, model,
                                                 wire, args, transport_env):
    (workspace / "shot.png").write_bytes(PNG)
    server = scripted_server([view(), {"content": "a one-pixel image"}])
    api_base = server.url if wire == "anthropic" else server.api_base
    run = run_agent(["--json", "--no-verify", *args, "-i", "what is in shot.png?"],
                    cwd=workspace, home=home, api_base=api_base, model=model,
                    env_extra={"ANTHROPIC_API_KEY": "sk-ant-test", **transport_env},
                    timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    first, second = server.requests
    assert not server.refusals  # the Anthropic API's own request rules hold
    names = [t["function"]["name"] if wire == "openai" else t["name"] for t in first["tools"]]
    assert "view_image" in names
    assert image_in(second, wire), json.dumps(second["messages"][-2:])[:2000]
    item = run.completed_items("mcp_tool_call")[0]
    assert (item["tool"], item["status"]) == ("view_image", "completed")
    assert run.events[-1]["type"] == "turn.completed"
